package training

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/trit-iot/trit/inference"
	"github.com/trit-iot/trit/training/data"
)

// binaryHeld makes held-out rows of two classes whose positive score is
// drawn around mean[class].
func binaryHeld(seed uint64, n [2]int, mean [2]float64) []heldOut {
	rnd := rand.New(rand.NewPCG(seed, 2))
	var out []heldOut
	for y, k := range n {
		for range k {
			s := float32(mean[y] + 0.1*rnd.NormFloat64())
			out = append(out, heldOut{y: int32(y), scores: []float32{-s, s}, correct: (s >= 0) == (y == 1)})
		}
	}
	return out
}

// TestFitOffsetsBinary: scores that moved past the decision (both classes
// above 0) get an offset back between them; scores already split at 0 get
// none.
func TestFitOffsetsBinary(t *testing.T) {
	held := binaryHeld(1, [2]int{500, 500}, [2]float64{0.5, 0.9})
	beta, before, after := fitOffsets(held, 2, "balanced", majority{})
	if beta == nil || before != 50 || after < 97 || !(beta[0] < -0.5 && beta[0] > -0.9) {
		t.Fatalf("offset %v: balanced %.1f → %.1f, want between −0.9 and −0.5 and ≥ 97 (the classes overlap by 2 SD)", beta, before, after)
	}
	if beta, _, _ := fitOffsets(binaryHeld(2, [2]int{500, 500}, [2]float64{-0.4, 0.4}), 2, "balanced", majority{}); beta != nil {
		t.Fatalf("offset %v for scores already split at 0", beta)
	}
}

// TestFitOffsetsMean: with the mean of accuracy and balanced accuracy, a
// class the scores cannot tell apart from a common one is given up when
// that gains accuracy: the offset moves everything to the majority.
func TestFitOffsetsMean(t *testing.T) {
	held := binaryHeld(3, [2]int{950, 50}, [2]float64{0.05, 0.05}) // no signal, half predicted positive
	beta, before, after := fitOffsets(held, 2, "mean", majority{})
	if beta == nil || after <= before {
		t.Fatalf("offset %v: %.1f → %.1f", beta, before, after)
	}
	for _, h := range held {
		if predictMoved(h.scores, beta) != 0 {
			t.Fatalf("offset %v still predicts the rare class for score %v", beta, h.scores)
		}
	}
}

// TestFitOffsetsMajorityRule: balanced accuracy alone would move a
// decision the scores cannot support toward a rare class; against the
// majority class (95% of the rows) such offsets are inadmissible, and the
// ones kept move toward it instead.
func TestFitOffsetsMajorityRule(t *testing.T) {
	held := binaryHeld(5, [2]int{950, 50}, [2]float64{0.04, 0.06}) // barely a signal
	maj := majority{class: "0", accuracy: 95, balanced: 50}
	if beta, _, _ := fitOffsets(held, 2, "balanced", majority{}); beta == nil {
		t.Fatal("without the majority rule balanced accuracy found no offset to chase")
	}
	beta, _, after := fitOffsets(held, 2, "balanced", maj)
	right := 0
	for _, h := range held {
		if predictMoved(h.scores, beta) == int(h.y) {
			right++
		}
	}
	if beta != nil && right < 950 {
		t.Fatalf("offset %v (balanced %.1f) leaves %d of 1,000 right: below the majority class's 950", beta, after, right)
	}
}

// TestFitOffsetsMulticlass: a class whose scores all sit below the others'
// is lifted until its rows are recognised; applyOffsets then moves the
// held-out predictions to match.
func TestFitOffsetsMulticlass(t *testing.T) {
	rnd := rand.New(rand.NewPCG(4, 3))
	var held []heldOut
	for i := range 900 {
		y := i % 3
		s := make([]float32, 3)
		for k := range s {
			s[k] = float32(0.1 * rnd.NormFloat64())
		}
		s[y] += 1
		s[2] -= 1.5 // class 2 is scored too low for every row
		held = append(held, heldOut{y: int32(y), scores: s})
	}
	beta, before, after := fitOffsets(held, 3, "balanced", majority{})
	if beta == nil || after < 95 || before > 70 || beta[2]-max(beta[0], beta[1]) < 0.5 {
		t.Fatalf("offsets %v: balanced %.1f → %.1f", beta, before, after)
	}
	folds := [][]heldOut{held[:450], held[450:]}
	applyOffsets(folds, beta)
	right := 0
	for _, f := range folds {
		for _, h := range f {
			if h.correct != (predictMoved(h.scores, beta) == int(h.y)) || !(h.margin >= 0) {
				t.Fatalf("held-out row not moved: %+v", h)
			}
			if h.correct {
				right++
			}
		}
	}
	if right < 850 {
		t.Fatalf("%d of 900 right after the offsets", right)
	}
}

func TestRawOffsets(t *testing.T) {
	if got := rawOffsets([]float64{-0.5, 0.26, 0}, []float32{0.1, 0.1, 0.5}); !slices.Equal(got, []int32{-5, 3, 0}) {
		t.Fatalf("raw offsets %v", got)
	}
	if got := rawOffsets([]float64{0.01}, []float32{1}); got != nil {
		t.Fatalf("offsets rounding to zero: %v", got)
	}
	if got := rawOffsets([]float64{1e12}, []float32{1}); got[0] != inference.MaxOffset {
		t.Fatalf("offset not bounded: %v", got)
	}
}

// TestTrainWithOffsets: on a recording whose class boundary moves with
// time (the same reading means "on" less often later), a model trained
// with Selection.Offsets ships offsets fitted on its later folds, says
// so, and on rows later still it is more accurate than the same model
// without them.
func TestTrainWithOffsets(t *testing.T) {
	rnd := rand.New(rand.NewPCG(9, 9))
	stream := func(n int, from, to float64) *data.Dataset {
		ds := &data.Dataset{Name: "moving-boundary", D: 2, N: n, Y: make([]int32, n), Classes: []string{"off", "on"}, Ordered: true}
		for i := range n {
			x, noise := rnd.Float64(), rnd.Float64()
			theta := from + (to-from)*float64(i)/float64(n)
			if x+0.05*rnd.NormFloat64() > theta {
				ds.Y[i] = 1
			}
			ds.X = append(ds.X, float32(x), float32(noise))
		}
		return ds
	}
	train, later := stream(3000, 0.2, 0.6), stream(1000, 0.6, 0.7)
	res, err := Train(train, &Config{Seed: 1, Selection: Selection{Offsets: true}})
	if err != nil {
		t.Fatal(err)
	}
	cal := res.Spec.Calibration
	if cal == nil || cal.Offsets == nil || !slices.ContainsFunc(res.Notes, func(n string) bool { return strings.HasPrefix(n, "decision offsets") }) {
		t.Fatalf("calibration %+v, notes %q: want offsets and a note", cal, res.Notes)
	}
	with, err := Evaluate(res.Model, later, 0)
	if err != nil {
		t.Fatal(err)
	}
	plainSpec := *res.Spec
	plainCal := *cal
	plainCal.Offsets = nil
	plainSpec.Calibration = &plainCal
	plain, err := inference.New(&plainSpec)
	if err != nil {
		t.Fatal(err)
	}
	without, err := Evaluate(plain, later, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("offsets %v: later rows %.1f%% (balanced %.1f%%), without %.1f%% (%.1f%%)", cal.Offsets, with.Accuracy, with.Balanced, without.Accuracy, without.Balanced)
	if with.Balanced <= without.Balanced {
		t.Errorf("offsets did not help on the later rows: balanced %.1f%% with, %.1f%% without", with.Balanced, without.Balanced)
	}
}

// TestTrainMajorityFallback: on a recording whose rare class is barely
// told by its one sensor, every candidate trades accuracy for a little
// balance and none is admissible against the majority class, which is
// ahead on every fold. With Fallback "majority" the decision moves toward
// it: later rows are right at least as often as the constant, and the
// note says so; with "nearest" the model ships as chosen, below it. When
// the constant is not ahead on every fold (its class turns rare in one
// period), nothing moves.
func TestTrainMajorityFallback(t *testing.T) {
	rnd := rand.New(rand.NewPCG(11, 11))
	// rare gives the share of the rare class at row i of n.
	stream := func(n int, rare func(i int) float64) *data.Dataset {
		ds := &data.Dataset{Name: "rare-events", D: 2, N: n, Y: make([]int32, n), Classes: []string{"quiet", "event"}, Ordered: true}
		for i := range n {
			x := rnd.NormFloat64()
			if rnd.Float64() < rare(i) {
				ds.Y[i] = 1
				x += 0.5
			}
			ds.X = append(ds.X, float32(x), float32(rnd.NormFloat64()))
		}
		return ds
	}
	steady := func(int) float64 { return 0.08 }
	train, later := stream(3000, steady), stream(1000, steady)
	counts := func(ds *data.Dataset) float64 {
		quiet := 0
		for _, y := range ds.Y {
			if y == 0 {
				quiet++
			}
		}
		return 100 * float64(quiet) / float64(ds.N)
	}
	constant := counts(later)
	run := func(ds *data.Dataset, fallback string) (*Result, *Evaluation) {
		t.Helper()
		res, err := Train(ds, &Config{Seed: 1, Selection: Selection{Fallback: fallback}})
		if err != nil {
			t.Fatal(err)
		}
		ev, err := Evaluate(res.Model, later, 0)
		if err != nil {
			t.Fatal(err)
		}
		return res, ev
	}
	nearest, evNearest := run(train, "nearest")
	moved, evMoved := run(train, "majority")
	t.Logf("later rows: constant %.1f%%; nearest %.1f%% (balanced %.1f%%); majority fallback %.1f%% (balanced %.1f%%), offsets %v",
		constant, evNearest.Accuracy, evNearest.Balanced, evMoved.Accuracy, evMoved.Balanced, moved.Spec.Calibration.Offsets)
	if !slices.ContainsFunc(nearest.Warnings, func(w string) bool { return strings.Contains(w, "right less often than always answering") }) {
		t.Fatalf("warnings %q: the example no longer has no admissible candidate", nearest.Warnings)
	}
	if nearest.Spec.Calibration.Offsets != nil || evNearest.Accuracy >= constant {
		t.Fatalf("nearest: offsets %v, %.1f%% on later rows: want none, below the constant's %.1f%%", nearest.Spec.Calibration.Offsets, evNearest.Accuracy, constant)
	}
	if moved.Spec.Calibration.Offsets == nil || !slices.ContainsFunc(moved.Notes, func(n string) bool { return strings.HasPrefix(n, "no candidate was right as often") }) {
		t.Fatalf("majority fallback: offsets %v, notes %q: want offsets and a note", moved.Spec.Calibration.Offsets, moved.Notes)
	}
	if evMoved.Accuracy < constant-1 {
		t.Errorf("majority fallback: %.1f%% on later rows, want within a point of the constant's %.1f%%", evMoved.Accuracy, constant)
	}
	// The rare class is the common one in the last stretch of training:
	// the constant is not ahead on every fold.
	flips := stream(3000, func(i int) float64 {
		if i >= 2700 {
			return 0.7
		}
		return 0.08
	})
	res, _ := run(flips, "majority")
	t.Logf("flipping prior: the constant per fold %v", res.majority.folds)
	if !slices.ContainsFunc(res.Warnings, func(w string) bool { return strings.Contains(w, "right less often than always answering") }) {
		t.Fatalf("warnings %q: the flipping example no longer has no admissible candidate", res.Warnings)
	}
	if res.Spec.Calibration.Offsets != nil {
		t.Errorf("the constant behind on one fold: offsets %v, notes %q", res.Spec.Calibration.Offsets, res.Notes)
	}
}

// TestAdmitted: held-out rows moved by offsets are admissible only when
// they are right as often as the constant (or 10 points more balanced).
func TestAdmitted(t *testing.T) {
	// Class 0 on 9 rows of 10; the model says 1 on rows 0–2 (scores for
	// class 1 above 0 there), right on row 0 only.
	held := make([]heldOut, 10)
	for i := range held {
		held[i] = heldOut{y: 0, scores: []float32{0, -1}}
		if i < 3 {
			held[i].scores = []float32{0, 1}
		}
	}
	held[0].y = 1
	maj := majority{accuracy: 90, balanced: 50}.accuracyOnly()
	if admitted(held, []float64{0}, 2, maj) {
		t.Error("8 of 10 right against the constant's 9: admitted")
	}
	if !admitted(held, []float64{-2}, 2, maj) {
		t.Error("moved to the constant, 9 of 10: not admitted")
	}
}
