package server

import (
	"bytes"
	"crypto/ed25519"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trit-iot/trit/fleet"
	"github.com/trit-iot/trit/inference/bundle"
	"github.com/trit-iot/trit/inference/bundle/bundletest"
	"github.com/trit-iot/trit/store"
	"github.com/trit-iot/trit/store/postgres"
	"github.com/trit-iot/trit/store/postgres/pgtest"
	"github.com/trit-iot/trit/wire"
)

// The package's PostgreSQL server starts with the first test that needs
// it; TestMain stops it.
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// The tests of the API drive a service over a store on a test clock, its
// commands published nowhere: what the server adds to the service is
// tested here, the service itself in package fleet.

var t0 = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

// nowhere is a Publisher that drops everything.
type nowhere struct{}

func (nowhere) Publish(string, byte, bool, []byte) error { return nil }

type fixture struct {
	svc     *fleet.Service
	clk     *clock
	db      fleet.Store
	release ed25519.PrivateKey
}

func newFixture(t testing.TB, tweak ...func(*fleet.Options)) *fixture {
	t.Helper()
	return newFixtureOn(t, openStore(t), tweak...)
}

// newFixtureOn is newFixture on the given store.
func newFixtureOn(t testing.TB, db fleet.Store, tweak ...func(*fleet.Options)) *fixture {
	t.Helper()
	f := &fixture{clk: &clock{t0}, db: db, release: testKey(1)}
	ks, err := bundle.NewKeySet(f.release.Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	opt := &fleet.Options{Now: f.clk.now, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for _, tw := range tweak {
		tw(opt)
	}
	f.svc, err = fleet.NewService(db, fleet.NewRegistry(db, ks, 0, f.clk.now), "f", nowhere{}, testKey(2), opt)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) addBundle(t *testing.T, release uint64) string {
	t.Helper()
	info, err := f.svc.Registry().Add(signedBundle(t, "vib", release, f.release))
	if err != nil {
		t.Fatal(err)
	}
	return info.Hash
}

func (f *fixture) online(t *testing.T, id string, labels map[string]string) {
	t.Helper()
	f.state(t, &wire.State{Device: id, Session: 1, Online: true, Labels: labels, Health: "ok"})
}

// running reports device id online, running bundle hash of model vib.
func (f *fixture) running(t *testing.T, id, hash string) {
	t.Helper()
	f.state(t, &wire.State{Device: id, Session: 1, Online: true, Health: "ok", Model: &wire.ModelRef{ID: "vib", Release: 1, Bundle: hash, Install: "committed"}})
}

// state delivers a device state and handles it.
func (f *fixture) state(t *testing.T, st *wire.State) {
	t.Helper()
	raw, err := st.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	f.svc.Deliver(f.svc.Topics().State(st.Device), raw)
	f.svc.Drain()
}

func testKey(seed byte) ed25519.PrivateKey {
	s := make([]byte, ed25519.SeedSize)
	for i := range s {
		s[i] = seed + byte(i)
	}
	return ed25519.NewKeyFromSeed(s)
}

// signedBundle builds a small signed bundle of model id at release.
func signedBundle(t testing.TB, id string, release uint64, priv ed25519.PrivateKey) []byte {
	t.Helper()
	spec, err := bundletest.Spec(release, 4, 128, []string{"normal", "fault"})
	if err != nil {
		t.Fatal(err)
	}
	data, err := bundletest.Signed(spec, id, release, time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), priv)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func openStore(t testing.TB) *store.DB {
	t.Helper()
	db, err := store.Open(filepath.Join(t.TempDir(), "fleet.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func openPostgres(t testing.TB) fleet.Store {
	t.Helper()
	db, err := postgres.Open(pgtest.Database(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// lockedBuffer is a bytes.Buffer safe for a logger and a test at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// writeRings writes a dataset of n rows of two noisy rings (CSV, label
// last) for the remote-training tests.
func writeRings(t *testing.T, dir, name string, n int) {
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
