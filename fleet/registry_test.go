package fleet

import (
	"crypto/ed25519"
	"errors"
	"testing"
	"time"

	"github.com/trit-iot/trit/fleet/fault"
	"github.com/trit-iot/trit/fleet/fleettest"
	"github.com/trit-iot/trit/inference/bundle"
)

func TestRegistry(t *testing.T) {
	release := fleettest.Key(1)
	ks, err := bundle.NewKeySet(release.Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	reg := NewRegistry(fleettest.OpenStore(t), ks, 0, func() time.Time { return t0 })

	v1 := fleettest.SignedBundle(t, "vib", 1, release)
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
	if _, err := reg.Add(fleettest.SignedBundle(t, "vib", 1, release)[:0]); !errors.Is(err, ErrBundleRejected) {
		t.Fatalf("empty bundle: %v", err)
	}
	v3 := fleettest.SignedBundle(t, "vib", 3, release)
	if _, err := reg.Add(v3); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Add(fleettest.SignedBundle(t, "vib", 2, release)); !errors.Is(err, ErrReleaseTooLow) {
		t.Fatalf("release 2 after 3: %v", err)
	}
	if _, err := reg.Add(fleettest.SignedBundle(t, "vib", 4, fleettest.Key(9))); !errors.Is(err, ErrBundleRejected) || !errors.Is(err, bundle.ErrUnknownKey) {
		t.Fatalf("bundle signed by an untrusted key: %v", err)
	}
	tampered := fleettest.SignedBundle(t, "vib", 5, release)
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
	if _, _, err := reg.Previous("vib", 1); !errors.Is(err, fault.ErrNotFound) {
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
