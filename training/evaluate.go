package training

import (
	"fmt"
	"runtime"
	"sync"

	"github.com/trit-iot/trit/inference"
	"github.com/trit-iot/trit/training/data"
)

// Evaluation is a model's performance on labelled data.
type Evaluation struct {
	N         int
	Correct   int
	Accuracy  float64 // percent
	Balanced  float64 // balanced accuracy: mean recall over the classes with rows, percent
	Classes   []string
	PerClass  []ClassScore // classes with rows, in class order
	Confusion [][]int      // Confusion[true][predicted]
	Predicted []int32      // per row
}

// ClassScore is one class's share of an Evaluation.
type ClassScore struct {
	Class     string  `json:"class"`
	Rows      int     `json:"rows"`      // rows of this class
	Recall    float64 `json:"recall"`    // percent of its rows predicted as it
	Precision float64 `json:"precision"` // percent of the rows predicted as it that are it; 0 if none were
}

// Evaluate predicts every row of ds with m (in parallel; Predict is safe for
// concurrent use) and compares with the labels. ds's classes must be the
// model's, in the same order (see data.Dataset.Relabel).
func Evaluate(m *inference.Model, ds *data.Dataset, workers int) (*Evaluation, error) {
	classes := m.Classes()
	if len(ds.Classes) > len(classes) {
		return nil, fmt.Errorf("training: %s has %d classes, the model %d", ds.Name, len(ds.Classes), len(classes))
	}
	for i, c := range ds.Classes {
		if classes[i] != c {
			return nil, fmt.Errorf("training: %s class %d is %q, the model's is %q (relabel the data first)", ds.Name, i, c, classes[i])
		}
	}
	if ds.D != m.NumFeatures() {
		return nil, fmt.Errorf("training: %s has %d features, the model takes %d", ds.Name, ds.D, m.NumFeatures())
	}
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	pred := make([]int32, ds.N)
	var wg sync.WaitGroup
	for g := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < ds.N; i += workers {
				c, _ := m.Predict(nil, ds.Row(i))
				pred[i] = int32(c)
			}
		}()
	}
	wg.Wait()
	ev := &Evaluation{N: ds.N, Classes: classes, Predicted: pred, Confusion: make([][]int, len(classes))}
	for c := range ev.Confusion {
		ev.Confusion[c] = make([]int, len(classes))
	}
	for i, y := range ds.Y {
		ev.Confusion[y][pred[i]]++
		if y == pred[i] {
			ev.Correct++
		}
	}
	if ds.N > 0 {
		ev.Accuracy = 100 * float64(ev.Correct) / float64(ds.N)
	}
	for c, row := range ev.Confusion {
		rows, predicted := 0, 0
		for p, n := range row {
			rows += n
			predicted += ev.Confusion[p][c]
		}
		if rows == 0 {
			continue
		}
		cs := ClassScore{Class: classes[c], Rows: rows, Recall: 100 * float64(row[c]) / float64(rows)}
		if predicted > 0 {
			cs.Precision = 100 * float64(row[c]) / float64(predicted)
		}
		ev.PerClass = append(ev.PerClass, cs)
		ev.Balanced += cs.Recall
	}
	if len(ev.PerClass) > 0 {
		ev.Balanced /= float64(len(ev.PerClass))
	}
	return ev, nil
}

// eachRow calls f for every row index below n, spread over workers
// goroutines (0: GOMAXPROCS), each taking every workers-th row; f must
// write only to its own row's slots.
func eachRow(n, workers int, f func(i int)) {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	var wg sync.WaitGroup
	for g := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < n; i += workers {
				f(i)
			}
		}()
	}
	wg.Wait()
}
