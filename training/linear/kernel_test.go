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

func TestRNG(t *testing.T) {
	// Known answers of splitmix64 from state 0 (Vigna's reference code):
	// they pin the permutations on every platform.
	r := rng{}
	for _, want := range []uint64{0xe220a8397b1dcdaf, 0x6e789e6aa1b965f4, 0x06c45d188009454f} {
		if got := r.next(); got != want {
			t.Fatalf("splitmix64: got %#x, want %#x", got, want)
		}
	}
	// uintn is uniform: 60000 draws in [0, 6) land near 10000 each.
	var counts [6]int
	for range 60000 {
		counts[r.uintn(6)]++
	}
	for v, c := range counts {
		if c < 9500 || c > 10500 { // > 5 standard deviations
			t.Errorf("uintn(6): value %d drawn %d times in 60000", v, c)
		}
	}
	// shuffle permutes.
	idx := make([]int32, 100)
	for i := range idx {
		idx[i] = int32(i)
	}
	r.shuffle(idx)
	seen := make([]bool, len(idx))
	moved := 0
	for i, v := range idx {
		if seen[v] {
			t.Fatalf("shuffle repeated %d", v)
		}
		seen[v] = true
		if int(v) != i {
			moved++
		}
	}
	if moved < 50 {
		t.Errorf("shuffle moved only %d of 100 elements", moved)
	}
}
