package inference

import (
	"fmt"
	"math/bits"
)

// MaxFWHT is the largest transform size FWHT accepts (2^16).
const MaxFWHT = 1 << 16

// FWHT replaces x by its unnormalised Walsh–Hadamard transform Hx, in place
// and without allocating. len(x) must be a power of two in [2, MaxFWHT].
// H is the Sylvester matrix H₂ = [[1, 1], [1, -1]], H₂ₖ = [[Hₖ, Hₖ], [Hₖ, -Hₖ]],
// so H(Hx) = len(x)·x. Reference loop:
//
//	for h := 1; h < len(x); h *= 2 {
//		for i := 0; i < len(x); i += 2 * h {
//			for j := i; j < i+h; j++ {
//				x[j], x[j+h] = x[j]+x[j+h], x[j]-x[j+h]
//			}
//		}
//	}
//
// Only additions and subtractions are involved, so the result is bit-identical
// on every architecture. Where there is a fast path (AVX2 on amd64, see
// simd_amd64.go) it runs the same additions in the same order.
func FWHT(x []float32) { fwht(&cpu, x) }

// fwht is FWHT with the kernels k.
func fwht(k *kernels, x []float32) {
	n := len(x)
	if n < 2 || n > MaxFWHT || n&(n-1) != 0 {
		panic(fmt.Sprintf("inference: FWHT length %d is not a power of two in [2, %d]", n, MaxFWHT))
	}
	if n == 2 {
		x[0], x[1] = x[0]+x[1], x[0]-x[1]
		return
	}
	if n >= 8 && k.fwhtSIMD(x) {
		return
	}
	// Stages are fused in pairs (h, 2h) into radix-4 butterflies, halving the
	// passes over x. Each output is formed by exactly the additions of the
	// reference loop in the same order, so the result is bit-identical to it.
	for i := 0; i < n; i += 4 {
		v := x[i : i+4 : i+4]
		v[0], v[1], v[2], v[3] = butterfly4(v[0], v[1], v[2], v[3])
	}
	fwhtUpper(k, x)
}

// butterfly4 is stages h = 1 and h = 2 of the transform of (a, b, c, d).
func butterfly4(a, b, c, d float32) (float32, float32, float32, float32) {
	s0, d0, s1, d1 := a+b, a-b, c+d, c-d
	return s0 + s1, d0 + d1, s0 - s1, d0 - d1
}

// fwhtUpper runs the stages h >= 4 of FWHT on x, whose groups of four have
// already been through butterfly4. len(x) is a power of two >= 4.
func fwhtUpper(k *kernels, x []float32) {
	if k.fwhtUpperSIMD(x) {
		return
	}
	n := len(x)
	h := 4
	for ; 4*h <= n; h *= 4 {
		for i := 0; i < n; i += 4 * h {
			q0 := x[i : i+h : i+h]
			q1 := x[i+h : i+2*h : i+2*h]
			q2 := x[i+2*h : i+3*h : i+3*h]
			q3 := x[i+3*h : i+4*h : i+4*h]
			for j := range q0 {
				a, b := q0[j]+q1[j], q0[j]-q1[j]
				c, d := q2[j]+q3[j], q2[j]-q3[j]
				q0[j], q1[j], q2[j], q3[j] = a+c, b+d, a-c, b-d
			}
		}
	}
	if h < n { // one radix-2 stage left when log2(n) is odd
		lo, hi := x[:h:h], x[h:2*h:2*h]
		for j := range lo {
			a, b := lo[j], hi[j]
			lo[j], hi[j] = a+b, a-b
		}
	}
}

// log2 returns k for n = 2^k.
func log2(n int) int { return bits.TrailingZeros(uint(n)) }

// nextPow2 returns the smallest power of two >= n, and at least 2.
func nextPow2(n int) int {
	p := 2
	for p < n {
		p *= 2
	}
	return p
}
