package training

import (
	"math"
	"runtime"
	"strconv"
	"sync"

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
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	nc := len(m.Classes())
	t.names = m.Classes()
	pred := make([]int32, ds.N)
	loss := make([]float64, ds.N)
	var wg sync.WaitGroup
	for g := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			scores := make([]float32, nc)
			for i := g; i < ds.N; i += workers {
				c, _ := m.Predict(scores, ds.Row(i))
				pred[i] = int32(c)
				loss[i] = hinge(scores, int(ds.Y[i]))
			}
		}()
	}
	wg.Wait()
	for i, y := range ds.Y {
		t.confusion[y][pred[i]]++
		t.loss[y] += loss[i]
		t.predicted[int(pred[i])]++
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

// selection is a candidate's validation score.
type selection struct {
	Balanced   float64 // balanced accuracy, percent
	SE         float64 // its standard error, percentage points
	Accuracy   float64 // plain accuracy, percent
	Loss       float64 // class-balanced mean hinge loss
	Degenerate string  // why the model is unusable; "" if it is not
}

// better reports whether a beats b.
func (a selection) better(b selection) bool {
	if (a.Degenerate == "") != (b.Degenerate == "") {
		return a.Degenerate == ""
	}
	if a.Balanced != b.Balanced {
		return a.Balanced > b.Balanced
	}
	return a.Loss < b.Loss
}

// score summarises the tally. A model is degenerate if it predicts a single
// class for every held-out row while several classes are present, or if
// its balanced accuracy is no better than chance (1/k for k classes
// present).
func (t *tally) score() selection {
	var s selection
	present, correct, total := 0, 0, 0
	var recall, loss, variance float64
	for c, row := range t.confusion {
		n := 0
		for _, v := range row {
			n += v
		}
		total += n
		correct += row[c]
		if n == 0 {
			continue
		}
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
		}
	case present > 1 && s.Balanced <= 100/float64(present)+1e-9:
		s.Degenerate = "one no better than chance on the held-out rows"
	}
	return s
}
