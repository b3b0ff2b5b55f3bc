// Package fleettest holds what the tests of the fleet's packages (the
// service, its server, its console) share: keys, signed bundles, a store,
// a log buffer, a dataset. It imports none of them, so the service's own
// tests can use it too.
package fleettest

import (
	"bytes"
	"crypto/ed25519"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trit-iot/trit/inference"
	"github.com/trit-iot/trit/inference/bundle"
	"github.com/trit-iot/trit/store"
)

// Key returns the Ed25519 key of a seed made from seed: the same key for
// the same seed, in every test.
func Key(seed byte) ed25519.PrivateKey {
	s := make([]byte, ed25519.SeedSize)
	for i := range s {
		s[i] = seed + byte(i)
	}
	return ed25519.NewKeyFromSeed(s)
}

// SignedBundle builds a small signed bundle of model id at release, for
// agents 0.1.0 and up.
func SignedBundle(t testing.TB, id string, release uint64, priv ed25519.PrivateKey) []byte {
	t.Helper()
	return SignedBundleFor(t, id, release, priv, bundle.Compat{MinAgentVersion: "0.1.0"})
}

// SignedBundleFor is SignedBundle with the given compatibility section.
func SignedBundleFor(t testing.TB, id string, release uint64, priv ed25519.PrivateKey, compat bundle.Compat) []byte {
	t.Helper()
	return signedBundle(t, id, release, priv, compat, false)
}

// CalibratedBundle is SignedBundle of a calibrated model (bundle format
// 5, agents 0.5.0 and up): its devices report confidence and unknown
// windows.
func CalibratedBundle(t testing.TB, id string, release uint64, priv ed25519.PrivateKey) []byte {
	t.Helper()
	return signedBundle(t, id, release, priv, bundle.Compat{MinAgentVersion: "0.5.0"}, true)
}

func signedBundle(t testing.TB, id string, release uint64, priv ed25519.PrivateKey, compat bundle.Compat, calibrated bool) []byte {
	t.Helper()
	const d, p = 4, 128
	lo, hi := make([]float32, d), make([]float32, d)
	for i := range hi {
		lo[i], hi[i] = -1, 1
	}
	w := make([]int8, p)
	for j := range w {
		w[j] = int8(j%3) - 1
	}
	spec, err := inference.NewTernarySpec(inference.TransformSpec{Generator: inference.GeneratorV1, Seed: release, Sigma: 1, D: d, P: p},
		inference.Scaler{Lo: lo, Hi: hi}, []string{"normal", "fault"}, [][]int8{w}, []float32{0.5})
	if err != nil {
		t.Fatal(err)
	}
	if calibrated {
		spec.Calibration = &inference.Calibration{Confidence: []uint8{230}, MinConfidence: 128}
	}
	raw, err := bundle.Encode(&bundle.Bundle{
		Header: bundle.Header{ModelID: id, Release: release, CreatedAt: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)},
		Compat: compat,
		Spec:   spec,
	})
	if err != nil {
		t.Fatal(err)
	}
	signed, err := bundle.Sign(raw, priv)
	if err != nil {
		t.Fatal(err)
	}
	return signed
}

// OpenStore opens a new bbolt store in the test's directory, closed when
// the test ends.
func OpenStore(t testing.TB) *store.DB {
	t.Helper()
	db, err := store.Open(filepath.Join(t.TempDir(), "fleet.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// LockedBuffer is a bytes.Buffer safe for a logger and a test at once.
type LockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *LockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *LockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// WriteRings writes dir/name, a CSV dataset of n rows: two noisy rings
// (two features, the label last), for the remote-training tests.
func WriteRings(t testing.TB, dir, name string, n int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(3, 4))
	var b strings.Builder
	for i := range n {
		r := 0.3 + 0.5*float64(i%2) + 0.05*rng.NormFloat64()
		a := 2 * math.Pi * rng.Float64()
		fmt.Fprintf(&b, "%.4f,%.4f,%d\n", r*math.Cos(a), r*math.Sin(a), i%2)
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
}

// DamageFile changes one byte of a document in the closed database file at
// path: the last byte of marker (a value only that document holds, such
// as `"damage-me"`) becomes 'X', wherever the marker occurs (bbolt's
// copy-on-write leaves earlier copies of a page in free pages; changing
// those too changes nothing else). bbolt keeps no checksum of its data
// pages, so the file opens and the document no longer decodes: what one
// flipped byte on a disk does.
func DamageFile(t testing.TB, path, marker string) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for i := 0; ; {
		j := bytes.Index(raw[i:], []byte(marker))
		if j < 0 {
			break
		}
		i += j + len(marker)
		raw[i-1] = 'X'
		n++
	}
	if n == 0 {
		t.Fatalf("%s does not hold %q", path, marker)
	}
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
}

// DamagedStore opens a new bbolt store, lets fill write to it, closes it,
// damages the document of each marker (DamageFile) and opens the file
// again, closed when the test ends.
func DamagedStore(t testing.TB, fill func(db *store.DB), markers ...string) *store.DB {
	t.Helper()
	path := filepath.Join(t.TempDir(), "fleet.db")
	db, err := store.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	fill(db)
	db.Close()
	for _, m := range markers {
		DamageFile(t, path, m)
	}
	if db, err = store.Open(path, nil); err != nil {
		t.Fatalf("the damaged file does not open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
