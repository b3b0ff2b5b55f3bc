package training

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/trit-iot/trit/inference"
)

// Decision offsets (docs/TRAINING.md "Decision offsets"): the ternary fit
// has no bias term, and its decision sits where the training rows' hinge
// loss put it. Where the rows the model meets next favour other classes
// than the training rows did — a prior that shifted (ozone days halving
// over the years), or later periods where no model beats the majority
// class — moving each class's score by a constant moves the decision
// along what the model knows. With Selection.Offsets the offsets are fitted
// on the chosen candidate's held-out predictions (rows its fold fits did
// not see; for a recording, later periods), to maximise the selection
// metric there, and kept only when they raise it by offsetGain points or
// more. They ship as integers added to each vector's raw score
// (inference.Calibration.Offsets), so every gateway moves the same way.

// offsetGain is the least gain in the selection metric (points, on the
// held-out rows) that offsets must bring to be kept.
const offsetGain = 0.5

// offsetPasses bounds the coordinate passes over the classes (more than
// two classes).
const offsetPasses = 3

// counts is a confusion summary that scores a metric in O(1) per change.
type counts struct {
	total, right []float64 // per class: rows, and rows predicted right
	n, correct   float64
	metric       string
	maj          majority
}

func newCounts(held []heldOut, nc int, metric string, maj majority) *counts {
	c := &counts{total: make([]float64, nc), right: make([]float64, nc), metric: metric, maj: maj}
	for _, h := range held {
		c.total[h.y]++
		c.n++
	}
	return c
}

// move records a row of class y leaving prediction from for to.
func (c *counts) move(y int32, from, to int) {
	if from == int(y) {
		c.right[y]--
		c.correct--
	}
	if to == int(y) {
		c.right[y]++
		c.correct++
	}
}

// inadmissible is what score subtracts from predictions the majority
// rule would not ship: any admissible offset beats every inadmissible one.
const inadmissible = 1000

// score is the metric of the current predictions, percent, less
// inadmissible when the majority rule would not ship them (selection.go).
func (c *counts) score() float64 {
	var rec float64
	present := 0
	for k, t := range c.total {
		if t > 0 {
			rec += c.right[k] / t
			present++
		}
	}
	bal := 100 * rec / float64(max(present, 1))
	acc := 100 * c.correct / max(c.n, 1)
	m := bal
	if c.metric == "mean" {
		m = (bal + acc) / 2
	}
	if !c.maj.admissible(selection{Accuracy: acc, Balanced: bal}) {
		m -= inadmissible
	}
	return m
}

// predictMoved returns the class of scores moved by beta (per class; one
// value, on the positive class's score, for two classes).
func predictMoved(scores []float32, beta []float64) int {
	if len(beta) == 1 {
		if float64(scores[1])+beta[0] >= 0 {
			return 1
		}
		return 0
	}
	best, bestScore := 0, math.Inf(-1)
	for k, s := range scores {
		if v := float64(s) + beta[k]; v > bestScore {
			best, bestScore = k, v
		}
	}
	return best
}

// fitOffsets fits the offsets (in score units: one for two classes, else
// one per class) that maximise metric on the held-out rows among those the
// majority rule admits against maj (any, if none is), and returns them
// with the metric before and after; nil when they gain less than
// offsetGain. Balanced accuracy alone would chase a rare class on rows
// where nothing tells it (seismic-bumps: 25% right for one point of
// balance); the majority rule stops that.
func fitOffsets(held []heldOut, nc int, metric string, maj majority) (beta []float64, before, after float64) {
	if len(held) == 0 {
		return nil, 0, 0
	}
	nv := inference.Vectors(nc)
	beta = make([]float64, nv)
	c := newCounts(held, nc, metric, maj)
	pred := make([]int, len(held))
	for i, h := range held {
		pred[i] = predictMoved(h.scores, beta)
		c.move(h.y, -1, pred[i])
	}
	before = c.score()
	type flip struct {
		at   float64 // the offset above which the row predicts the class
		i    int
		from int // what it predicts below that
	}
	var flips []flip
	// sweep sets vector k's offset to its best value, the others fixed.
	sweep := func(k int) {
		target := k // the class the offset moves rows to
		if nv == 1 {
			target = 1
		}
		flips = flips[:0]
		for i, h := range held {
			// The row predicts target when beta[k] passes at; below,
			// what the other classes' moved scores say.
			var at float64
			from := 0
			if nv == 1 {
				at = -float64(h.scores[1])
			} else {
				other := math.Inf(-1)
				for j, s := range h.scores {
					if v := float64(s) + beta[j]; j != k && v > other {
						other, from = v, j
					}
				}
				at = other - float64(h.scores[k])
			}
			flips = append(flips, flip{at, i, from})
		}
		slices.SortFunc(flips, func(a, b flip) int { return cmp.Compare(a.at, b.at) })
		// Start with no row at target (the offset below every threshold),
		// then raise the offset past one threshold at a time: each step is
		// one offset's predictions, the offset halfway to the next
		// threshold.
		for _, f := range flips {
			c.move(held[f.i].y, pred[f.i], f.from)
			pred[f.i] = f.from
		}
		at := func(j int) float64 { // the offset just past flips[j]
			if j+1 < len(flips) {
				return (flips[j].at + flips[j+1].at) / 2
			}
			return flips[j].at + 1
		}
		bestAt, bestScore := flips[0].at-1, c.score()
		for j, f := range flips {
			c.move(held[f.i].y, f.from, target)
			pred[f.i] = target
			v, s := at(j), c.score()
			// Ties: the offset nearer its current value.
			if s > bestScore || s == bestScore && math.Abs(v-beta[k]) < math.Abs(bestAt-beta[k]) {
				bestAt, bestScore = v, s
			}
		}
		beta[k] = bestAt
		for i, h := range held {
			if p := predictMoved(h.scores, beta); p != pred[i] {
				c.move(h.y, pred[i], p)
				pred[i] = p
			}
		}
	}
	if nv == 1 {
		sweep(0)
	} else {
		for range offsetPasses {
			for k := range nv {
				sweep(k)
			}
		}
	}
	after = c.score()
	if after < before+offsetGain {
		return nil, plain(before), plain(before)
	}
	return beta, plain(before), plain(after)
}

// admitted reports whether held's predictions moved by beta are
// admissible against maj.
func admitted(held []heldOut, beta []float64, nc int, maj majority) bool {
	c := newCounts(held, nc, "balanced", maj)
	for _, h := range held {
		c.move(h.y, -1, predictMoved(h.scores, beta))
	}
	return c.score() >= 0
}

// plain is a score without the inadmissible penalty.
func plain(score float64) float64 {
	if score < 0 {
		return score + inadmissible
	}
	return score
}

// applyOffsets moves the held-out predictions by beta: their class,
// correctness, margin and softmax share become those of the moved scores,
// which the calibration is then fitted on.
func applyOffsets(held [][]heldOut, beta []float64) {
	moved := make([]float32, 0, 16)
	for _, fold := range held {
		for i := range fold {
			h := &fold[i]
			moved = moved[:0]
			for k, s := range h.scores {
				if len(beta) == 1 {
					moved = append(moved, s+float32((2*k-1))*float32(beta[0])) // (−s, s) moved to (−(s+β), s+β)
				} else {
					moved = append(moved, s+float32(beta[k]))
				}
			}
			p := predictMoved(h.scores, beta)
			h.correct = int32(p) == h.y
			h.margin = margin(moved, p)
			h.soft = float32(softmaxTop(moved, p))
		}
	}
}

// rawOffsets converts offsets in score units to the integers a model with
// the scales alpha adds to its raw scores; nil when all round to zero.
func rawOffsets(beta []float64, alpha []float32) []int32 {
	out := make([]int32, len(beta))
	zero := true
	for k, b := range beta {
		v := math.Round(b / float64(alpha[k]))
		out[k] = int32(max(-inference.MaxOffset, min(inference.MaxOffset, v)))
		zero = zero && out[k] == 0
	}
	if zero {
		return nil
	}
	return out
}

// fallsBack reports whether the majority rule's fallback applies to the
// search's choice (Selection.Fallback "majority"): no candidate was
// admissible against the majority class, and the constant was right at
// least as often as the chosen one on every validation fold.
func (r *Result) fallsBack() bool {
	if r.held == nil || r.Selected == nil {
		return false
	}
	chosen := selection{Accuracy: r.Selected.Accuracy, Balanced: r.Selected.Balanced}
	return !r.majority.admissible(chosen) && r.majority.steadilyAhead(r.held)
}

// fallbackNote says what the majority rule's fallback did, from the
// held-out rows after the offsets moved them.
func fallbackNote(maj majority, offsets []int32, held [][]heldOut) string {
	right, rows := 0, 0
	for _, fold := range held {
		for _, h := range fold {
			rows++
			if h.correct {
				right++
			}
		}
	}
	return fmt.Sprintf("no candidate was right as often as always answering %q on the validation rows, and that constant was ahead on every fold (%s): the decision moved toward it (offsets %v), right on %.1f%% of the held-out rows against the constant's %.1f%%; the other classes are answered only where the model is surest",
		maj.class, foldList(maj.folds), offsets, 100*float64(right)/float64(max(rows, 1)), maj.accuracy)
}

func foldList(v []float64) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = fmt.Sprintf("%.1f%%", x)
	}
	return strings.Join(parts, ", ")
}

// offsetNote says what the offsets did on the held-out rows.
func offsetNote(offsets []int32, before, after float64, metric string) string {
	return fmt.Sprintf("decision offsets %v: %s on the held-out rows %.1f%% → %.1f%% (the decision moved toward the classes those rows favour)", offsets, metricName(metric), before, after)
}

func metricName(m string) string {
	if m == "mean" {
		return "the mean of accuracy and balanced accuracy"
	}
	return "balanced accuracy"
}
