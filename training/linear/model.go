package linear

import "math"

// Model is a trained linear classifier: the decision value of a row is
// wᵀrow + Bias and its predicted label is +1 when that is positive.
type Model struct {
	// W holds one weight per feature (length p).
	W []float64
	// Bias is the weight of the bias feature times Options.Bias, so that
	// Decision adds it directly; 0 if trained without a bias.
	Bias float64
	// Iter is the number of outer iterations run.
	Iter int
	// Converged reports whether the stopping rule was met before MaxIter.
	Converged bool
}

// Decision returns wᵀrow + Bias. It returns NaN if m is nil or len(row) is
// not len(m.W).
func (m *Model) Decision(row []float32) float64 {
	if m == nil || len(row) != len(m.W) {
		return math.NaN()
	}
	return dot(m.W, row) + m.Bias
}
