package training

import (
	"fmt"
	"math"
	"strconv"

	"github.com/trit-iot/trit/inference"
	"github.com/trit-iot/trit/training/data"
)

// Model selection scores a candidate on held-out rows by balanced accuracy
// — the mean recall over the classes present — so a rare class counts as
// much as a common one, and a model that predicts the majority class
// everywhere scores 1/k, not the majority share. Equal balanced accuracies
// (common on easy validation sets) are decided by the class-balanced hinge
// loss of the one-vs-all scores: the candidate whose scores sit further on
// the right side of the margin wins.

// tally accumulates held-out predictions, possibly over several folds.
type tally struct {
	classes   int
	confusion [][]int     // [true][predicted]
	loss      []float64   // per true class: summed one-vs-all hinge loss
	predicted map[int]int // predicted class counts
	names     []string    // class labels, once a model was added
	held      []heldOut   // per row added: its margin and whether it was right (calibrate.go)
}

func newTally(classes int) *tally {
	t := &tally{classes: classes, confusion: make([][]int, classes), loss: make([]float64, classes), predicted: map[int]int{}}
	for c := range t.confusion {
		t.confusion[c] = make([]int, classes)
	}
	return t
}

// add predicts every row of ds with m and records the results.
func (t *tally) add(m *inference.Model, ds *data.Dataset, workers int) {
	nc := len(m.Classes())
	t.names = m.Classes()
	pred := make([]int32, ds.N)
	all := make([]float32, ds.N*nc) // every row's class scores, for the decision offsets
	loss := make([]float64, ds.N)
	margins := make([]float32, ds.N)
	soft := make([]float32, ds.N)
	eachRow(ds.N, workers, func(i int) {
		scores := all[i*nc : (i+1)*nc : (i+1)*nc]
		c, _ := m.Predict(scores, ds.Row(i))
		pred[i] = int32(c)
		loss[i] = hinge(scores, int(ds.Y[i]))
		margins[i] = margin(scores, c)
		soft[i] = float32(softmaxTop(scores, c))
	})
	for i, y := range ds.Y {
		t.confusion[y][pred[i]]++
		t.loss[y] += loss[i]
		t.predicted[int(pred[i])]++
		t.held = append(t.held, heldOut{margins[i], y == pred[i], soft[i], y, all[i*nc : (i+1)*nc : (i+1)*nc]})
	}
}

// hinge is the one-vs-all hinge loss of a row's scores: each class score
// should be ≥ 1 for the true class and ≤ −1 for the others. For two classes
// the scores are (−s, s), and this is the usual hinge of s, doubled.
func hinge(scores []float32, y int) float64 {
	var l float64
	for c, s := range scores {
		sign := -1.0
		if c == y {
			sign = 1
		}
		l += math.Max(0, 1-sign*float64(s))
	}
	return l
}

// Selection is how the search scores candidates on the validation folds
// and which one it ships. The zero value means DefaultSelection.
type Selection struct {
	// Metric scores one validation fold: "balanced" (the mean recall over
	// the classes present: a rare class counts as much as a common one) or
	// "mean" (the mean of that and the plain accuracy: a model that trades
	// much accuracy for a little balance scores no better than the
	// majority class).
	Metric string `json:"metric"`
	// Stability is the weight of the spread across folds subtracted from
	// their mean (see stabilityPenalty); negative means 0.
	Stability float64 `json:"stability"`
	// Floor is the least tolerance of the one-standard-error rule, in
	// points: on shifted folds the smallest model within max(SE, Floor)
	// of the best ships. Negative means 0.
	Floor float64 `json:"floor"`
	// EveryKind also fits the best candidate of every kind on all the
	// rows (at the grow stage's size), beside the finalists, so that the
	// final choice can ship a simpler kind that holds up as well.
	EveryKind bool `json:"every_kind,omitempty"`
	// Offsets fits decision offsets on the chosen candidate's held-out
	// predictions (offsets.go): the decision moves toward the classes the
	// held-out rows favour when that raises Metric there by at least
	// offsetGain points.
	Offsets bool `json:"offsets,omitempty"`
	// Fallback is what ships when no candidate is admissible against the
	// majority class (the majority rule, selection.go): "nearest", the
	// candidate right most often on the validation rows, as it is; or
	// "majority": the same candidate, and when the majority class was
	// right at least as often as it on every validation fold, its decision
	// moved toward the majority class by offsets fitted on its held-out
	// predictions (offsets.go) until those rows are right as often as the
	// constant, the other classes answered only where the model is surest.
	Fallback string `json:"fallback"`
}

// DefaultSelection is the selection rule Train uses (docs/TRAINING.md,
// "What best means", says how each value was chosen). Its floor of one
// point is the shift suite's choice over its nine sets, one left out at a
// time (docs/BENCHMARKS.md "The shift suite"); the floor acts on shifted
// folds only, so shuffled rows choose as before.
var DefaultSelection = Selection{Metric: "balanced", Stability: stabilityPenalty, Floor: 1, Fallback: "majority"}

func (s Selection) withDefaults() Selection {
	d := DefaultSelection
	if s.Metric != "" {
		d.Metric = s.Metric
	}
	if s.Stability != 0 {
		d.Stability = s.Stability
	}
	if s.Floor != 0 {
		d.Floor = s.Floor
	}
	d.EveryKind = d.EveryKind || s.EveryKind
	d.Offsets = d.Offsets || s.Offsets
	if s.Fallback != "" {
		d.Fallback = s.Fallback
	}
	return d
}

func (s Selection) check() error {
	if s.Metric != "balanced" && s.Metric != "mean" {
		return fmt.Errorf("%w: selection metric %q, want balanced or mean", ErrConfig, s.Metric)
	}
	if s.Fallback != "nearest" && s.Fallback != "majority" {
		return fmt.Errorf("%w: selection fallback %q, want nearest or majority", ErrConfig, s.Fallback)
	}
	if math.IsNaN(s.Stability) || math.IsNaN(s.Floor) || math.IsInf(s.Floor, 0) || s.Stability > 10 {
		return fmt.Errorf("%w: selection stability %g, floor %g", ErrConfig, s.Stability, s.Floor)
	}
	return nil
}

// tolerance is the one-standard-error rule's tolerance for a best
// candidate with standard error se.
func (s Selection) tolerance(se float64) float64 { return max(se, s.Floor) }

// selection is a candidate's validation score over its folds.
type selection struct {
	// Score ranks candidates: the mean over folds of the balanced accuracy
	// minus half its spread across them, percent. A model that is
	// excellent in one later period and poor in another ranks below one
	// that holds up in all of them (see stabilityPenalty).
	Score    float64
	Balanced float64   // mean over folds of the balanced accuracy, percent
	Folds    []float64 // balanced accuracy per fold, percent
	Spread   float64   // standard deviation of Folds, points (0 for one fold)
	SE       float64   // standard error of Score, points: class sampling and fold spread
	Accuracy float64   // plain accuracy over all folds' rows, percent
	Recall   []float64 // per class over all folds' rows, percent; NaN for a class without rows
	Loss     float64   // class-balanced mean hinge loss over all folds' rows
	// Degenerate says why the model is unusable; "" if it is not.
	Degenerate string
	// Constant: it is degenerate because it predicts one class for every
	// held-out row (else: no better than chance).
	Constant bool
}

// stabilityPenalty weighs the spread of a candidate's balanced accuracy
// across forward folds against its mean. Each fold is a later period; the
// period the model meets next is another one, so a score that swings from
// fold to fold is worth less than a steady one. Half a standard deviation
// keeps the mean in charge: three folds estimate the spread poorly, and a
// larger weight would let a steady but weak model (a constant one is very
// steady) win; the worst fold alone would be noisier still.
const stabilityPenalty = 0.5

// scoreFolds summarises a candidate's tallies, one per fold (see
// selection), under rule; degenerate is judged on all folds' rows
// together.
func scoreFolds(ts []*tally, rule Selection) selection {
	all := newTally(ts[0].classes)
	all.names = ts[0].names
	var sum, sumSq, seAcc float64
	var folds []float64
	for _, t := range ts {
		for y, row := range t.confusion {
			for p, n := range row {
				all.confusion[y][p] += n
			}
			all.loss[y] += t.loss[y]
		}
		for p, n := range t.predicted {
			all.predicted[p] += n
		}
		f := t.score()
		if f.Degenerate == "no held-out rows" {
			continue
		}
		folds = append(folds, f.Balanced)
		m := f.Balanced
		if rule.Metric == "mean" {
			m = (f.Accuracy + f.Balanced) / 2
		}
		sum += m
		sumSq += m * m
	}
	s := all.score()
	if len(folds) == 0 {
		return s
	}
	k := float64(len(folds))
	s.Folds = folds
	s.Balanced = 0
	for _, b := range folds {
		s.Balanced += b / k
	}
	mean := sum / k
	if len(folds) > 1 {
		s.Spread = math.Sqrt(max(0, (sumSq-sum*sum/k)/(k-1)))
	}
	s.Score = mean - max(0, rule.Stability)*s.Spread
	if rule.Metric == "mean" {
		// The accuracy's binomial error beside the balanced accuracy's,
		// averaged as the metric is (as if fully correlated: the larger).
		if n := float64(all.rows()); n > 0 {
			p := s.Accuracy / 100
			seAcc = 100 * math.Sqrt(p*(1-p)/n)
		}
		s.SE = (s.SE + seAcc) / 2
	}
	s.SE = math.Sqrt(s.SE*s.SE + s.Spread*s.Spread/k)
	return s
}

// rows is the number of rows added to the tally.
func (t *tally) rows() int {
	n := 0
	for _, row := range t.confusion {
		for _, v := range row {
			n += v
		}
	}
	return n
}

// score summarises the tally. A model is degenerate if it predicts a single
// class for every held-out row while several classes are present, or if
// its balanced accuracy is no better than chance (1/k for k classes
// present).
func (t *tally) score() selection {
	var s selection
	present, correct, total := 0, 0, 0
	var recall, loss, variance float64
	s.Recall = make([]float64, len(t.confusion))
	for c, row := range t.confusion {
		n := 0
		for _, v := range row {
			n += v
		}
		total += n
		correct += row[c]
		if n == 0 {
			s.Recall[c] = math.NaN()
			continue
		}
		s.Recall[c] = 100 * float64(row[c]) / float64(n)
		present++
		r := float64(row[c]) / float64(n)
		recall += r
		variance += r * (1 - r) / float64(n)
		loss += t.loss[c] / float64(n)
	}
	if present == 0 {
		return selection{Degenerate: "no held-out rows"}
	}
	s.Balanced = 100 * recall / float64(present)
	s.Score = s.Balanced
	// The mean of independent per-class recalls; rows of a time series are
	// not independent, so this is a lower bound on the real uncertainty.
	s.SE = 100 * math.Sqrt(variance) / float64(present)
	s.Accuracy = 100 * float64(correct) / float64(total)
	s.Loss = loss / float64(present)
	switch {
	case present > 1 && len(t.predicted) == 1:
		for c := range t.predicted {
			label := strconv.Itoa(c)
			if c < len(t.names) {
				label = strconv.Quote(t.names[c])
			}
			s.Degenerate = "one that predicts class " + label + " for every held-out row"
			s.Constant = true
		}
	case present > 1 && s.Balanced <= 100/float64(present)+1e-9:
		s.Degenerate = "one no better than chance on the held-out rows"
	}
	return s
}
