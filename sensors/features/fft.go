package features

import (
	"math"
	"math/bits"
)

// fft is a radix-2 decimation-in-time FFT plan for one power-of-two size.
// Its reference loop is the DFT
//
//	X[k] = Σ_{t=0}^{n-1} x[t]·exp(-2πi·k·t/n),  k = 0..n-1
//
// computed in O(n log n) by iterative butterflies over bit-reversed input.
type fft struct {
	n        int
	rev      []int     // bit-reversal permutation
	cos, sin []float64 // twiddles exp(-2πi·k/n), k < n/2
	re, im   []float64 // work space
}

func newFFT(n int) *fft {
	f := &fft{n: n, rev: make([]int, n), cos: make([]float64, n/2), sin: make([]float64, n/2),
		re: make([]float64, n), im: make([]float64, n)}
	shift := 64 - bits.TrailingZeros(uint(n))
	for i := range n {
		f.rev[i] = int(bits.Reverse64(uint64(i)) >> shift)
	}
	for k := range n / 2 {
		a := -2 * math.Pi * float64(k) / float64(n)
		f.cos[k], f.sin[k] = math.Cos(a), math.Sin(a)
	}
	return f
}

// power writes |X[k]|² for k = 0..n/2 of the real signal x (len n) into
// dst (len n/2+1).
func (f *fft) power(dst, x []float64) {
	n := f.n
	for i, r := range f.rev {
		f.re[i], f.im[i] = x[r], 0
	}
	for size := 2; size <= n; size <<= 1 {
		half, step := size/2, n/size
		for start := 0; start < n; start += size {
			for j := range half {
				wr, wi := f.cos[j*step], f.sin[j*step]
				a, b := start+j, start+j+half
				tr := wr*f.re[b] - wi*f.im[b]
				ti := wr*f.im[b] + wi*f.re[b]
				f.re[b], f.im[b] = f.re[a]-tr, f.im[a]-ti
				f.re[a], f.im[a] = f.re[a]+tr, f.im[a]+ti
			}
		}
	}
	for k := range n/2 + 1 {
		dst[k] = f.re[k]*f.re[k] + f.im[k]*f.im[k]
	}
}
