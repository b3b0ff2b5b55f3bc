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

// The AVX2 loops give the Go loops' bits, for int8 rows of every tail
// length and values over the whole int8 range.
func TestKernelsAVX2(t *testing.T) {
	if !useAVX2 {
		t.Skip("no AVX2 on this CPU: the Go loops are the only ones")
	}
	x := make([]int8, 67)
	for j := range x {
		x[j] = int8(j*53 - 128)
	}
	for n := 0; n <= len(x); n++ {
		w := make([]float64, n)
		for j := range w {
			w[j] = math.Sin(float64(j)) * math.Pow(10, float64(j%9-4))
		}
		w2 := append([]float64(nil), w...)
		fast, slow := dot(w, x), dotGo(w2, x)
		axpy(-0.37, x, w)
		axpyGo(-0.37, x, w2)
		if math.Float64bits(fast) != math.Float64bits(slow) {
			t.Errorf("n=%d: dot %v with AVX2, %v without", n, fast, slow)
		}
		for j := range w {
			if math.Float64bits(w[j]) != math.Float64bits(w2[j]) {
				t.Errorf("n=%d: axpy[%d] %v with AVX2, %v without", n, j, w[j], w2[j])
			}
		}
	}
}
