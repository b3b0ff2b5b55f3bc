package bundletest

import (
	"crypto/ed25519"
	"testing"
	"time"

	"github.com/trit-iot/trit/inference"
	"github.com/trit-iot/trit/inference/bundle"
)

func TestBreakSelfTest(t *testing.T) {
	seed := make([]byte, ed25519.SeedSize)
	priv := ed25519.NewKeyFromSeed(seed)
	ks, err := bundle.NewKeySet(priv.Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	for _, classes := range [][]string{{"ok", "fault"}, {"a", "b", "c"}} {
		for _, spec := range specs(t, classes) {
			breakSelfTest(t, spec, priv, ks)
		}
	}
}

// specs returns a model with random features and one with threshold bits
// only.
func specs(t *testing.T, classes []string) []*inference.ModelSpec {
	t.Helper()
	spec, err := Spec(3, 6, 256, classes)
	if err != nil {
		t.Fatal(err)
	}
	th, err := ThresholdSpec(4, 5, classes)
	if err != nil {
		t.Fatal(err)
	}
	if th.Transform.P != 0 || th.NumThresholds() != 20 {
		t.Fatalf("threshold spec: p = %d, %d thresholds", th.Transform.P, th.NumThresholds())
	}
	return []*inference.ModelSpec{spec, th}
}

func breakSelfTest(t *testing.T, spec *inference.ModelSpec, priv ed25519.PrivateKey, ks *bundle.KeySet) {
	t.Helper()
	good, err := Signed(spec, "m", 1, time.Unix(1700000000, 0), priv)
	if err != nil {
		t.Fatal(err)
	}
	bad, err := BreakSelfTest(good, priv, ks)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"good": good, "broken": bad} {
		b, err := bundle.Decode(data, &bundle.DecodeOptions{Trusted: ks})
		if err != nil {
			t.Fatalf("%s bundle does not decode: %v", name, err)
		}
		m, err := inference.New(b.Spec)
		if err != nil {
			t.Fatal(err)
		}
		err = bundle.SelfTest(m, b)
		if (err == nil) != (name == "good") {
			t.Fatalf("%s bundle: self-test says %v", name, err)
		}
	}
}
