// Package training learns trit models: min-max scaling, the Fastfood BCSIK
// embedding of package inference, and one-vs-all ternary classifiers
// (package ternary) initialised from a linear SVM (package linear), with
// hyper-parameter search on a validation split. Loaders and splits are in
// package data.
package training

import (
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/trit-iot/trit/inference"
	"github.com/trit-iot/trit/inference/bundle"
	"github.com/trit-iot/trit/training/data"
	"github.com/trit-iot/trit/training/linear"
	"github.com/trit-iot/trit/training/ternary"
)

// Result is a trained model and how it was obtained.
type Result struct {
	Spec         *inference.ModelSpec
	Model        *inference.Model
	Sigma, C     float64
	Lambda       float64          // the ternary objective's λ = 1/(2nC) on the final training set
	TrainSeconds float64          // wall time of Train, search included
	Search       []SearchPoint    // the σ×C grid with validation accuracy; nil without search
	History      [][]ternary.Step // per weight vector: the solver's objective per step
	NonZero      int              // non-zero ternary coefficients over all weight vectors
}

// SearchPoint is one grid point of the hyper-parameter search.
type SearchPoint struct {
	Sigma      float64 `json:"sigma"`
	C          float64 `json:"c"`
	Accuracy   float64 `json:"accuracy"` // percent correct on the validation split
	NonZero    int     `json:"nonzero"`
	FitSeconds float64 `json:"fit_seconds"`
}

// prepared is a training set scaled and ready to embed.
type prepared struct {
	ds *data.Dataset
	xs []float32 // scaled rows
	sc inference.Scaler
}

func prepare(ds *data.Dataset, sc inference.Scaler) (*prepared, error) {
	xs, err := scaleRows(sc, ds.X, ds.N, ds.D)
	if err != nil {
		return nil, err
	}
	return &prepared{ds: ds, xs: xs, sc: sc}, nil
}

// Train learns a ternary model from ds. See Config for the defaults.
func Train(ds *data.Dataset, cfg *Config) (*Result, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if ds.N < 2 || len(ds.Classes) < 2 {
		return nil, fmt.Errorf("%w: %s has %d rows and %d classes; need at least 2 of each", ErrConfig, ds.Name, ds.N, len(ds.Classes))
	}
	start := time.Now()
	res := &Result{Sigma: c.Sigma, C: c.C}
	if c.Sigma == 0 || c.C == 0 {
		if err := search(ds, &c, res); err != nil {
			return nil, err
		}
	}
	// The scaler is snapped to the bundle's compact (float16) form before
	// anything is fitted, so the model a bundle ships is exactly the model
	// trained and evaluated here.
	full, err := prepare(ds, bundle.CompactScaler(data.FitScaler(ds)))
	if err != nil {
		return nil, err
	}
	spec, hist, err := fit(full, res.Sigma, res.C, &c, "train")
	if err != nil {
		return nil, err
	}
	m, err := inference.New(spec)
	if err != nil {
		return nil, fmt.Errorf("training: exported model does not load: %w", err)
	}
	res.Spec, res.Model, res.History = spec, m, hist
	res.Lambda = 1 / (2 * float64(ds.N) * res.C)
	res.NonZero = countNonZero(spec)
	res.TrainSeconds = time.Since(start).Seconds()
	return res, nil
}

// search fills res.Sigma, res.C and res.Search from a grid search on a
// stratified validation split of ds.
func search(ds *data.Dataset, c *Config, res *Result) error {
	tr, va, err := data.Split(ds, c.Validation, c.Seed^0x5eed)
	if err != nil {
		return fmt.Errorf("training: validation split: %w", err)
	}
	if tr.N < 2 || va.N < 1 {
		return fmt.Errorf("%w: %d rows are too few for a validation split", ErrConfig, ds.N)
	}
	p, err := prepare(tr, bundle.CompactScaler(data.FitScaler(tr)))
	if err != nil {
		return err
	}
	sigmas, cs := c.SigmaGrid, c.CGrid
	if c.Sigma != 0 {
		sigmas = []float64{c.Sigma}
	}
	if c.C != 0 {
		cs = []float64{c.C}
	}
	total, done := len(sigmas)*len(cs), 0
	best := -1.0
	for _, sigma := range sigmas {
		for _, cv := range cs {
			t0 := time.Now()
			spec, _, err := fit(p, sigma, cv, c, "")
			if err != nil {
				return err
			}
			m, err := inference.New(spec)
			if err != nil {
				return err
			}
			ev, err := Evaluate(m, va, c.Workers)
			if err != nil {
				return err
			}
			pt := SearchPoint{Sigma: sigma, C: cv, Accuracy: ev.Accuracy, NonZero: countNonZero(spec), FitSeconds: time.Since(t0).Seconds()}
			res.Search = append(res.Search, pt)
			// Strictly better only: among ties the earlier grid point (the
			// smaller σ, then the smaller C) is kept.
			if pt.Accuracy > best {
				best, res.Sigma, res.C = pt.Accuracy, sigma, cv
			}
			done++
			c.report("search", done, total)
		}
	}
	return nil
}

// fit trains one model with fixed σ and C on prepared data. stage names the
// progress stage ("" for none).
func fit(p *prepared, sigma, cv float64, c *Config, stage string) (*inference.ModelSpec, [][]ternary.Step, error) {
	ds := p.ds
	ts := inference.TransformSpec{Generator: inference.GeneratorV1, Seed: c.Seed, Sigma: sigma, D: ds.D, P: c.P}
	tr, err := inference.NewTransform(ts)
	if err != nil {
		return nil, nil, err
	}
	cols := embedColumns(tr, p.xs, ds.N, ds.D, c.Workers)
	nv := inference.Vectors(len(ds.Classes))
	lambda := 1 / (2 * float64(ds.N) * cv)

	inits, err := initialWeights(cols, ds, nv, lambda, c)
	if err != nil {
		return nil, nil, err
	}
	weights := make([][]int8, nv)
	alphas := make([]float32, nv)
	hist := make([][]ternary.Step, nv)
	errs := make([]error, nv)
	// Weight vectors in parallel; each solve's result does not depend on
	// the worker count, so neither does the model.
	var wg sync.WaitGroup
	sem := make(chan struct{}, c.Workers)
	var mu sync.Mutex
	done := 0
	for v := range nv {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			y := classSigns(ds, nv, v)
			opt := &ternary.Options{Lambda: lambda, Loss: c.Loss, Reg: c.Reg, Tol: c.Tol, MaxRounds: c.MaxRounds,
				Workers: max(1, c.Workers/min(nv, c.Workers))}
			r, err := ternary.Solve(cols, ternary.LabelBits(y), inits[v].w, inits[v].alpha, opt)
			if err != nil {
				errs[v] = err
				return
			}
			weights[v], alphas[v], hist[v] = r.W, float32(r.Alpha), r.History
			if stage != "" {
				mu.Lock()
				done++
				c.report(stage, done, nv)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, nil, err
		}
	}
	spec, err := inference.NewTernarySpec(ts, p.sc, ds.Classes, weights, alphas)
	if err != nil {
		return nil, nil, err
	}
	spec.Features = ds.Features
	return spec, hist, nil
}

// classSigns returns the ±1 labels of weight vector v: for two classes the
// single vector separates class 1 (+1) from class 0; otherwise class v
// against the rest.
func classSigns(ds *data.Dataset, nv, v int) []int8 {
	pos := int32(v)
	if nv == 1 {
		pos = 1
	}
	y := make([]int8, ds.N)
	for i, c := range ds.Y {
		y[i] = -1
		if c == pos {
			y[i] = 1
		}
	}
	return y
}

type start struct {
	w     []int8
	alpha float64
}

// initialWeights returns each weight vector's starting point. For "svm" (the
// paper's): a linear SVM with the same λ on InitRows random rows, then
// w = sign(w_full), α = ‖w_full‖₁/p. For "random": uniform ternary weights
// and α = 1/p.
func initialWeights(cols *ternary.Columns, ds *data.Dataset, nv int, lambda float64, c *Config) ([]start, error) {
	p := cols.P
	out := make([]start, nv)
	rnd := newSplitMix(c.Seed ^ 0x1417)
	if c.Init == "random" {
		for v := range out {
			w := make([]int8, p)
			for j := range w {
				w[j] = int8(rnd.intn(3)) - 1
			}
			out[v] = start{w: w, alpha: 1 / float64(p)}
		}
		return out, nil
	}
	m := min(c.InitRows, ds.N)
	rows := rnd.sample(ds.N, m)
	x := denseSigns(cols, rows)
	labels := make([]int32, m)
	for k, i := range rows {
		labels[k] = ds.Y[i]
	}
	// Only the sign pattern of w_full is used, so a loose solve is enough;
	// the pass cap keeps large C (nearly hard margin) from running long.
	opt := &linear.Options{C: linear.CFromLambda(lambda, m), Seed: c.Seed, MaxIter: 100}
	var models []*linear.Model
	var err error
	if nv == 1 {
		y := make([]int8, m)
		for k, l := range labels {
			y[k] = -1
			if l == 1 {
				y[k] = 1
			}
		}
		var mdl *linear.Model
		mdl, err = linear.Train(x, m, p, y, opt)
		models = []*linear.Model{mdl}
	} else {
		models, err = linear.TrainOneVsRest(x, m, p, labels, nv, opt)
	}
	if err != nil {
		return nil, fmt.Errorf("training: linear SVM initialisation: %w", err)
	}
	for v, mdl := range models {
		w := make([]int8, p)
		var l1 float64
		for j, f := range mdl.W {
			l1 += math.Abs(f)
			switch {
			case f > 0:
				w[j] = 1
			case f < 0:
				w[j] = -1
			}
		}
		alpha := l1 / float64(p)
		if !(alpha > 0) {
			alpha = 1 / float64(p)
		}
		out[v] = start{w: w, alpha: alpha}
	}
	return out, nil
}

func countNonZero(spec *inference.ModelSpec) int {
	n := 0
	w := make([]int8, len(spec.Kept))
	for v := range spec.Sign {
		inference.UnpackTernary(w, spec.Sign[v], spec.NonZero[v])
		for _, x := range w {
			if x != 0 {
				n++
			}
		}
	}
	return n
}
