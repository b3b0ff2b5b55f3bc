package linear

import (
	"fmt"
	"math"
)

// Loss selects the per-example loss ξ of the primal problem.
type Loss int

const (
	// Hinge is ξ = max(0, 1 − y wᵀx), LIBLINEAR's L2R_L1LOSS_SVC_DUAL.
	Hinge Loss = iota
	// SquaredHinge is ξ = max(0, 1 − y wᵀx)², LIBLINEAR's L2R_L2LOSS_SVC_DUAL.
	SquaredHinge
)

// String returns the loss name.
func (l Loss) String() string {
	switch l {
	case Hinge:
		return "hinge"
	case SquaredHinge:
		return "squared-hinge"
	}
	return fmt.Sprintf("Loss(%d)", int(l))
}

// Defaults used for zero fields of Options (and for a nil *Options).
const (
	DefaultC       = 1.0
	DefaultEps     = 0.1
	DefaultMaxIter = 1000
)

// Options configures Train and TrainOneVsRest. A nil *Options, or a zero
// field, means the default.
type Options struct {
	// C weighs the loss against ½‖w‖²; 0 means DefaultC, otherwise it must be
	// positive and finite. See CFromLambda.
	C float64
	// Loss is Hinge (the zero value) or SquaredHinge.
	Loss Loss
	// Eps is the stopping tolerance on the spread (max − min) of the dual
	// projected gradient, as in LIBLINEAR; 0 means DefaultEps.
	Eps float64
	// MaxIter bounds the outer iterations (passes over the active examples);
	// 0 means DefaultMaxIter. Hitting it is not an error: the model is
	// returned with Converged false.
	MaxIter int
	// Bias, if positive, appends a constant feature of this value to every
	// row (LIBLINEAR -B). 0 means no bias term.
	Bias float32
	// Seed seeds the per-iteration random permutations. The same seed gives
	// bit-identical models on the same machine.
	Seed uint64
}

// CFromLambda converts the regularisation λ of λ‖w‖² + (1/n)Σξ into the C
// of ½‖w‖² + CΣξ (the same minimiser): C = 1/(2λn). It returns NaN, which
// Train rejects, if λ is not positive and finite or n ≤ 0.
func CFromLambda(lambda float64, n int) float64 {
	if !(lambda > 0) || math.IsInf(lambda, 1) || n <= 0 {
		return math.NaN()
	}
	return 1 / (2 * lambda * float64(n))
}

// resolve returns a copy of opt with defaults filled in, or an error
// naming the first invalid field.
func resolve(opt *Options) (Options, error) {
	var o Options
	if opt != nil {
		o = *opt
	}
	if o.C == 0 {
		o.C = DefaultC
	}
	if o.Eps == 0 {
		o.Eps = DefaultEps
	}
	if o.MaxIter == 0 {
		o.MaxIter = DefaultMaxIter
	}
	switch {
	case !(o.C > 0) || math.IsInf(o.C, 1):
		return o, fmt.Errorf("%w: C = %v, want positive and finite", ErrOption, o.C)
	case o.Loss != Hinge && o.Loss != SquaredHinge:
		return o, fmt.Errorf("%w: unknown %v", ErrOption, o.Loss)
	case !(o.Eps > 0) || math.IsInf(o.Eps, 1):
		return o, fmt.Errorf("%w: Eps = %v, want positive and finite", ErrOption, o.Eps)
	case o.MaxIter < 0:
		return o, fmt.Errorf("%w: MaxIter = %d, want ≥ 0", ErrOption, o.MaxIter)
	case !(o.Bias >= 0) || math.IsInf(float64(o.Bias), 1):
		return o, fmt.Errorf("%w: Bias = %v, want 0 (none) or positive and finite", ErrOption, o.Bias)
	}
	return o, nil
}

// dualTerms returns the diagonal term D_ii and the upper bound U of α_i
// for the loss (see the package comment).
func dualTerms(o *Options) (diag, upper float64) {
	if o.Loss == SquaredHinge {
		return 0.5 / o.C, math.Inf(1)
	}
	return 0, o.C
}
