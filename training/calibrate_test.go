package training

import (
	"math"
	"math/rand/v2"
	"testing"
)

// heldFrom draws n held-out predictions whose chance of being right rises
// with the margin as acc(m).
func heldFrom(seed uint64, n int, acc func(float32) float64) []heldOut {
	rnd := rand.New(rand.NewPCG(seed, 1))
	h := make([]heldOut, n)
	for i := range h {
		m := float32(rnd.ExpFloat64())
		h[i] = heldOut{margin: m, correct: rnd.Float64() < acc(m)}
	}
	return h
}

// TestFitCalibration: the bins are valid, their confidences follow the
// accuracy the rows were drawn with, and the confidence threshold leaves
// at most half the target unknown.
func TestFitCalibration(t *testing.T) {
	acc := func(m float32) float64 { return 0.5 + 0.5*(1-math.Exp(-2*float64(m))) }
	held := heldFrom(3, 20000, acc)
	cal := fitCalibration(held, 0.02)
	if cal == nil {
		t.Fatal("no calibration")
	}
	if err := cal.Validate(false); err != nil {
		t.Fatal(err)
	}
	if len(cal.Confidence) < 6 {
		t.Errorf("%d bins: a smooth accuracy curve should keep most of the 12", len(cal.Confidence))
	}
	// Each bin's confidence is its rows' accuracy, within sampling error.
	n, right := make([]float64, len(cal.Confidence)), make([]float64, len(cal.Confidence))
	unknown := 0
	for _, h := range held {
		b := cal.Bin(h.margin)
		n[b]++
		if h.correct {
			right[b]++
		}
		if cal.Confidence[b] < cal.MinConfidence {
			unknown++
		}
	}
	for b := range n {
		got, want := float64(cal.Confidence[b])/255, right[b]/n[b]
		if math.Abs(got-want) > 0.03 {
			t.Errorf("bin %d: confidence %.3f, its rows' accuracy %.3f", b, got, want)
		}
	}
	if cal.MinConfidence == 0 || unknown == 0 || float64(unknown) > 0.01*float64(len(held)) {
		t.Errorf("minimum confidence %d leaves %d of %d unknown, want some, at most 1%%", cal.MinConfidence, unknown, len(held))
	}
}

// TestFitCalibrationIsotonic: accuracy that falls with the margin in the
// middle is pooled into non-decreasing confidences; too few rows give no
// calibration.
func TestFitCalibrationIsotonic(t *testing.T) {
	acc := func(m float32) float64 {
		if m > 0.5 && m < 1 {
			return 0.6
		}
		return 0.5 + 0.4*math.Min(1, float64(m))
	}
	cal := fitCalibration(heldFrom(4, 5000, acc), 0.02)
	if cal == nil {
		t.Fatal("no calibration")
	}
	if err := cal.Validate(false); err != nil {
		t.Fatalf("not isotonic: %v (%+v)", err, cal)
	}
	if fitCalibration(heldFrom(5, minCalibrationRows-1, acc), 0.02) != nil {
		t.Error("calibrated on too few rows")
	}
	// All margins equal: one bin.
	same := make([]heldOut, 500)
	for i := range same {
		same[i] = heldOut{margin: 1, correct: i%4 != 0}
	}
	cal = fitCalibration(same, 0.02)
	if cal == nil || len(cal.Confidence) != 1 || cal.Confidence[0] != 191 || cal.MinConfidence != 0 {
		t.Errorf("equal margins: %+v, want one bin of 191 (75%%), no threshold", cal)
	}
}

// TestSoftmaxAndECE pins the raw confidence and the ECE on small cases.
func TestSoftmaxAndECE(t *testing.T) {
	if got := softmaxTop([]float32{-1, 1}, 1); math.Abs(got-1/(1+math.Exp(-2))) > 1e-12 {
		t.Errorf("softmax %g", got)
	}
	// Half at 0.9 (all right), half at 0.5 (half right): |1 − 0.9|·½ + 0.
	conf := []float64{0.9, 0.9, 0.5, 0.5}
	if got := ece(conf, []bool{true, true, true, false}); math.Abs(got-5) > 1e-9 {
		t.Errorf("ECE %g, want 5", got)
	}
}
