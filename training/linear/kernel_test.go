package linear

import (
	"math"
	"testing"
)

// The unrolled kernels against their reference loops, for every tail length.
func TestKernels(t *testing.T) {
	x, _ := benchData(1, 37, true)
	for n := 0; n <= len(x); n++ {
		w := make([]float64, n)
		for j := range w {
			w[j] = math.Sin(float64(j))
		}
		var want float64
		for j := range n {
			want += w[j] * float64(x[j])
		}
		if got := dot(w, x); math.Abs(got-want) > 1e-12 {
			t.Errorf("n=%d: dot = %v, want %v", n, got, want)
		}
		want = 0
		for j := range n {
			want += float64(x[j]) * float64(x[j])
		}
		if got := sqNorm(x[:n]); math.Abs(got-want) > 1e-12 {
			t.Errorf("n=%d: sqNorm = %v, want %v", n, got, want)
		}
		ref := append([]float64(nil), w...)
		for j := range ref {
			ref[j] += 0.5 * float64(x[j])
		}
		axpy(0.5, x, w)
		for j := range w {
			if w[j] != ref[j] { // one multiply-add per element either way
				t.Errorf("n=%d: axpy[%d] = %v, want %v", n, j, w[j], ref[j])
			}
		}
	}
}
