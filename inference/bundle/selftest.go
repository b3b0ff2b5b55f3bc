package bundle

import (
	"fmt"

	"github.com/trit-iot/trit/inference"
)

// selfTestSalt is XORed into the transform seed to seed the self-test
// input stream, so the input is not drawn from the same numbers as any
// transform block. It is "SELFTEST" in ASCII.
const selfTestSalt = 0x53454c4654455354

// SelfTestInput returns the raw input of a model's self-test. It is derived,
// not shipped: with a splitmix64 stream seeded by Transform.Seed (0 when
// there are no random features) XOR 0x53454c4654455354, each of the D =
// NumFeatures raw features i (in order) gets
//
//	u_i = (next() >> 40) / 2²⁴                       (exact in float32)
//	x_i = float32(Lo_i + float32(u_i · float32(Hi_i − Lo_i)))
//
// so x lies in the scaler's range and is the same on every architecture
// (the explicit conversions forbid FMA fusion).
func SelfTestInput(spec *inference.ModelSpec) []float32 {
	d := spec.NumFeatures()
	lo, hi := spec.Scaler.Lo[:d], spec.Scaler.Hi[:d]
	state := spec.Transform.Seed ^ selfTestSalt
	x := make([]float32, d)
	for i := range x {
		u := float32(splitmix64(&state)>>40) * (1.0 / (1 << 24))
		x[i] = float32(lo[i] + float32(u*float32(hi[i]-lo[i])))
	}
	return x
}

// splitmix64 is Steele, Lea & Flood's generator (the same one inference
// seeds its streams with): integer-only, so identical everywhere.
func splitmix64(x *uint64) uint64 {
	*x += 0x9e3779b97f4a7c15
	z := *x
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// runSelfTest computes what m gives on its self-test input: the integer
// score wᵀz of every weight vector (over the kept embedding bits, threshold
// columns counted ρ times) and the predicted class.
func runSelfTest(m *inference.Model) (SelfTestVector, error) {
	spec := m.Spec()
	out := SelfTestVector{Scores: make([]int32, len(spec.Sign))}
	class, err := m.PredictRaw(out.Scores, SelfTestInput(spec))
	if err != nil {
		return SelfTestVector{}, err
	}
	out.Class = class
	return out, nil
}

// SelfTest runs model m (built from b.Spec with inference.New) on the
// self-test input and compares its integer scores and predicted class with
// the values the bundle ships. A difference means this gateway does not
// compute what the training machine computed — a corrupted spec, or a
// platform whose arithmetic differs — and the model must not be used. It
// returns nil, a *SelfTestError for a differing value, or another error
// wrapping ErrSelfTest if the shapes differ.
func SelfTest(m *inference.Model, b *Bundle) error {
	got, err := runSelfTest(m)
	if err != nil {
		return err
	}
	want := b.SelfTest
	if len(got.Scores) != len(want.Scores) {
		return fmt.Errorf("%w: model has %d weight vectors, bundle has %d scores", ErrSelfTest, len(got.Scores), len(want.Scores))
	}
	for c := range got.Scores {
		if got.Scores[c] != want.Scores[c] {
			return &SelfTestError{Vector: c, Got: int(got.Scores[c]), Want: int(want.Scores[c])}
		}
	}
	if got.Class != want.Class {
		return &SelfTestError{Vector: -1, Got: got.Class, Want: want.Class}
	}
	return nil
}
