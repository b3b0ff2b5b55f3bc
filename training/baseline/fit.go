package baseline

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"time"

	"github.com/trit-iot/trit/inference"
	"github.com/trit-iot/trit/training"
	"github.com/trit-iot/trit/training/data"
	"github.com/trit-iot/trit/training/linear"
	"github.com/trit-iot/trit/training/ternary"
)

// Config describes one benchmark fit. A nil *Config means all defaults;
// zero fields mean the default.
type Config struct {
	P int // embedding columns; default 2048
	// Sigma and C fix the hyper-parameters; 0 means search the grid on a
	// validation split carved from the training data (never the test set).
	Sigma, C float64
	// SigmaGrid and CGrid default to the paper's 2⁻⁵…2⁵ and 10⁻³…10³.
	SigmaGrid, CGrid []float64
	Validation       float64 // held-out fraction for the search; default 0.2
	// SearchRows > 0 runs the search on a seeded, stratified subsample of
	// this many training rows (then fits on all rows): for large datasets.
	SearchRows int
	// MaxIter caps the linear SVM's passes (linear.Options.MaxIter); 0
	// means the solver's default.
	MaxIter int
	Seed    uint64 // seeds every random matrix, split and permutation
	Workers int    // 0 = GOMAXPROCS
	// Progress, if set, is told about the search: done of total grid points.
	Progress func(method Method, done, total int)
}

// ErrConfig reports an unusable Config or dataset.
var ErrConfig = errors.New("baseline: invalid configuration")

func (c *Config) withDefaults() (Config, error) {
	var v Config
	if c != nil {
		v = *c
	}
	if v.P == 0 {
		v.P = 2048
	}
	if len(v.SigmaGrid) == 0 {
		v.SigmaGrid = training.PaperSigmaGrid()
	}
	if len(v.CGrid) == 0 {
		v.CGrid = training.PaperCGrid()
	}
	if v.Validation == 0 {
		v.Validation = 0.2
	}
	if v.Workers <= 0 {
		v.Workers = runtime.GOMAXPROCS(0)
	}
	switch {
	case v.P < 1 || v.P > inference.MaxP:
		return v, fmt.Errorf("%w: p = %d, want 1..%d", ErrConfig, v.P, inference.MaxP)
	case !(v.Sigma >= 0) || math.IsInf(v.Sigma, 0):
		return v, fmt.Errorf("%w: σ = %g", ErrConfig, v.Sigma)
	case !(v.C >= 0) || math.IsInf(v.C, 0):
		return v, fmt.Errorf("%w: C = %g", ErrConfig, v.C)
	case !(v.Validation > 0 && v.Validation < 1):
		return v, fmt.Errorf("%w: validation fraction %g, want (0, 1)", ErrConfig, v.Validation)
	case v.SearchRows < 0 || v.MaxIter < 0:
		return v, fmt.Errorf("%w: negative search rows or max-iter", ErrConfig)
	}
	for _, g := range [][]float64{v.SigmaGrid, v.CGrid} {
		for _, x := range g {
			if !(x > 0) || math.IsInf(x, 0) {
				return v, fmt.Errorf("%w: grid value %g", ErrConfig, x)
			}
		}
	}
	return v, nil
}

// Result is a fitted method.
type Result struct {
	Method     Method
	Classifier Classifier
	Sigma, C   float64
	// Search is the grid with validation accuracies (nil when σ and C were
	// given); SearchRows is the number of rows it was carved from.
	Search     []training.SearchPoint
	SearchRows int
	// SearchSeconds is the wall time of the search; TrainSeconds that of
	// the final fit on all training rows with the chosen σ and C
	// (scaling, embedding and solving).
	SearchSeconds, TrainSeconds float64
	Vectors                     int    // weight vectors: 1 for two classes, else one per class
	Memory                      Memory // the paper's accounting
	// Converged is false if some linear SVM stopped at MaxIter.
	Converged bool
	// trit-ternary only: the model spec (for the real bundle size), the
	// non-zero coefficient count and the solver's objective history.
	Spec    *inference.ModelSpec
	NonZero int
	History [][]ternary.Step
}

// Fit trains method m on train with cfg.
func Fit(m Method, train *data.Dataset, cfg *Config) (*Result, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if m < RFE || m > TritTernary {
		return nil, ErrMethod
	}
	if train.N < 2 || len(train.Classes) < 2 {
		return nil, fmt.Errorf("%w: %s has %d rows and %d classes; need at least 2 of each", ErrConfig, train.Name, train.N, len(train.Classes))
	}
	res := &Result{Method: m, Sigma: c.Sigma, C: c.C, Vectors: inference.Vectors(len(train.Classes)), Converged: true}
	res.Memory = PaperMemory(m, train.D, c.P, res.Vectors)
	if c.Sigma == 0 || c.C == 0 {
		set := train
		if c.SearchRows > 0 && c.SearchRows < train.N {
			_, set, err = data.SplitCount(train, c.SearchRows, c.Seed^0x5ea4c4)
			if err != nil {
				return nil, err
			}
		}
		res.SearchRows = set.N
		t0 := time.Now()
		if m == TritTernary {
			err = searchTernary(set, &c, res)
		} else {
			err = searchLinear(m, set, &c, res)
		}
		if err != nil {
			return nil, err
		}
		res.SearchSeconds = time.Since(t0).Seconds()
	}
	t0 := time.Now()
	if m == TritTernary {
		err = fitTernary(train, &c, res)
	} else {
		err = fitLinear(m, train, &c, res)
	}
	if err != nil {
		return nil, err
	}
	res.TrainSeconds = time.Since(t0).Seconds()
	return res, nil
}

// ternaryConfig is the paper's trit-ternary: fixed p, min-max scaling like
// every other method here, and the full σ×C grid at that p.
func ternaryConfig(c *Config, sigma, cv float64) *training.Config {
	return &training.Config{P: c.P, Sigma: sigma, C: cv, SigmaGrid: c.SigmaGrid, CGrid: c.CGrid,
		Validation: c.Validation, Seed: c.Seed, Workers: c.Workers, Search: "grid", Scaling: "minmax"}
}

func searchTernary(set *data.Dataset, c *Config, res *Result) error {
	tc := ternaryConfig(c, c.Sigma, c.C)
	if c.Progress != nil {
		tc.Progress = func(e training.Event) {
			if e.Stage == "search" {
				c.Progress(TritTernary, e.Done, e.Total)
			}
		}
	}
	r, err := training.Train(set, tc)
	if err != nil {
		return err
	}
	res.Sigma, res.C, res.Search = r.Sigma, r.C, r.Search
	return nil
}

func fitTernary(train *data.Dataset, c *Config, res *Result) error {
	r, err := training.Train(train, ternaryConfig(c, res.Sigma, res.C))
	if err != nil {
		return err
	}
	res.Classifier = ternaryModel{r.Model}
	res.Spec, res.NonZero, res.History = r.Spec, r.NonZero, r.History
	return nil
}

// searchLinear fills res.Sigma, res.C and res.Search from a grid search on
// the validation folds training.Train scores trit on for the same
// configuration (training.ValidationFolds), so every method sees the same
// rows; a point's accuracy is its mean over the folds.
func searchLinear(m Method, set *data.Dataset, c *Config, res *Result) error {
	folds, _, err := training.ValidationFolds(set, ternaryConfig(c, c.Sigma, c.C))
	if err != nil {
		return fmt.Errorf("baseline: validation folds: %w", err)
	}
	type split struct {
		tr, va *data.Dataset
		sc     inference.Scaler
	}
	splits := make([]split, len(folds))
	for i, f := range folds {
		tr, va := set.Subset(f.Train), set.Subset(f.Valid)
		if tr.N < 2 || va.N < 1 {
			return fmt.Errorf("%w: %d rows are too few for a validation split", ErrConfig, set.N)
		}
		splits[i] = split{tr, va, data.FitScaler(tr)}
	}
	sigmas, cs := c.SigmaGrid, c.CGrid
	switch {
	case c.Sigma != 0:
		sigmas = []float64{c.Sigma}
	case m == BJLE:
		// sign(Rᵀx) does not change when R is scaled: σ has no effect.
		sigmas = []float64{1}
	}
	if c.C != 0 {
		cs = []float64{c.C}
	}
	total, done, best := len(sigmas)*len(cs), 0, -1.0
	for _, sigma := range sigmas {
		type features struct{ ztr, zva []float32 }
		zs := make([]features, len(splits))
		for i, sp := range splits {
			fm, err := newMap(m, sp.tr.D, c.P, sigma, c.Seed)
			if err != nil {
				return err
			}
			if zs[i].ztr, err = featureMatrix(fm, &sp.sc, sp.tr.X, sp.tr.N, sp.tr.D, c.Workers); err != nil {
				return err
			}
			if zs[i].zva, err = featureMatrix(fm, &sp.sc, sp.va.X, sp.va.N, sp.va.D, c.Workers); err != nil {
				return err
			}
		}
		for _, cv := range cs {
			t0 := time.Now()
			acc := 0.0
			for i, sp := range splits {
				models, _, err := trainLinear(zs[i].ztr, sp.tr, c.P, cv, c)
				if err != nil {
					return err
				}
				correct := 0
				for r := range sp.va.N {
					if int32(decide(models, zs[i].zva[r*c.P:(r+1)*c.P])) == sp.va.Y[r] {
						correct++
					}
				}
				acc += 100 * float64(correct) / float64(sp.va.N) / float64(len(splits))
			}
			pt := training.SearchPoint{Sigma: sigma, C: cv, Accuracy: acc, FitSeconds: time.Since(t0).Seconds()}
			res.Search = append(res.Search, pt)
			if pt.Accuracy > best { // ties keep the earlier (smaller σ, then C)
				best, res.Sigma, res.C = pt.Accuracy, sigma, cv
			}
			done++
			if c.Progress != nil {
				c.Progress(m, done, total)
			}
		}
	}
	return nil
}

func fitLinear(m Method, train *data.Dataset, c *Config, res *Result) error {
	sc := data.FitScaler(train)
	fm, err := newMap(m, train.D, c.P, res.Sigma, c.Seed)
	if err != nil {
		return err
	}
	z, err := featureMatrix(fm, &sc, train.X, train.N, train.D, c.Workers)
	if err != nil {
		return err
	}
	models, conv, err := trainLinear(z, train, c.P, res.C, c)
	if err != nil {
		return err
	}
	res.Converged = conv
	res.Classifier = &LinearModel{method: m, scaler: sc, fm: fm, models: models, classes: train.Classes, d: train.D}
	return nil
}

// trainLinear trains the linear SVM(s) on the feature matrix z of ds's rows.
func trainLinear(z []float32, ds *data.Dataset, p int, cv float64, c *Config) ([]*linear.Model, bool, error) {
	opt := &linear.Options{C: cv, Bias: 1, Seed: c.Seed, MaxIter: c.MaxIter}
	var models []*linear.Model
	if len(ds.Classes) == 2 {
		y := make([]int8, ds.N)
		for i, l := range ds.Y {
			y[i] = -1
			if l == 1 {
				y[i] = 1
			}
		}
		mdl, err := linear.Train(z, ds.N, p, y, opt)
		if err != nil {
			return nil, false, err
		}
		models = []*linear.Model{mdl}
	} else {
		var err error
		if models, err = linear.TrainOneVsRest(z, ds.N, p, ds.Y, len(ds.Classes), opt); err != nil {
			return nil, false, err
		}
	}
	conv := true
	for _, mdl := range models {
		conv = conv && mdl.Converged
	}
	return models, conv, nil
}
