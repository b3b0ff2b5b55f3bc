// Package training learns trit models: min-max scaling, the Fastfood BCSIK
// embedding of package inference, and one-vs-all ternary classifiers
// (package ternary) initialised from a linear SVM (package linear), with
// hyper-parameter search on a validation split. Loaders and splits are in
// package data.
package training

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/trit-iot/trit/inference"
	"github.com/trit-iot/trit/training/data"
	"github.com/trit-iot/trit/training/internal/splitmix"
	"github.com/trit-iot/trit/training/linear"
	"github.com/trit-iot/trit/training/ternary"
	"github.com/trit-iot/trit/training/trees"
)

// Result is a trained model and how it was obtained.
type Result struct {
	Spec         *inference.ModelSpec
	Model        *inference.Model
	Sigma, C     float64
	Structure    Structure        // the embedding's structure: threshold bits, projection, random features
	Lambda       float64          // the ternary objective's λ = 1/(2nC) on the final training set
	TrainSeconds float64          // wall time of Train, search included
	FitSeconds   float64          // wall time of the final fit alone
	Search       []SearchPoint    // every candidate the search evaluated; nil without search
	Validation   string           // how candidates were validated (e.g. "latest 20% of rows")
	Selected     *SearchPoint     // the chosen candidate's validation scores; nil without search
	History      [][]ternary.Step // per weight vector: the solver's objective per step
	NonZero      int              // non-zero ternary coefficients over all weight vectors
	Notes        []string         // what the search decided and why, for the user
	Warnings     []string         // why the validation score may not hold on later data (see warnings.go)
	// CalibrationError is the expected calibration error, percent, that
	// training states for the shipped confidence: measured on held-out
	// rows the calibration was not fitted on (calibrate.go); 0 without a
	// calibration.
	CalibrationError float64

	held     [][]heldOut     // the chosen candidate's held-out predictions per fold (search), for the calibration
	heldKind foldKind        // what the folds are: later periods, other groups or a sample
	majority majority        // always answering the most common class, on the validation folds
	valSets  []*data.Dataset // the search's validation rows, for the novelty threshold
}

// Structure is the shape of a model's embedding besides σ: threshold bits
// per input feature, principal directions before the random transform, and
// random features (see inference.ModelSpec).
type Structure struct {
	Thresholds int  `json:"thresholds"` // per feature, at most
	Projection int  `json:"projection"` // principal directions; 0 = the raw scaled input
	P          int  `json:"p"`          // random features
	Binary     bool `json:"binary"`     // weights in {−1, +1} rather than {−1, 0, +1}
	// ThresholdWeight ρ weighs threshold bits against random features
	// (inference.ModelSpec.ThresholdWeight); 0 means 1.
	ThresholdWeight int `json:"threshold_weight,omitempty"`
	// Trees is the number of boosted oblivious trees of Depth levels whose
	// leaves are embedding columns (inference.Trees); 0 = none.
	Trees int `json:"trees,omitempty"`
	Depth int `json:"depth,omitempty"`
	// Planes is the columns per tree leaf (inference.Trees.Planes): with B
	// planes a leaf's weight is an integer in ±(2^B−1); 0 means 1.
	Planes int `json:"planes,omitempty"`
}

// Embedding returns the structure's kind: Trees (boosted oblivious
// trees' leaves), Projection (random features on principal directions),
// Thresholds (threshold bits alone), Mix (threshold bits beside random
// features) or Kernel (random features alone).
func (s Structure) Embedding() Kind {
	switch {
	case s.Trees > 0:
		return Trees
	case s.Projection > 0:
		return Projection
	case s.P == 0:
		return Thresholds
	case s.Thresholds > 0:
		return Mix
	}
	return Kernel
}

// SearchPoint is one candidate of the hyper-parameter search.
type SearchPoint struct {
	Structure
	Sigma    float64 `json:"sigma"`
	C        float64 `json:"c"`
	Stage    int     `json:"stage"`    // 1 = smallest; the last stage fits at the final size
	Rows     int     `json:"rows"`     // training rows of the fit(s)
	Accuracy float64 `json:"accuracy"` // percent correct on the held-out rows
	Balanced float64 `json:"balanced"` // balanced accuracy (mean per-class recall), percent; the mean over folds
	// Score is the selection criterion: Balanced less half its spread
	// across folds (see selection).
	Score      float64   `json:"score"`
	Spread     float64   `json:"spread,omitempty"` // standard deviation of the folds' balanced accuracy, points
	SE         float64   `json:"se"`               // standard error of Score, points
	Folds      []float64 `json:"folds,omitempty"`  // balanced accuracy per validation fold, percent
	Bytes      int       `json:"bytes"`            // size of the candidate's bundle (the largest of its folds' fits)
	Loss       float64   `json:"loss"`             // class-balanced hinge loss: the tie-break
	Degenerate string    `json:"degenerate,omitempty"`
	NonZero    int       `json:"nonzero"`
	FitSeconds float64   `json:"fit_seconds"`
}

// prepared is a training set with its fitted scaler, ready to fit the
// learned parts of an embedding.
type prepared struct {
	ds *data.Dataset
	sc inference.Scaler

	sample []float32                          // scaled rows of a subset, for fitting thresholds and projection
	rows   int                                // rows in sample
	cache  map[Structure]*inference.ModelSpec // learned parts by structure (P = 0)
	forest map[int]*trees.Model               // boosted trees by depth (the most asked for so far)
	asked  map[int]int                        // the trees asked of each depth's last boosting
	// treeCuts are the boosting's cuts, fitted on the sample of seed
	// treeCutsSeed.
	treeCuts     [][]float32
	treeCutsSeed uint64
	// stopOn, for a validation fold, is its held-out rows: boosting stops
	// early on them (see trees).
	stopOn *data.Dataset

	// mu serialises features and leafStart, which the search's parallel
	// tasks call; the caches above are filled under it.
	mu sync.Mutex
}

// fitRows bounds the rows thresholds are fitted on (quantiles of 20,000
// rows are within ±0.7% of rank of the full data's); the projection uses
// at most projectionRows of them.
const (
	fitRows        = 20000
	projectionRows = 10000
)

func prepare(ds *data.Dataset, sc inference.Scaler) (*prepared, error) {
	return &prepared{ds: ds, sc: sc, cache: map[Structure]*inference.ModelSpec{}, forest: map[int]*trees.Model{}, asked: map[int]int{}}, nil
}

// scaledSample returns the scaled rows of a seeded subset of at most
// fitRows rows, in row order.
func (p *prepared) scaledSample(seed uint64) ([]float32, int, error) {
	if p.sample != nil {
		return p.sample, p.rows, nil
	}
	rows, out, err := p.scaledRows(fitRows, seed^seedScaledRows)
	if err != nil {
		return nil, 0, err
	}
	p.sample, p.rows = out, len(rows)
	return out, len(rows), nil
}

// scaledRows returns the indexes of a subset of at most limit rows, in row
// order (every row when there are no more; else a sample seeded with
// seed), and those rows scaled, row-major.
func (p *prepared) scaledRows(limit int, seed uint64) ([]int, []float32, error) {
	ds := p.ds
	rows := make([]int, ds.N)
	for i := range rows {
		rows[i] = i
	}
	if ds.N > limit {
		rows = splitmix.New(seed).Sample(ds.N, limit)
	}
	out := make([]float32, len(rows)*ds.D)
	for k, i := range rows {
		if err := p.sc.Apply(out[k*ds.D:(k+1)*ds.D], ds.Row(i)); err != nil {
			return nil, nil, err
		}
	}
	return rows, out, nil
}

// learned returns the fitted parts of structure v (thresholds, projection
// and trees) with the scaler, classes and feature names; no transform.
func (p *prepared) learned(v Structure, seed uint64) (*inference.ModelSpec, error) {
	key := Structure{Thresholds: v.Thresholds, Projection: v.Projection}
	l, ok := p.cache[key]
	if !ok {
		var err error
		if l, err = p.learnParts(key, seed); err != nil {
			return nil, err
		}
		p.cache[key] = l
	}
	if v.Trees == 0 {
		return l, nil
	}
	t, err := p.trees(v.Depth, v.Trees, seed)
	if err != nil {
		return nil, err
	}
	t.Planes = v.Planes
	spec := *l
	spec.Trees = t
	return &spec, nil
}

// learnParts fits structure v's thresholds and projection.
func (p *prepared) learnParts(v Structure, seed uint64) (*inference.ModelSpec, error) {
	ds := p.ds
	l := &inference.ModelSpec{Classes: ds.Classes, Features: ds.Features, Scaler: p.sc}
	xs, n, err := p.scaledSample(seed)
	if err != nil {
		return nil, err
	}
	l.Thresholds = fitThresholds(xs, n, ds.D, v.Thresholds)
	proj, err := fitProjection(xs, n, ds.D, v.Projection, projectionRows, seed)
	if err != nil {
		return nil, err
	}
	l.Projection = proj
	return l, nil
}

// features returns the embedding of structure v with kernel width σ: the
// scaler, the fitted thresholds and projection, and the transform spec.
func (p *prepared) features(v Structure, sigma float64, seed uint64) (*inference.ModelSpec, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	l, err := p.learned(v, seed)
	if err != nil {
		return nil, err
	}
	spec := *l
	if spec.NumThresholds() > 0 && v.ThresholdWeight > 1 {
		spec.ThresholdWeight = int32(v.ThresholdWeight)
	}
	if v.P == 0 {
		spec.Projection = nil
		return &spec, nil
	}
	in := p.ds.D
	if spec.Projection != nil {
		in = spec.Projection.Out()
	}
	spec.Transform = inference.TransformSpec{Generator: inference.GeneratorV1, Seed: seed, Sigma: sigma, D: in, P: v.P}
	return &spec, nil
}

// Train learns a ternary model from ds. See Config for the defaults.
func Train(ds *data.Dataset, cfg *Config) (*Result, error) {
	return TrainContext(context.Background(), ds, cfg)
}

// ErrCancelled is returned (wrapped with the context's error) when the
// context of TrainContext is cancelled.
var ErrCancelled = errors.New("training: cancelled")

// TrainContext is Train that stops soon after ctx is cancelled — between
// two fits of the search, or between two weight vectors of a fit — and
// then returns an error wrapping ErrCancelled.
func TrainContext(ctx context.Context, ds *data.Dataset, cfg *Config) (*Result, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if ds.N < 2 || len(ds.Classes) < 2 {
		return nil, fmt.Errorf("%w: %s has %d rows and %d classes; need at least 2 of each", ErrConfig, ds.Name, ds.N, len(ds.Classes))
	}
	c.ctx = ctx
	start := time.Now()
	res := &Result{Sigma: c.Sigma, C: c.C}
	if ds.Missing > 0 {
		rows := 0
		for i := range ds.N {
			if slices.ContainsFunc(ds.Row(i), func(v float32) bool { return v != v }) {
				rows++
			}
		}
		res.Notes = append(res.Notes, fmt.Sprintf("%d missing values in %d of the %d rows take the middle of their feature's range (as on a gateway)", ds.Missing, rows, ds.N))
	}
	if ds.Unlabelled > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("%d rows without a label were left out", ds.Unlabelled))
	}
	if c.validatedForward(ds) {
		res.Warnings = append(res.Warnings, stuckWarnings(ds)...)
	}
	// The scaler is snapped to the bundle's compact (float16) form before
	// anything is fitted, so the model a bundle ships is exactly the model
	// trained and evaluated here.
	fitSet := ds
	if c.MaxFitRows > 0 && ds.N > c.MaxFitRows {
		if _, fitSet, err = data.SplitCount(ds, c.MaxFitRows, c.Seed^seedFitRows); err != nil {
			return nil, err
		}
		res.Notes = append(res.Notes, fmt.Sprintf("weights fitted on a %d-row stratified subsample of the %d training rows (MaxFitRows)", fitSet.N, ds.N))
	}
	full, err := prepare(fitSet, c.fitScaler(ds))
	if err != nil {
		return nil, err
	}
	structures, err := c.structures(full)
	if err != nil {
		return nil, err
	}
	res.Structure = structures[0]
	if c.Sigma == 0 || c.C == 0 || len(structures) > 1 {
		if err := search(ds, &c, structures, res); err != nil {
			return nil, err
		}
	}
	if err := c.cancelled(); err != nil {
		return nil, err
	}
	// The search's folds and fits are garbage now; collect them before the
	// final fit allocates the largest embedding of all.
	runtime.GC()
	t0 := time.Now()
	// C means the same at every row count (see search): λ = 1/(2·N·C)
	// with N all of ds's rows.
	cfit := res.C * float64(ds.N) / float64(fitSet.N)
	spec, hist, err := fit(full, res.Structure, res.Sigma, cfit, &c, "train")
	if err != nil {
		return nil, err
	}
	if spec, err = smallerKept(spec); err != nil {
		return nil, err
	}
	if spec.Fingerprint, err = fingerprint(spec, ds, c.Seed, c.Workers); err != nil {
		return nil, err
	}
	m, err := inference.New(spec)
	if err != nil {
		return nil, fmt.Errorf("training: exported model does not load: %w", err)
	}
	res.Spec, res.Model, res.History = spec, m, hist
	if c.UnknownTarget > 0 {
		// Decision offsets ship in the calibration section, and move the
		// held-out predictions it is fitted on (offsets.go).
		var offsets []int32
		fallback := c.Selection.Fallback == "majority" && res.fallsBack()
		if (c.Selection.Offsets || fallback) && res.held != nil {
			maj := res.majority
			if fallback {
				// Right as often as the constant, not 10 points of
				// balance bought with accuracy: the constant was ahead on
				// every fold.
				maj = maj.accuracyOnly()
			}
			held := slices.Concat(res.held...)
			beta, before, after := fitOffsets(held, len(ds.Classes), c.Selection.Metric, maj)
			if fallback && beta != nil && !admitted(held, beta, len(ds.Classes), maj) {
				// The offsets gained balance but never reached the
				// constant (with more classes, the folds' common classes
				// can differ): that is not what the fallback is for.
				beta = nil
			}
			if beta != nil {
				if offsets = rawOffsets(beta, spec.Alpha); offsets != nil {
					applyOffsets(res.held, beta)
					if fallback {
						res.Notes = append(res.Notes, fallbackNote(res.majority, offsets, res.held))
					} else {
						res.Notes = append(res.Notes, offsetNote(offsets, before, after, c.Selection.Metric))
					}
				}
			}
		}
		if err := calibrateResult(res, c.UnknownTarget, c.Workers, offsets); err != nil {
			return nil, fmt.Errorf("training: calibrating the model: %w", err)
		}
	}
	res.held, res.valSets = nil, nil
	if res.C > 0 {
		res.Lambda = 1 / (2 * float64(ds.N) * res.C)
	}
	res.NonZero = countNonZero(spec)
	res.FitSeconds = time.Since(t0).Seconds()
	res.TrainSeconds = time.Since(start).Seconds()
	return res, nil
}

// fit trains one model with fixed σ and C on prepared data, over the
// embedding structure v. stage names the progress stage ("" for none).
func fit(p *prepared, v Structure, sigma, cv float64, c *Config, stage string) (*inference.ModelSpec, [][]ternary.Step, error) {
	base, err := p.features(v, sigma, c.Seed)
	if err != nil {
		return nil, nil, err
	}
	cols, err := embedRows(base, p.ds, c.Workers)
	if err != nil {
		return nil, nil, err
	}
	return fitWeights(base, p.leafStart(base), cols, p.ds, cv, v.Binary, c, stage)
}

// fitWeights learns the ternary weights over the embedding cols of ds's rows
// and completes base into a model. leaves, when base has trees, is the
// boosting's model of them: the solver starts the leaf weights from it.
func fitWeights(base *inference.ModelSpec, leaves *trees.Model, cols *ternary.Columns, ds *data.Dataset, cv float64, binary bool, c *Config, stage string) (*inference.ModelSpec, [][]ternary.Step, error) {
	nv := inference.Vectors(len(ds.Classes))
	treesOnly := leaves != nil && c.Init == "svm" && base.NumThresholds() == 0 && base.Transform.P == 0
	lambda := 1 / (2 * float64(ds.N) * cv)
	full := cols.P
	cols, solved := emptyLeavesDropped(base, cols)

	// Threshold and tree columns (the first NT + NL) count ρ times in every
	// score, tree plane b's 2^b·ρ times.
	var mult []int32
	if rho, planes := max(base.ThresholdWeight, 1), base.Trees.NumPlanes(); rho > 1 || planes > 1 {
		nt, nl := base.NumThresholds(), base.Trees.Leaves()
		mult = make([]int32, cols.P)
		for j, col := range solved {
			switch {
			case col >= base.AxisColumns():
				mult[j] = 1
			case col >= nt:
				mult[j] = rho << ((col - nt) / nl)
			default:
				mult[j] = rho
			}
		}
	}
	var inits []start
	if treesOnly {
		// Tree leaves alone: leafStarts sets every weight and α, so the
		// linear SVM would be fitted for nothing.
		inits = make([]start, nv)
		for v := range inits {
			inits[v] = start{w: make([]int8, cols.P), alpha: 1}
		}
	} else {
		var err error
		if inits, err = initialWeights(cols, mult, ds, nv, lambda, c); err != nil {
			return nil, nil, err
		}
		if int64(min(c.InitRows, ds.N))*int64(cols.P)*4 > 64<<20 {
			// The start's dense signs (mnist: 167 MB) are garbage now:
			// collect them before the solver's work, not beside the next
			// fit's.
			runtime.GC()
		}
	}
	if leaves != nil && c.Init == "svm" {
		leafStarts(inits, leaves, solved, base, binary)
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
			if err := c.cancelled(); err != nil {
				errs[v] = err
				return
			}
			y := classSigns(ds, nv, v)
			opt := &ternary.Options{Lambda: lambda, Loss: c.Loss, Reg: c.Reg, Tol: c.Tol, MaxRounds: c.MaxRounds,
				Binary: binary, Mult: mult, Workers: max(1, c.Workers/min(nv, c.Workers))}
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
	if len(solved) < full {
		for v, w := range weights {
			all := make([]int8, full)
			for j, col := range solved {
				all[col] = w[j]
			}
			weights[v] = all
		}
	}
	spec, err := inference.NewSpec(base, weights, alphas)
	if err != nil {
		return nil, nil, err
	}
	return spec, hist, nil
}

// leafStarts replaces the starting weights of tree-leaf columns (solved[j]
// is column j's embedding column) with the boosting's own model, quantised:
// for vector v, score v's leaf values (the single score, positive meaning
// class 1, for two classes). A linear SVM's signs over thousands of one-hot
// leaf columns leave the solver at a point it cannot leave by
// single-coordinate moves — on wall-following the rarest class (6% of
// rows) was never predicted — while the boosting's values are a model of
// the right shape already.
//
// An embedding bit means ±1, so a tree adds 2·w[leaf] − Σ_l w[l] to a
// score, not w[leaf]: leaf values u[l] (the boosting's, with its base score
// spread over the trees) are reproduced exactly by w[l] = (u[l] + m)/2
// with m = −Σ_l u[l]/(n−2) over the tree's n solved leaves. Those w are
// rounded to the integers the planes can hold (±(2^B−1); odd ones for
// binary weights) at the per-vector scale that minimises the squared
// rounding error, written into the planes from the highest, and the start's
// α is that scale (over ρ). With one ternary plane the smaller half of the
// leaves by magnitude round to 0.
func leafStarts(inits []start, leaves *trees.Model, solved []int, base *inference.ModelSpec, binary bool) {
	nt, nl := base.NumThresholds(), leaves.Trees.Leaves()
	planes, depth := base.Trees.NumPlanes(), leaves.Trees.Depth
	count := leaves.Trees.Count()
	rho := float64(max(base.ThresholdWeight, 1))
	// solved index of each (plane, leaf) column, −1 if not solved
	at := make([]int, planes*nl)
	for i := range at {
		at[i] = -1
	}
	for j, col := range solved {
		if l := col - nt; l >= 0 && l < planes*nl {
			at[l] = j
		}
	}
	top := 1<<planes - 1
	for v := range inits {
		score := 0
		if leaves.K > 1 {
			score = v
		}
		// Exact real weights per leaf (0 for leaves not solved).
		w := make([]float64, nl)
		for t := range count {
			n, sum := 0, 0.0
			for l := t << depth; l < (t+1)<<depth; l++ {
				if at[l] >= 0 {
					n++
					sum += leaves.Values[l*leaves.K+score] + leaves.Base[score]/float64(count)
				}
			}
			m := 0.0
			if n > 2 {
				m = -sum / float64(n-2)
			}
			for l := t << depth; l < (t+1)<<depth; l++ {
				if at[l] >= 0 {
					w[l] = (leaves.Values[l*leaves.K+score] + leaves.Base[score]/float64(count) + m) / 2
				}
			}
		}
		scale, q := quantiseLeaves(w, at[:nl], top, binary)
		ws := inits[v].w
		for l, k := range q {
			if at[l] < 0 {
				continue
			}
			for b := planes - 1; b >= 0; b-- {
				j := at[b*nl+l]
				if j < 0 {
					continue
				}
				ws[j] = 0
				switch p := 1 << b; {
				case binary && k >= 0, !binary && k >= p:
					ws[j], k = 1, k-p
				case binary, !binary && k <= -p:
					ws[j], k = -1, k+p
				}
			}
		}
		if scale > 0 {
			inits[v].alpha = scale / rho
		}
	}
}

// quantiseLeaves rounds the weights w (of the leaves whose at is ≥ 0) to
// integers in [−top, top] — odd ones for binary planes, whose sums of ±2^b
// are odd — at the scale s that minimises Σ (w − s·q)², searched over 64
// candidates up to max|w|/top·2. With one ternary plane (top 1), q is 0
// for the smaller half by magnitude and ±1 for the rest, at their mean
// magnitude (what the solver started from before planes).
func quantiseLeaves(w []float64, at []int, top int, binary bool) (float64, []int) {
	q := make([]int, len(w))
	var mags []float64
	big := 0.0
	for l, x := range w {
		if at[l] >= 0 {
			mags = append(mags, math.Abs(x))
			big = max(big, math.Abs(x))
		}
	}
	if big == 0 {
		return 0, q
	}
	round := func(x, s float64) int {
		if binary {
			k := 2*int(math.Floor(x/s/2)) + 1 // nearest odd
			return min(max(k, -top), top)
		}
		return min(max(int(math.Round(x/s)), -top), top)
	}
	if top == 1 && !binary {
		slices.Sort(mags)
		cut := mags[len(mags)/2]
		sum, n := 0.0, 0
		for l, x := range w {
			if at[l] >= 0 && math.Abs(x) >= cut && x != 0 {
				q[l] = 1
				if x < 0 {
					q[l] = -1
				}
				sum += math.Abs(x)
				n++
			}
		}
		if n == 0 {
			return 0, q
		}
		return sum / float64(n), q
	}
	bestS, bestE := 0.0, math.Inf(1)
	for g := 1; g <= 64; g++ {
		s := 2 * big / float64(top) * float64(g) / 64
		e := 0.0
		for l, x := range w {
			if at[l] >= 0 {
				d := x - s*float64(round(x, s))
				e += d * d
			}
		}
		if e < bestE {
			bestS, bestE = s, e
		}
	}
	for l, x := range w {
		if at[l] >= 0 {
			q[l] = round(x, bestS)
		}
	}
	return bestS, q
}

// emptyLeavesDropped returns cols without the tree-leaf columns that no
// training row reaches, and the embedding column of each column it keeps.
// A boosted tree of depth 6 on a few thousand rows leaves many of its 64
// leaves empty; their weight cannot be learned from these rows, so it is
// 0, and the solver (whose cost grows with the columns) never sees them.
// The kept columns share cols's storage: nothing is copied.
func emptyLeavesDropped(base *inference.ModelSpec, cols *ternary.Columns) (*ternary.Columns, []int) {
	nt, nl := base.NumThresholds(), base.NumTreeColumns()
	solved := make([]int, 0, cols.P)
	for j := range cols.P {
		if j >= nt && j < nt+nl && !anyBit(cols.Col(j)) {
			continue
		}
		solved = append(solved, j)
	}
	if len(solved) == cols.P {
		return cols, solved
	}
	return cols.Select(solved), solved
}

func anyBit(words []uint64) bool {
	for _, w := range words {
		if w != 0 {
			return true
		}
	}
	return false
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
func initialWeights(cols *ternary.Columns, mult []int32, ds *data.Dataset, nv int, lambda float64, c *Config) ([]start, error) {
	p := cols.P
	out := make([]start, nv)
	rnd := splitmix.New(c.Seed ^ seedInit)
	if c.Init == "random" {
		for v := range out {
			w := make([]int8, p)
			for j := range w {
				w[j] = int8(rnd.Intn(3)) - 1
			}
			out[v] = start{w: w, alpha: 1 / float64(p)}
		}
		return out, nil
	}
	if c.Init == "centroid" {
		return centroidWeights(cols, ds, nv), nil
	}
	m := min(c.InitRows, ds.N)
	rows := rnd.Sample(ds.N, m)
	labels := make([]int32, m)
	for k, i := range rows {
		labels[k] = ds.Y[i]
	}
	// Only the sign pattern of w_full is used, so a loose solve is enough;
	// the pass cap keeps large C (nearly hard margin) from running long.
	opt := &linear.Options{C: linear.CFromLambda(lambda, m), Seed: c.Seed, MaxIter: c.InitPasses}
	// The signs times their multipliers are small integers: as int8 they
	// take a quarter of float32's memory (mnist: 42 MB, not 167) and give
	// the same model.
	small := true
	for _, v := range mult {
		small = small && v <= math.MaxInt8
	}
	var models []*linear.Model
	var err error
	if small {
		models, err = startSVM(denseSigns[int8](cols, rows, mult), m, p, labels, nv, opt)
	} else {
		models, err = startSVM(denseSigns[float32](cols, rows, mult), m, p, labels, nv, opt)
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

// startSVM trains the initialising linear SVM(s) on the dense rows x: one
// model for two classes (class 1 positive), else one per class.
func startSVM[T linear.Value](x []T, m, p int, labels []int32, nv int, opt *linear.Options) ([]*linear.Model, error) {
	if nv > 1 {
		return linear.TrainOneVsRest(x, m, p, labels, nv, opt)
	}
	y := make([]int8, m)
	for k, l := range labels {
		y[k] = -1
		if l == 1 {
			y[k] = 1
		}
	}
	mdl, err := linear.Train(x, m, p, y, opt)
	return []*linear.Model{mdl}, err
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

// centroidWeights starts each vector at the sign of the difference between
// its class's mean embedding and the rest's (each side weighted equally,
// so a rare class is not drowned), with α = 1/p: w_j = sign(mean_{y=+1}
// z_j − mean_{y=−1} z_j). One popcount per column and class.
func centroidWeights(cols *ternary.Columns, ds *data.Dataset, nv int) []start {
	out := make([]start, nv)
	for v := range out {
		y := ternary.LabelBits(classSigns(ds, nv, v))
		pos := 0
		for _, w := range y {
			pos += bits.OnesCount64(w)
		}
		neg := ds.N - pos
		w := make([]int8, cols.P)
		for j := range cols.P {
			col := cols.Col(j)
			onPos, on := 0, 0 // rows with z = +1: among positives, in all
			for k, zw := range col {
				onPos += bits.OnesCount64(zw & y[k])
				on += bits.OnesCount64(zw)
			}
			onNeg := on - onPos
			// mean_pos z − mean_neg z ∝ (2·onPos/pos − 1) − (2·onNeg/neg − 1)
			d := float64(onPos)*float64(neg) - float64(onNeg)*float64(pos)
			switch {
			case pos == 0 || neg == 0:
			case d > 0:
				w[j] = 1
			case d < 0:
				w[j] = -1
			}
		}
		out[v] = start{w: w, alpha: 1 / float64(cols.P)}
	}
	return out
}
