package fleet

import (
	"crypto/ed25519"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/trit-iot/trit/inference"
	"github.com/trit-iot/trit/inference/bundle"
	"github.com/trit-iot/trit/store"
)

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
	return signedBundleFor(t, id, release, priv, bundle.Compat{MinAgentVersion: "0.1.0"})
}

// signedBundleFor is signedBundle with the given compatibility section.
func signedBundleFor(t testing.TB, id string, release uint64, priv ed25519.PrivateKey, compat bundle.Compat) []byte {
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

func openStore(t testing.TB) *store.DB {
	t.Helper()
	db, err := store.Open(filepath.Join(t.TempDir(), "fleet.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestRegistry(t *testing.T) {
	release := testKey(1)
	ks, err := bundle.NewKeySet(release.Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	reg := NewRegistry(openStore(t), ks, 0, func() time.Time { return t0 })

	v1 := signedBundle(t, "vib", 1, release)
	info, err := reg.Add(v1)
	if err != nil {
		t.Fatal(err)
	}
	if info.ModelID != "vib" || info.Release != 1 || info.Size != len(v1) || len(info.Hash) != 64 {
		t.Fatalf("record %+v", info)
	}
	again, err := reg.Add(v1)
	if err != nil || again.Hash != info.Hash {
		t.Fatalf("adding the same bytes again: %v, %+v", err, again)
	}
	if _, err := reg.Add(signedBundle(t, "vib", 1, release)[:0]); !errors.Is(err, ErrBundleRejected) {
		t.Fatalf("empty bundle: %v", err)
	}
	v3 := signedBundle(t, "vib", 3, release)
	if _, err := reg.Add(v3); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Add(signedBundle(t, "vib", 2, release)); !errors.Is(err, ErrReleaseTooLow) {
		t.Fatalf("release 2 after 3: %v", err)
	}
	if _, err := reg.Add(signedBundle(t, "vib", 4, testKey(9))); !errors.Is(err, ErrBundleRejected) || !errors.Is(err, bundle.ErrUnknownKey) {
		t.Fatalf("bundle signed by an untrusted key: %v", err)
	}
	tampered := signedBundle(t, "vib", 5, release)
	tampered[20] ^= 1
	if _, err := reg.Add(tampered); !errors.Is(err, bundle.ErrSignature) {
		t.Fatalf("tampered bundle: %v", err)
	}

	got, data, err := reg.Bundle(info.Hash)
	if err != nil || got.Release != 1 || string(data) != string(v1) {
		t.Fatalf("Bundle: %v %+v", err, got)
	}
	prev, rel, err := reg.Previous("vib", 3)
	if err != nil || rel != 1 || prev != info.Hash {
		t.Fatalf("Previous(vib, 3) = %s %d %v", prev, rel, err)
	}
	if _, _, err := reg.Previous("vib", 1); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Previous below the first release: %v", err)
	}
	all, err := reg.Bundles()
	if err != nil || len(all) != 2 || all[0].Release != 3 {
		t.Fatalf("Bundles: %v %+v", err, all)
	}
	if err := reg.MarkPublished(info.Hash); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := reg.Bundle(info.Hash); !got.Published {
		t.Fatal("MarkPublished not recorded")
	}
}
