package training

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"

	"github.com/trit-iot/trit/inference"
	"github.com/trit-iot/trit/training/ternary"
)

// Config describes one training run. A zero Sigma or C asks for a search over
// the corresponding grid on a validation split carved from the training data
// (never the test set). A nil *Config means all defaults.
type Config struct {
	// Budget is the size of the signed bundle the model must fit, in bytes
	// (default DefaultBudget). Training fills it: it chooses the embedding's
	// structure (threshold bits, projection) on validation data and the
	// number of random features so the bundle fits. Ignored when P is set.
	Budget int
	// MaxEmbeddingBytes bounds the training rows' embedding in memory (one
	// bit per row and column; the fit's largest allocation): with a budget,
	// P is at most 8·MaxEmbeddingBytes/rows, and the trees' leaves as many.
	// Default 512 MiB; docs/TRAINING.md ("The byte budget") says which
	// models it binds.
	MaxEmbeddingBytes int64
	// MaxFitRows bounds the rows the weights are fitted on (default
	// 100,000; negative: all rows). With more rows a seeded stratified
	// subsample is used, in row order, and validation is unchanged: the
	// embedding of every row is capped by MaxEmbeddingBytes, so on
	// covtype's 464,810 rows all of them allow 9,216 columns where 100,000
	// allow 42,900 (with the default bound).
	MaxFitRows int
	// Reserve is the part of Budget kept for what the caller adds to the
	// bundle after training (its info section: how the data were read,
	// training figures) and for the calibration (at most 62 bytes, see
	// calibrate.go); default 512 bytes.
	Reserve int
	// P fixes the number of random features (the paper's experiments) and
	// turns the budget off; the structure is then Thresholds and Projection
	// as given.
	P     int
	Sigma float64 // kernel width σ; 0 = search SigmaGrid
	C     float64 // regularisation as a linear SVM's C; 0 = search CGrid
	// The ternary objective's λ is 1/(2·n·C), which makes C mean the same as
	// in LIBLINEAR's ½‖w‖² + C Σ ξ (and the paper's grid 10⁻³…10³ apply to both).
	SigmaGrid []float64 // default: five octaves around the median distance between rows (search "grid": 2⁻⁵ … 2⁵)
	CGrid     []float64 // default 10⁻³ … 10³
	// Validation is the share of the training rows the search validates
	// on: a stratified random sample of shuffled rows (default 0.2), the
	// latest rows of a recording (default 0.3, in Folds blocks). See
	// validation.go.
	Validation float64
	// Folds is the number of validation folds: forward folds for a
	// recording (default 3), stratified folds of shuffled rows (default
	// 0: one hold-out; at least 2 otherwise).
	Folds int
	// TimeOrdered declares the rows to be in time order (as
	// data.Dataset.Ordered does): validation rows are then always later
	// than the rows the candidate was trained on, never a random sample.
	// Without it or a Dataset.Shuffled declaration, the order is detected
	// (data.DetectOrder).
	TimeOrdered bool
	// Search is "halving" (the default: successive halving, small fits
	// first, only the best candidates at full size) or "grid" (every σ×C
	// point at full size, as the paper does).
	Search string
	// Scaling is "robust" (default: quantile ranges, values clipped to
	// [−1, 1]) or "minmax" (the paper's: training extremes, no clipping).
	Scaling string
	Seed    uint64 // seeds the transform, the splits and the initialisation subset

	Loss ternary.Loss
	Reg  ternary.Reg
	// Init is "svm" (the paper's: sign of a linear SVM trained on InitRows
	// random rows), "centroid" (sign of the difference of class means: one
	// popcount per column) or "random" (uniform ternary weights).
	Init     string
	InitRows int // default 2000
	// InitPasses bounds the passes of the initialising linear SVM; only the
	// signs of its weights are used, so a loose solve is enough. Default 100.
	InitPasses int

	// Thresholds adds up to this many threshold bits per input feature
	// (quantiles of the scaled feature) to the embedding; 0 = none.
	Thresholds int
	// Projection computes the random features on this many leading
	// principal directions (ternary-quantised) instead of the raw scaled
	// input; 0 = none.
	Projection int
	// Embedding limits the budgeted search to one kind of embedding:
	// "auto" (the default: chosen from the data's shape, see
	// docs/TRAINING.md), "kernel" (random features alone, the paper's),
	// "mix" (threshold bits beside random features), "thresholds"
	// (threshold bits alone) or "projection" (random features on
	// principal directions) or "trees" (the leaves of boosted oblivious
	// trees). For ablations; ignored when Thresholds,
	// Projection or P are given.
	Embedding string
	// TreePlanes is the columns per leaf of boosted trees
	// (inference.Trees.Planes): with B planes a leaf's weight is an integer
	// in ±(2^B−1), so the trees keep the boosting's leaf magnitudes (B = 1:
	// one ternary weight per leaf). Default 2; at most
	// inference.MaxTreePlanes.
	TreePlanes int
	// Weights is "ternary" ({−1, 0, +1}: the paper's method, 1.6 bits a
	// weight in a bundle), "binary" ({−1, +1}: 1 bit, so more random
	// features fit the budget) or "auto" (the default: the search compares
	// both at the same budget; with P fixed, ternary).
	Weights string

	// Selection is how candidates are scored on the validation folds and
	// which one ships (score.go, selection.go); zero fields take the
	// defaults (DefaultSelection), chosen across the shift suite by
	// leaving one dataset out (docs/TRAINING.md).
	Selection Selection

	// UnknownTarget is the share of validation windows the shipped
	// unknown thresholds aim at (see calibrate.go; default
	// DefaultUnknownTarget, 2%). Negative: ship no calibration (the
	// bundle keeps the format older agents read).
	UnknownTarget float64

	Tol       float64 // solver tolerance; 0 = the solver's default
	MaxRounds int     // solver α-steps; 0 = the solver's default

	Workers  int         // 0 = GOMAXPROCS
	Progress func(Event) // optional progress reports

	ctx context.Context // set by TrainContext
}

// cancelled returns an error wrapping ErrCancelled once the training's
// context is done.
func (c *Config) cancelled() error {
	if c.ctx == nil || c.ctx.Err() == nil {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrCancelled, c.ctx.Err())
}

// Event is a progress report: Done of Total units of the named stage.
type Event struct {
	Stage       string
	Done, Total int
}

// PaperSigmaGrid returns 2⁻⁵ … 2⁵, the paper's σ grid and the default.
func PaperSigmaGrid() []float64 {
	var g []float64
	for k := -5; k <= 5; k++ {
		g = append(g, math.Ldexp(1, k))
	}
	return g
}

// PaperCGrid returns 10⁻³ … 10³, the paper's regularisation grid and the
// default.
func PaperCGrid() []float64 { return []float64{1e-3, 1e-2, 1e-1, 1, 10, 100, 1000} }

// DefaultBudget is the default size of a signed bundle: 30 KiB, the size
// agents accept by default.
const DefaultBudget = 30 * 1024

// defaultValidation is the share of shuffled rows held out for the search.
const defaultValidation = 0.2

// minBudget is the smallest budget training accepts.
const minBudget = 512

// ErrConfig reports an unusable Config.
var ErrConfig = errors.New("training: invalid configuration")

func (c *Config) withDefaults() (Config, error) {
	var v Config
	if c != nil {
		v = *c
	}
	if v.Budget == 0 {
		v.Budget = DefaultBudget
	}
	if v.Reserve == 0 {
		v.Reserve = 512
	}
	if v.MaxEmbeddingBytes == 0 {
		v.MaxEmbeddingBytes = 512 << 20
	}
	if v.Search == "" {
		v.Search = "halving"
	}
	if v.MaxFitRows == 0 {
		v.MaxFitRows = 100000
	}
	if v.TreePlanes == 0 {
		v.TreePlanes = 2
	}
	if v.TreePlanes < 1 || v.TreePlanes > inference.MaxTreePlanes {
		return v, fmt.Errorf("%w: tree planes %d, want 1..%d", ErrConfig, v.TreePlanes, inference.MaxTreePlanes)
	}
	if v.Scaling == "" {
		v.Scaling = "robust"
	}
	if v.Weights == "" {
		v.Weights = "auto"
		if v.P > 0 {
			v.Weights = "ternary"
		}
	}
	if v.Embedding == "" {
		v.Embedding = "auto"
	}
	if len(v.CGrid) == 0 {
		v.CGrid = PaperCGrid()
	}
	if v.Init == "" {
		v.Init = "svm"
	}
	if v.InitRows == 0 {
		v.InitRows = 2000
	}
	if v.InitPasses == 0 {
		v.InitPasses = 100
	}
	if v.Workers <= 0 {
		v.Workers = runtime.GOMAXPROCS(0)
	}
	if v.UnknownTarget == 0 {
		v.UnknownTarget = DefaultUnknownTarget
	}
	v.Selection = v.Selection.withDefaults()
	switch {
	case v.UnknownTarget > 0.5 || math.IsNaN(v.UnknownTarget):
		return v, fmt.Errorf("%w: unknown target %g, want at most 0.5 (or negative: no calibration)", ErrConfig, v.UnknownTarget)
	case v.P < 0 || v.P > inference.MaxP:
		return v, fmt.Errorf("%w: p = %d, want 1..%d", ErrConfig, v.P, inference.MaxP)
	case v.P == 0 && v.Budget < minBudget:
		return v, fmt.Errorf("%w: budget %d bytes, want at least %d", ErrConfig, v.Budget, minBudget)
	case v.MaxEmbeddingBytes < 0:
		return v, fmt.Errorf("%w: embedding memory bound %d bytes", ErrConfig, v.MaxEmbeddingBytes)
	case v.Reserve < 0 || v.Reserve >= v.Budget:
		return v, fmt.Errorf("%w: reserve %d bytes of a %d-byte budget", ErrConfig, v.Reserve, v.Budget)
	case v.Thresholds < 0 || v.Thresholds > 255:
		return v, fmt.Errorf("%w: %d thresholds per feature, want 0..255", ErrConfig, v.Thresholds)
	case v.Projection < 0 || v.Projection > inference.MaxProjectionOut:
		return v, fmt.Errorf("%w: projection onto %d directions, want 0..%d", ErrConfig, v.Projection, inference.MaxProjectionOut)
	case v.Folds < 0 || v.Folds == 1 || v.Folds > 20:
		return v, fmt.Errorf("%w: %d folds, want 0 (one hold-out) or 2..20", ErrConfig, v.Folds)
	case v.Search != "halving" && v.Search != "grid":
		return v, fmt.Errorf("%w: search %q, want halving or grid", ErrConfig, v.Search)
	case v.Weights != "auto" && v.Weights != "ternary" && v.Weights != "binary":
		return v, fmt.Errorf("%w: weights %q, want auto, ternary or binary", ErrConfig, v.Weights)
	case v.Weights == "auto" && v.P > 0:
		return v, fmt.Errorf("%w: weights auto needs a budget, not a fixed p", ErrConfig)
	case !validEmbedding(v.Embedding):
		return v, fmt.Errorf("%w: embedding %q, want auto, kernel, mix, thresholds, projection or trees", ErrConfig, v.Embedding)
	case v.Scaling != "robust" && v.Scaling != "minmax":
		return v, fmt.Errorf("%w: scaling %q, want robust or minmax", ErrConfig, v.Scaling)
	case v.Sigma < 0 || math.IsNaN(v.Sigma) || math.IsInf(v.Sigma, 0):
		return v, fmt.Errorf("%w: σ = %g", ErrConfig, v.Sigma)
	case v.C < 0 || math.IsNaN(v.C) || math.IsInf(v.C, 0):
		return v, fmt.Errorf("%w: C = %g", ErrConfig, v.C)
	case v.Validation != 0 && !(v.Validation > 0 && v.Validation < 1):
		return v, fmt.Errorf("%w: validation fraction %g, want (0, 1)", ErrConfig, v.Validation)
	case v.Init != "svm" && v.Init != "random" && v.Init != "centroid":
		return v, fmt.Errorf("%w: init %q, want svm, centroid or random", ErrConfig, v.Init)
	}
	if err := v.Selection.check(); err != nil {
		return v, err
	}
	for _, s := range v.SigmaGrid {
		if !(s > 0) || math.IsInf(s, 0) {
			return v, fmt.Errorf("%w: σ grid value %g", ErrConfig, s)
		}
	}
	for _, c := range v.CGrid {
		if !(c > 0) || math.IsInf(c, 0) {
			return v, fmt.Errorf("%w: C grid value %g", ErrConfig, c)
		}
	}
	return v, nil
}

func (c *Config) report(stage string, done, total int) {
	if c.Progress != nil {
		c.Progress(Event{Stage: stage, Done: done, Total: total})
	}
}
