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
	Classes   []string
	Confusion [][]int // Confusion[true][predicted]
	Predicted []int32 // per row
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
	return ev, nil
}
