package training

import (
	"math"
	"testing"
)

func tallyOf(confusion [][]int, loss []float64) *tally {
	t := newTally(len(confusion))
	for y, row := range confusion {
		for p, n := range row {
			t.confusion[y][p] += n
			t.predicted[p] += n
			if n == 0 {
				delete(t.predicted, p)
			}
		}
	}
	copy(t.loss, loss)
	return t
}

func TestSelectionBalancedAccuracy(t *testing.T) {
	// 90 rows of class 0, 10 of class 1; the model finds half of class 1.
	s := tallyOf([][]int{{90, 0}, {5, 5}}, []float64{9, 10}).score()
	if math.Abs(s.Balanced-75) > 1e-9 || math.Abs(s.Accuracy-95) > 1e-9 {
		t.Fatalf("balanced %.2f accuracy %.2f, want 75 and 95", s.Balanced, s.Accuracy)
	}
	// Class-balanced loss: (9/90 + 10/10) / 2.
	if math.Abs(s.Loss-0.55) > 1e-12 || s.Degenerate != "" {
		t.Fatalf("loss %g degenerate %q", s.Loss, s.Degenerate)
	}
}

func TestSelectionFlagsMajorityClassModel(t *testing.T) {
	// 90% plain accuracy, but it never predicts class 1.
	s := tallyOf([][]int{{90, 0}, {10, 0}}, []float64{1, 1}).score()
	if s.Degenerate == "" {
		t.Fatalf("a model predicting one class everywhere is not flagged: %+v", s)
	}
	// A model that predicts both classes at random is flagged too.
	s = tallyOf([][]int{{45, 45}, {5, 5}}, []float64{1, 1}).score()
	if s.Degenerate == "" {
		t.Fatalf("a chance-level model is not flagged: %+v", s)
	}
	// One class present in the held-out rows: nothing to compare with, so
	// predicting it everywhere is fine.
	s = tallyOf([][]int{{50, 0}, {0, 0}}, []float64{1, 0}).score()
	if s.Degenerate != "" {
		t.Fatalf("a one-class hold-out flagged: %+v", s)
	}
}

func TestSelectionOrder(t *testing.T) {
	good := selection{Score: 80, Loss: 0.5}
	tie := selection{Score: 80, Loss: 0.4}
	worse := selection{Score: 79, Loss: 0.1}
	degenerate := selection{Score: 99, Loss: 0, Degenerate: "predicts class 0 for every held-out row"}
	if !tie.better(good) || good.better(tie) {
		t.Fatal("equal balanced accuracy: the lower loss must win")
	}
	if !good.better(worse) {
		t.Fatal("a higher score must win over lower loss")
	}
	if !worse.better(degenerate) || degenerate.better(worse) {
		t.Fatal("a degenerate model must lose to any usable one")
	}
}

func TestHinge(t *testing.T) {
	// Three classes, true class 1: s1 = 2 is past the margin, s0 = 0 and
	// s2 = -3 → losses 1, 0, 0.
	if l := hinge([]float32{0, 2, -3}, 1); l != 1 {
		t.Fatalf("hinge = %g, want 1", l)
	}
}

// TestScoreFoldsPenalisesSpread: of two candidates with the same mean over
// three later periods, the one that holds up in all of them ranks first;
// degenerate is judged on all folds' rows together.
func TestScoreFoldsPenalisesSpread(t *testing.T) {
	fold := func(r0, r1 int) *tally { // 100 rows of each class, r0 and r1 right
		return tallyOf([][]int{{r0, 100 - r0}, {100 - r1, r1}}, []float64{1, 1})
	}
	steady := scoreFolds([]*tally{fold(80, 80), fold(80, 80), fold(80, 80)}, DefaultSelection)
	swinging := scoreFolds([]*tally{fold(100, 100), fold(80, 80), fold(60, 60)}, DefaultSelection)
	if math.Abs(steady.Balanced-80) > 1e-9 || math.Abs(swinging.Balanced-80) > 1e-9 {
		t.Fatalf("means %g and %g, want 80", steady.Balanced, swinging.Balanced)
	}
	if swinging.Spread != 20 || math.Abs(swinging.Score-(80-stabilityPenalty*20)) > 1e-9 || len(swinging.Folds) != 3 {
		t.Fatalf("swinging: %+v", swinging)
	}
	if !steady.better(swinging) || swinging.better(steady) {
		t.Fatalf("steady %+v must beat swinging %+v", steady, swinging)
	}
	if swinging.SE <= steady.SE {
		t.Fatalf("the spread must widen the standard error: %g vs %g", swinging.SE, steady.SE)
	}
	// One class per fold, each predicted everywhere: every fold alone looks
	// perfect, yet the model predicts one class for each period's rows —
	// across both folds it is right half the time, which is chance.
	a := tallyOf([][]int{{100, 0}, {0, 0}}, []float64{1, 0})
	b := tallyOf([][]int{{0, 0}, {100, 0}}, []float64{0, 1})
	if s := scoreFolds([]*tally{a, b}, DefaultSelection); s.Degenerate == "" {
		t.Fatalf("a constant model is not flagged across folds: %+v", s)
	}
}
