package training

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/trit-iot/trit/inference"
	"github.com/trit-iot/trit/training/data"
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
// at most the target unknown.
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
	if share := 0.02; cal.MinConfidence == 0 || unknown == 0 || float64(unknown) > share*float64(len(held)) {
		t.Errorf("minimum confidence %d leaves %d of %d unknown, want some, at most %.2f%%", cal.MinConfidence, unknown, len(held), 100*share)
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

// TestUnknownPastTheTrainingRange: a searched model ships the out-of-range
// term (docs/TRAINING.md), so windows like the training data stay mostly
// answered while windows with a feature moved past its training range
// are unknown — which the fingerprint's bits alone cannot see, since the
// moved feature is clipped to its range's end.
func TestUnknownPastTheTrainingRange(t *testing.T) {
	train := TwoCircles(2000, 0.5, 0.08, 1)
	res, err := Train(train, &Config{P: 256, Seed: 3, SigmaGrid: []float64{0.25, 0.5}, CGrid: []float64{1}})
	if err != nil {
		t.Fatal(err)
	}
	cal := res.Spec.Calibration
	if cal == nil || cal.Outside == 0 || cal.MaxNovelty == 0 {
		t.Fatalf("calibration %+v, want an out-of-range weight and a novelty threshold", cal)
	}
	unknown := func(ds *data.Dataset, shift float32) float64 {
		n := 0
		x := make([]float32, ds.D)
		for i := range ds.N {
			copy(x, ds.Row(i))
			x[0] += shift
			o, err := res.Model.PredictOutcome(nil, nil, x, res.Model.Thresholds())
			if err != nil {
				t.Fatal(err)
			}
			if o.Unknown {
				n++
			}
		}
		return 100 * float64(n) / float64(ds.N)
	}
	test := TwoCircles(2000, 0.5, 0.08, 2)
	same, moved := unknown(test, 0), unknown(test, 3)
	t.Logf("out-of-range weight %d, maximum novelty %d: unknown %.1f%% of like windows, %.1f%% with feature 0 moved by 3", cal.Outside, cal.MaxNovelty, same, moved)
	if same > 5 || moved < 95 {
		t.Errorf("unknown %.1f%% of windows like the training data (want ≤ 5%%), %.1f%% past the range (want ≥ 95%%)", same, moved)
	}
	// Without the term the same model misses most of the moved windows:
	// the clipped feature looks like the edge of the training data.
	spec := *res.Spec
	plain := *cal
	plain.Outside = 0
	spec.Calibration = &plain
	m, err := inference.New(&spec)
	if err != nil {
		t.Fatal(err)
	}
	res.Model = m
	if got := unknown(test, 3); got >= moved {
		t.Errorf("without the out-of-range term %.1f%% unknown, with it %.1f%%: the term adds nothing here", got, moved)
	}
}

// TestOutsideWeight: the fingerprint novelty's spread (99th percentile
// less median), bounded; 160 without a fingerprint.
func TestOutsideWeight(t *testing.T) {
	nov := make([]uint32, 1000)
	for i := range nov {
		nov[i] = uint32(1000 + i)
	}
	if got := outsideWeight(nov); got != 1990-1500 {
		t.Errorf("weight %d, want %d", got, 1990-1500)
	}
	if got := outsideWeight(nil); got != 160 {
		t.Errorf("no fingerprint: weight %d, want 160", got)
	}
	if got := outsideWeight([]uint32{5, 5, 5}); got != 16 {
		t.Errorf("flat novelty: weight %d, want the floor 16", got)
	}
	if got := outsideWeight([]uint32{0, 0, 100000}); got != inference.MaxOutsideWeight {
		t.Errorf("weight %d, want the cap %d", got, inference.MaxOutsideWeight)
	}
}

// TestHeldOutECE: cross-fitted on alternate halves, the calibration of
// rows drawn with a known accuracy curve is close to calibrated, and far
// better than a softmax that claims 99% everywhere; too few rows give no
// figure.
func TestHeldOutECE(t *testing.T) {
	acc := func(m float32) float64 { return 0.5 + 0.5*(1-math.Exp(-2*float64(m))) }
	held := heldFrom(6, 4000, acc)
	for i := range held {
		held[i].soft = 0.99
	}
	shipped, raw, how, ok := statedECE([][]heldOut{held}, sampleFolds, 0.02)
	if !ok || shipped > 3 || raw < 15 || how != "each half's rows under the other half's fit" {
		t.Errorf("held-out ECE %.2f%% (want ≤ 3), softmax %.2f%% (want ≥ 15), ok %v, %s", shipped, raw, ok, how)
	}
	if _, _, _, ok := statedECE([][]heldOut{held[:2*minCalibrationRows-2]}, sampleFolds, 0.02); ok {
		t.Error("a figure from halves too small to calibrate")
	}
}

// TestCalibrationStatedForward: a recording whose later periods are less
// predictable than its earlier ones states the error of its calibration as
// measured forward — the earlier folds' calibration on the latest fold —
// which is large here, where halves of the same rows would have hidden
// it. Grouped folds measure each fold under the others'.
func TestCalibrationStatedForward(t *testing.T) {
	sure := func(float32) float64 { return 0.97 }
	unsure := func(float32) float64 { return 0.70 }
	held := [][]heldOut{heldFrom(7, 1500, sure), heldFrom(8, 1500, sure), heldFrom(9, 1500, unsure)}
	shipped, _, how, ok := statedECE(held, forwardFolds, 0.02)
	if !ok || shipped < 20 || how != "the latest fold under a calibration of the earlier ones" {
		t.Errorf("forward stated ECE %.2f%% (%s), want ≥ 20: the earlier folds' 97%% on a 70%% period", shipped, how)
	}
	halves, _, _, _ := statedECE([][]heldOut{slices.Concat(held...)}, sampleFolds, 0.02)
	if halves > 5 {
		t.Errorf("halves of the same rows: %.2f%%, expected small (that is what hides drift)", halves)
	}
	if _, _, how, ok := statedECE(held, groupFolds, 0.02); !ok || how != "each fold's groups under a calibration of the other folds'" {
		t.Errorf("grouped: %s %v", how, ok)
	}
}

// TestCalibrationKeepsLowestBin: held-out rows all right at every margin
// pool into one bin, yet the lowest margins keep a bin of their own
// (Laplace's rule on their fewer rows, and at least a byte below), so that
// the minimum confidence can still make them unknown.
func TestCalibrationKeepsLowestBin(t *testing.T) {
	cal := fitCalibration(heldFrom(11, 2000, func(float32) float64 { return 1 }), 0.02)
	if len(cal.Confidence) != 2 || cal.Confidence[0] >= cal.Confidence[1] || cal.MinConfidence != cal.Confidence[1] {
		t.Fatalf("calibration %+v: want two bins, the lowest below, and the minimum confidence at the second", cal)
	}
	unknown := 0
	for _, h := range heldFrom(11, 2000, func(float32) float64 { return 1 }) {
		if cal.Confidence[cal.Bin(h.margin)] < cal.MinConfidence {
			unknown++
		}
	}
	if unknown == 0 || unknown > 40 {
		t.Errorf("%d of 2,000 held-out rows unknown, want about 2%%", unknown)
	}
}

// TestCalibrationNeverCertain: bins whose held-out rows were all right or
// all wrong still claim less than certainty (Laplace's rule).
func TestCalibrationNeverCertain(t *testing.T) {
	held := heldFrom(10, 2000, func(m float32) float64 {
		if m > 1 {
			return 1
		}
		return 0.6
	})
	cal := fitCalibration(held, 0.02)
	if top := cal.Confidence[len(cal.Confidence)-1]; top == 255 || top < 250 {
		t.Errorf("top bin %d/255: want below 255, near it", top)
	}
}
