package baseline

import (
	"fmt"
	"runtime"
	"sync"

	"github.com/trit-iot/trit/inference"
	"github.com/trit-iot/trit/training/data"
	"github.com/trit-iot/trit/training/linear"
)

// Classifier predicts the class index of one raw (unscaled) input row.
// A Classifier is safe for concurrent use when every goroutine uses its
// own Predictor.
type Classifier interface {
	// NewPredictor returns a single-goroutine predictor with its own
	// scratch memory.
	NewPredictor() Predictor
	Classes() []string
	NumFeatures() int
}

// Predictor predicts one row at a time; see Classifier.
type Predictor interface {
	Predict(x []float32) (int, error)
}

// LinearModel is a feature map followed by full-precision linear SVMs:
// one for two classes (positive means class 1), else one per class.
type LinearModel struct {
	method  Method
	scaler  inference.Scaler
	fm      featureMap
	models  []*linear.Model
	classes []string
	d       int
}

// Classes returns the class labels, indexed like Predict's result.
func (m *LinearModel) Classes() []string { return m.classes }

// NumFeatures returns the input dimension.
func (m *LinearModel) NumFeatures() int { return m.d }

// NewPredictor returns a predictor with its own scratch memory.
func (m *LinearModel) NewPredictor() Predictor {
	return &linearPredictor{m: m, s: m.fm.newScratch(), xs: make([]float32, m.d), z: make([]float32, m.fm.dim())}
}

type linearPredictor struct {
	m     *LinearModel
	s     *scratch
	xs, z []float32
}

func (lp *linearPredictor) Predict(x []float32) (int, error) {
	m := lp.m
	if len(x) != m.d {
		return -1, fmt.Errorf("baseline: row has %d features, the model takes %d", len(x), m.d)
	}
	if err := m.scaler.Apply(lp.xs, x); err != nil {
		return -1, err
	}
	m.fm.mapRow(lp.z, lp.xs, lp.s)
	return decide(m.models, lp.z), nil
}

// decide returns the class of feature row z.
func decide(models []*linear.Model, z []float32) int {
	if len(models) == 1 {
		if models[0].Decision(z) > 0 {
			return 1
		}
		return 0
	}
	best, arg := 0.0, 0
	for c, mdl := range models {
		if v := mdl.Decision(z); c == 0 || v > best {
			best, arg = v, c
		}
	}
	return arg
}

// ternaryModel adapts an inference.Model (trit-ternary) to Classifier.
type ternaryModel struct{ m *inference.Model }

func (t ternaryModel) Classes() []string { return t.m.Classes() }
func (t ternaryModel) NumFeatures() int  { return t.m.NumFeatures() }
func (t ternaryModel) NewPredictor() Predictor {
	return ternaryPredictor(t)
}

// ternaryPredictor needs no scratch of its own: inference.Model pools its
// workspaces and Predict is safe for concurrent use.
type ternaryPredictor struct{ m *inference.Model }

func (tp ternaryPredictor) Predict(x []float32) (int, error) { return tp.m.Predict(nil, x) }

// Accuracy returns the percentage of rows of ds that cl classifies
// correctly, predicting in parallel. ds's classes must be cl's, in order.
func Accuracy(cl Classifier, ds *data.Dataset, workers int) (float64, error) {
	if ds.D != cl.NumFeatures() {
		return 0, fmt.Errorf("baseline: %s has %d features, the model takes %d", ds.Name, ds.D, cl.NumFeatures())
	}
	classes := cl.Classes()
	if len(ds.Classes) > len(classes) {
		return 0, fmt.Errorf("baseline: %s has %d classes, the model %d", ds.Name, len(ds.Classes), len(classes))
	}
	for i, c := range ds.Classes {
		if classes[i] != c {
			return 0, fmt.Errorf("baseline: %s class %d is %q, the model's is %q", ds.Name, i, c, classes[i])
		}
	}
	if ds.N == 0 {
		return 0, nil
	}
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	correct := make([]int, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for g := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pr := cl.NewPredictor()
			for i := g; i < ds.N; i += workers {
				c, err := pr.Predict(ds.Row(i))
				if err != nil {
					errs[g] = fmt.Errorf("%s row %d: %w", ds.Name, i, err)
					return
				}
				if int32(c) == ds.Y[i] {
					correct[g]++
				}
			}
		}()
	}
	wg.Wait()
	total := 0
	for g := range workers {
		if errs[g] != nil {
			return 0, errs[g]
		}
		total += correct[g]
	}
	return 100 * float64(total) / float64(ds.N), nil
}
