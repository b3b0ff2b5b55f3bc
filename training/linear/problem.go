package linear

import (
	"fmt"
	"math"
)

// problem is the validated training data, shared read-only by every binary
// subproblem of a one-vs-rest run.
type problem[T Value] struct {
	x    []T // row-major n×p, never copied
	n, p int
	bias float64 // value of the appended constant feature; 0 if none
	// sqNorm[i] = ‖x_i‖² + bias², the data part of Q_ii. It does not depend
	// on the labels, so one-vs-rest computes it once for all classes.
	sqNorm []float64
}

// newProblem checks the shape of x and that it is finite, and precomputes
// the row norms in the same single pass.
func newProblem[T Value](x []T, n, p int, bias float32) (*problem[T], error) {
	if n <= 0 || p <= 0 {
		return nil, fmt.Errorf("%w: n = %d, p = %d, want both positive", ErrShape, n, p)
	}
	// Row indices are kept as int32 to halve the index memory.
	if n > math.MaxInt32 || p > math.MaxInt/n {
		return nil, fmt.Errorf("%w: n = %d, p = %d is too large", ErrShape, n, p)
	}
	if len(x) != n*p {
		return nil, fmt.Errorf("%w: len(x) = %d, want n·p = %d·%d = %d", ErrShape, len(x), n, p, n*p)
	}
	pr := &problem[T]{x: x, n: n, p: p, bias: float64(bias), sqNorm: make([]float64, n)}
	b2 := pr.bias * pr.bias
	for i := range pr.sqNorm {
		row := x[i*p : (i+1)*p]
		s := sqNorm(row)
		if math.IsNaN(s) || math.IsInf(s, 0) {
			for j, v := range row {
				if f := float64(v); math.IsNaN(f) || math.IsInf(f, 0) {
					return nil, fmt.Errorf("%w: x[%d] (row %d, column %d) = %v", ErrNonFinite, i*p+j, i, j, v)
				}
			}
		}
		pr.sqNorm[i] = s + b2
	}
	return pr, nil
}

// row returns row i of x, in place.
func (pr *problem[T]) row(i int) []T {
	return pr.x[i*pr.p : (i+1)*pr.p]
}
