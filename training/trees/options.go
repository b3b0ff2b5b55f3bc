package trees

import (
	"errors"
	"fmt"
	"math"
	"runtime"

	"github.com/trit-iot/trit/inference"
)

// Errors returned by Fit, wrapped with details; test with errors.Is.
var (
	// ErrOptions reports an invalid field of Options.
	ErrOptions = errors.New("trees: invalid options")
	// ErrData reports inconsistent or invalid inputs: shapes, labels or
	// cuts.
	ErrData = errors.New("trees: invalid data")
)

// Options configure Fit. A zero field takes its default; a nil *Options is
// all defaults, except that Trees has none.
type Options struct {
	// Trees is the number of trees (boosting rounds), 1..inference.MaxTrees.
	// It has no default: every tree adds 2^Depth embedding columns, so the
	// caller's byte budget decides it.
	Trees int
	// Depth is the number of levels of every tree, 1..inference.MaxTreeDepth
	// (default 6).
	Depth int
	// LearningRate η shrinks every leaf value, in (0, 1] (default 0.2).
	LearningRate float64
	// Lambda is the L2 penalty λ on leaf values (default 1; it cannot be
	// 0, which would let a leaf of one row take an unbounded value).
	Lambda float64
	// MinLeaf is the fewest (sampled) rows each side of a split may have,
	// counted over all leaves of the level (default 1). A per-leaf minimum
	// would forbid most splits of an oblivious tree, whose deep leaves are
	// often empty.
	MinLeaf int
	// Subsample is the share of rows each tree is grown on, in (0, 1]
	// (default 1). Rows are drawn independently per tree from the Seed
	// stream; leaf values are fitted on the sampled rows too.
	Subsample float64
	// Seed seeds row subsampling.
	Seed uint64
	// Workers is the number of goroutines (0 = GOMAXPROCS). The trees do
	// not depend on it.
	Workers int
	// Valid, if set, are held-out rows scored after every tree: boosting
	// stops once their log-loss has not fallen for Patience trees, so
	// Trees is then a ceiling (early stopping). Every tree fitted is
	// returned; Model.Best is the count at the lowest held-out loss.
	Valid *Rows
	// Patience is how many trees without a lower held-out loss stop the
	// boosting (default max(20, half the best count so far)).
	Patience int
	// From, if set, is an earlier FitModel's result on the same rows,
	// labels, cuts and options but for Trees (at most Trees of them):
	// boosting goes on from its last tree instead of starting again. The
	// result is the model a fit of Trees from scratch returns, bit for bit
	// (boosting is sequential and deterministic; the rows' scores, the
	// subsampling's draws and the held-out rows' scores are replayed from
	// From's trees). Its trees' tests may be snapped to another float
	// form of the same cut (−0 for +0): the rows take the same leaves.
	From *Model

	// goLoops turns the AVX2 loops (histogram, split scores) off, for the
	// tests that compare them with the Go loops (the trees are the same
	// either way).
	goLoops bool
	// trackLoss records the training log-loss before every tree (the
	// ensemble's loss), for the tests; the trees do not depend on it, and
	// its logarithm per row and tree is not worth computing otherwise.
	trackLoss bool
}

// Rows are scaled rows with their labels (see Fit).
type Rows struct {
	X []float32 // N rows of d features, row-major
	N int
	Y []int32
}

// Defaults.
const (
	DefaultDepth        = 6
	DefaultLearningRate = 0.2
	DefaultLambda       = 1
	DefaultMinLeaf      = 1
)

// withDefaults returns a copy of o with defaults filled in, or an error
// naming the first invalid field.
func (o *Options) withDefaults() (Options, error) {
	var v Options
	if o != nil {
		v = *o
	}
	if v.Trees <= 0 || v.Trees > inference.MaxTrees {
		return v, fmt.Errorf("%w: Trees = %d, want 1..%d", ErrOptions, v.Trees, inference.MaxTrees)
	}
	if v.Depth == 0 {
		v.Depth = DefaultDepth
	}
	if v.Depth < 1 || v.Depth > inference.MaxTreeDepth {
		return v, fmt.Errorf("%w: Depth = %d, want 1..%d", ErrOptions, v.Depth, inference.MaxTreeDepth)
	}
	if v.LearningRate == 0 {
		v.LearningRate = DefaultLearningRate
	}
	if !(v.LearningRate > 0 && v.LearningRate <= 1) {
		return v, fmt.Errorf("%w: LearningRate = %g, want (0, 1]", ErrOptions, v.LearningRate)
	}
	if v.Lambda == 0 {
		v.Lambda = DefaultLambda
	}
	if !(v.Lambda > 0) || math.IsInf(v.Lambda, 1) {
		return v, fmt.Errorf("%w: Lambda = %g, want > 0 and finite", ErrOptions, v.Lambda)
	}
	if v.MinLeaf == 0 {
		v.MinLeaf = DefaultMinLeaf
	}
	if v.MinLeaf < 0 {
		return v, fmt.Errorf("%w: MinLeaf = %d, want ≥ 0", ErrOptions, v.MinLeaf)
	}
	if v.Subsample == 0 {
		v.Subsample = 1
	}
	if !(v.Subsample > 0 && v.Subsample <= 1) {
		return v, fmt.Errorf("%w: Subsample = %g, want (0, 1]", ErrOptions, v.Subsample)
	}
	if v.Workers < 0 {
		return v, fmt.Errorf("%w: Workers = %d, want ≥ 0", ErrOptions, v.Workers)
	}
	if v.Workers == 0 {
		v.Workers = runtime.GOMAXPROCS(0)
	}
	if v.Patience < 0 {
		return v, fmt.Errorf("%w: Patience = %d, want ≥ 0", ErrOptions, v.Patience)
	}
	if m := v.From; m != nil {
		c := m.Trees.Count()
		switch {
		case m.Trees.Depth != v.Depth:
			return v, fmt.Errorf("%w: From has trees of depth %d, want %d", ErrOptions, m.Trees.Depth, v.Depth)
		case c > v.Trees:
			return v, fmt.Errorf("%w: From has %d trees, more than Trees = %d", ErrOptions, c, v.Trees)
		case len(m.loss) != c+1 || len(m.Values) != (c<<v.Depth)*m.K || len(m.Base) != m.K:
			return v, fmt.Errorf("%w: From is not a model FitModel returned", ErrOptions)
		}
	}
	return v, nil
}

// maxCuts bounds the cuts of one feature: bins are uint16.
const maxCuts = math.MaxUint16

// checkData validates Fit's inputs.
func checkData(xs []float32, n, d int, y []int32, classes int, cuts [][]float32) error {
	switch {
	case n <= 0 || d <= 0:
		return fmt.Errorf("%w: %d rows of %d features", ErrData, n, d)
	case n > math.MaxInt32:
		return fmt.Errorf("%w: %d rows, at most %d", ErrData, n, math.MaxInt32)
	case d > math.MaxUint16+1:
		return fmt.Errorf("%w: %d features, at most %d", ErrData, d, math.MaxUint16+1)
	case len(xs) != n*d:
		return fmt.Errorf("%w: %d values for %d rows of %d features", ErrData, len(xs), n, d)
	case len(y) != n:
		return fmt.Errorf("%w: %d labels for %d rows", ErrData, len(y), n)
	case classes < 2:
		return fmt.Errorf("%w: %d classes, want ≥ 2", ErrData, classes)
	case len(cuts) != d:
		return fmt.Errorf("%w: cuts for %d features, want %d", ErrData, len(cuts), d)
	}
	for i, c := range y {
		if c < 0 || int(c) >= classes {
			return fmt.Errorf("%w: row %d has label %d, want 0..%d", ErrData, i, c, classes-1)
		}
	}
	cut := false
	for f, cs := range cuts {
		if len(cs) > maxCuts {
			return fmt.Errorf("%w: feature %d has %d cuts, at most %d", ErrData, f, len(cs), maxCuts)
		}
		for k, c := range cs {
			if math.IsNaN(float64(c)) || math.IsInf(float64(c), 0) {
				return fmt.Errorf("%w: feature %d cut %d is %g, want finite", ErrData, f, k, c)
			}
			if k > 0 && c < cs[k-1] {
				return fmt.Errorf("%w: feature %d cuts not ascending at %d (%g < %g)", ErrData, f, k, c, cs[k-1])
			}
		}
		cut = cut || len(cs) > 0
	}
	if !cut {
		return fmt.Errorf("%w: no feature has a cut", ErrData)
	}
	return nil
}
