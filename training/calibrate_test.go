package training

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
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
	cal := fitCalibration(held, 0.02, 2)
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
	cal := fitCalibration(heldFrom(4, 5000, acc), 0.02, 2)
	if cal == nil {
		t.Fatal("no calibration")
	}
	if err := cal.Validate(false); err != nil {
		t.Fatalf("not isotonic: %v (%+v)", err, cal)
	}
	if fitCalibration(heldFrom(5, minCalibrationRows-1, acc), 0.02, 2) != nil {
		t.Error("calibrated on too few rows")
	}
	// All margins equal: one bin.
	same := make([]heldOut, 500)
	for i := range same {
		same[i] = heldOut{margin: 1, correct: i%4 != 0}
	}
	cal = fitCalibration(same, 0.02, 2)
	if cal == nil || len(cal.Confidence) != 1 || cal.Confidence[0] != 191 || cal.MinConfidence != 0 {
		t.Errorf("equal margins: %+v, want one bin of 191 (75%%), no threshold", cal)
	}
}

// TestFitCalibrationChanceFloor: held-out rows whose low margins were
// right less often than chance (a period where the model ranked the
// classes wrongly) get chance, not their rate, in every bin but the lowest
// margins' own; with more classes chance is lower and the rate stands.
func TestFitCalibrationChanceFloor(t *testing.T) {
	acc := func(m float32) float64 {
		if m < 1 {
			return 0.3
		}
		return 0.9
	}
	held := heldFrom(6, 20000, acc)
	for _, tc := range []struct {
		classes int
		floor   uint8
	}{{2, 128}, {4, 64}} {
		cal := fitCalibration(held, 0.02, tc.classes)
		if cal == nil {
			t.Fatal("no calibration")
		}
		if err := cal.Validate(false); err != nil {
			t.Fatal(err)
		}
		if got := uint8(chanceByte(tc.classes)); got != tc.floor {
			t.Errorf("%d classes: chance byte %d, want %d", tc.classes, got, tc.floor)
		}
		// The rows below margin 1 were right 30% of the time.
		low := cal.Confidence[cal.Bin(0.5)]
		if want := max(tc.floor, 77); low < want-3 || low > want+3 {
			t.Errorf("%d classes: margin 0.5 at %d/255, want about %d (chance %d, the rows' 30%% 77)", tc.classes, low, want, tc.floor)
		}
		for b, c := range cal.Confidence[1:] {
			if c < tc.floor {
				t.Errorf("%d classes: bin %d at %d/255, below chance %d", tc.classes, b+1, c, tc.floor)
			}
		}
		if hi := cal.Confidence[cal.Bin(3)]; hi < 225 || hi > 235 {
			t.Errorf("%d classes: margin 3 at %d/255, want about 230 (90%%)", tc.classes, hi)
		}
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
// term (docs/TRAINING.md), so a window with a feature moved past its
// training range has a higher novelty than any window like the training
// data — which the fingerprint's bits alone cannot see, since the moved
// feature is clipped to its range's end. Whether novelty then makes
// windows unknown is for the held-out rows to say: on these, where it
// marks no errors, it decides nothing, and the windows like the training
// data stay answered.
func TestUnknownPastTheTrainingRange(t *testing.T) {
	train := TwoCircles(2000, 0.5, 0.08, 1)
	res, err := Train(train, &Config{P: 256, Seed: 3, SigmaGrid: []float64{0.25, 0.5}, CGrid: []float64{1}})
	if err != nil {
		t.Fatal(err)
	}
	cal := res.Spec.Calibration
	if cal == nil || cal.Outside == 0 {
		t.Fatalf("calibration %+v, want an out-of-range weight", cal)
	}
	if cal.MaxNovelty != 0 || !slices.ContainsFunc(res.Notes, func(n string) bool { return strings.HasPrefix(n, "unknown: low confidence alone") }) {
		t.Errorf("maximum novelty %d, notes %q: want novelty deciding nothing where it marks no held-out errors", cal.MaxNovelty, res.Notes)
	}
	novelty := func(m *inference.Model, ds *data.Dataset, shift float32) (lo, hi uint32, unknown float64) {
		x := make([]float32, ds.D)
		lo = math.MaxUint32
		for i := range ds.N {
			copy(x, ds.Row(i))
			x[0] += shift
			o, err := m.PredictOutcome(nil, nil, x, m.Thresholds())
			if err != nil {
				t.Fatal(err)
			}
			lo, hi = min(lo, o.Novelty), max(hi, o.Novelty)
			if o.Unknown {
				unknown++
			}
		}
		return lo, hi, 100 * unknown / float64(ds.N)
	}
	test := TwoCircles(2000, 0.5, 0.08, 2)
	_, likeMax, same := novelty(res.Model, test, 0)
	movedMin, _, _ := novelty(res.Model, test, 3)
	if movedMin <= likeMax || same > 5 {
		t.Errorf("novelty of moved windows from %d, of like ones up to %d; %.1f%% of like windows unknown (want ≤ 5%%)", movedMin, likeMax, same)
	}
	// Without the term the moved windows look like the edge of the data.
	spec := *res.Spec
	plain := *cal
	plain.Outside = 0
	spec.Calibration = &plain
	m, err := inference.New(&spec)
	if err != nil {
		t.Fatal(err)
	}
	if plainMin, _, _ := novelty(m, test, 3); plainMin > likeMax {
		t.Errorf("without the out-of-range term the moved windows still stand out (%d > %d): the term adds nothing here", plainMin, likeMax)
	}
}

// TestNoveltyTells: novelty counts toward unknown only when the most novel
// tenth of the held-out rows is more than a point less accurate than the
// rest.
func TestNoveltyTells(t *testing.T) {
	held := [][]heldOut{make([]heldOut, 500), make([]heldOut, 500)}
	nov := [][]uint32{make([]uint32, 500), make([]uint32, 500)}
	for k := range held {
		for i := range held[k] {
			nov[k][i] = uint32(i)
			held[k][i].correct = i%10 != 0 // 90% right everywhere
		}
	}
	if top, rest, ok := noveltyTells(nov, held); ok {
		t.Errorf("novelty unrelated to errors: top %.1f%% rest %.1f%% counted as telling", top, rest)
	}
	for k := range held {
		for i := 450; i < 500; i++ {
			held[k][i].correct = i%2 == 0 // the most novel rows half right
		}
	}
	if top, rest, ok := noveltyTells(nov, held); !ok || top != 50 {
		t.Errorf("novel rows half right: top %.1f%% rest %.1f%%, ok %v", top, rest, ok)
	}
	if _, _, ok := noveltyTells(nov[:1], [][]heldOut{held[0][:99]}); ok {
		t.Error("99 rows judged")
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
	shipped, raw, how, ok := statedECE([][]heldOut{held}, sampleFolds, 0.02, 2)
	if !ok || shipped > 3 || raw < 15 || how != "each half's rows under the other half's fit" {
		t.Errorf("held-out ECE %.2f%% (want ≤ 3), softmax %.2f%% (want ≥ 15), ok %v, %s", shipped, raw, ok, how)
	}
	if _, _, _, ok := statedECE([][]heldOut{held[:2*minCalibrationRows-2]}, sampleFolds, 0.02, 2); ok {
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
	shipped, _, how, ok := statedECE(held, forwardFolds, 0.02, 2)
	if !ok || shipped < 20 || how != "the latest fold under a calibration of the earlier ones" {
		t.Errorf("forward stated ECE %.2f%% (%s), want ≥ 20: the earlier folds' 97%% on a 70%% period", shipped, how)
	}
	halves, _, _, _ := statedECE([][]heldOut{slices.Concat(held...)}, sampleFolds, 0.02, 2)
	if halves > 5 {
		t.Errorf("halves of the same rows: %.2f%%, expected small (that is what hides drift)", halves)
	}
	if _, _, how, ok := statedECE(held, groupFolds, 0.02, 2); !ok || how != "each fold's groups under a calibration of the other folds'" {
		t.Errorf("grouped: %s %v", how, ok)
	}
}

// TestCalibrationKeepsLowestBin: held-out rows all right at every margin
// pool into one bin, yet the lowest margins keep a bin of their own
// (Laplace's rule on their fewer rows, and at least a byte below), so that
// the minimum confidence can still make them unknown.
func TestCalibrationKeepsLowestBin(t *testing.T) {
	cal := fitCalibration(heldFrom(11, 2000, func(float32) float64 { return 1 }), 0.02, 2)
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
	cal := fitCalibration(held, 0.02, 2)
	if top := cal.Confidence[len(cal.Confidence)-1]; top == 255 || top < 250 {
		t.Errorf("top bin %d/255: want below 255, near it", top)
	}
}
