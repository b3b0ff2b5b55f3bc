package bundle

import (
	"errors"
	"slices"
	"testing"

	"github.com/trit-iot/trit/inference"
)

func TestSelfTestInput(t *testing.T) {
	spec := randomSpec(31, 50, 128, 3, 0.3, false)
	x := SelfTestInput(spec)
	if !slices.Equal(x, SelfTestInput(spec)) {
		t.Fatal("self-test input is not deterministic")
	}
	distinct := map[float32]bool{}
	for i, v := range x {
		if v < spec.Scaler.Lo[i] || v > spec.Scaler.Hi[i] {
			t.Fatalf("feature %d: %g outside [%g, %g]", i, v, spec.Scaler.Lo[i], spec.Scaler.Hi[i])
		}
		distinct[v] = true
	}
	if len(distinct) < 40 {
		t.Fatalf("only %d distinct values among 50 features", len(distinct))
	}
	other := *spec
	other.Transform.Seed++
	if slices.Equal(x, SelfTestInput(&other)) {
		t.Fatal("the seed does not change the self-test input")
	}
}

// TestSelfTestDetectsCorruption flips weight bits in the decoded spec (which
// the model shares) and expects the self-test to notice.
func TestSelfTestDetectsCorruption(t *testing.T) {
	pub, priv := testKey(t)
	spec := randomSpec(33, 20, 256, 4, 0.3, false)
	data := signed(t, testBundle(spec), priv)
	for _, plane := range []string{"sign", "nonzero"} {
		b, err := Decode(data, trusting(t, pub))
		if err != nil {
			t.Fatal(err)
		}
		m, err := inference.New(b.Spec)
		if err != nil {
			t.Fatal(err)
		}
		if err := SelfTest(m, b); err != nil {
			t.Fatalf("intact model: %v", err)
		}
		// Flip a bit where the weight is non-zero, so the score changes by 2
		// (sign) or 1 (non-zero).
		nz := m.Spec().NonZero[2]
		bit := 0
		for nz[bit/64]>>(bit%64)&1 == 0 {
			bit++
		}
		if plane == "sign" {
			m.Spec().Sign[2][bit/64] ^= 1 << (bit % 64)
		} else {
			nz[bit/64] ^= 1 << (bit % 64)
		}
		err = SelfTest(m, b)
		var se *SelfTestError
		if !errors.As(err, &se) || !errors.Is(err, ErrSelfTest) || se.Vector != 2 {
			t.Fatalf("%s bit flipped: SelfTest = %v, want a *SelfTestError for vector 2", plane, err)
		}
	}
}

func TestSelfTestDetectsWrongExpectation(t *testing.T) {
	pub, priv := testKey(t)
	b, err := Decode(signed(t, testBundle(randomSpec(35, 20, 256, 2, 0.3, false)), priv), trusting(t, pub))
	if err != nil {
		t.Fatal(err)
	}
	m, err := inference.New(b.Spec)
	if err != nil {
		t.Fatal(err)
	}
	b.SelfTest.Class = 1 - b.SelfTest.Class
	var se *SelfTestError
	if err := SelfTest(m, b); !errors.As(err, &se) || se.Vector != -1 {
		t.Fatalf("wrong class: %v", err)
	}
	b.SelfTest.Scores = append(b.SelfTest.Scores, 0)
	if err := SelfTest(m, b); !errors.Is(err, ErrSelfTest) {
		t.Fatalf("extra score: %v", err)
	}
}
