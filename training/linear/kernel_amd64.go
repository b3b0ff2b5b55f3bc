package linear

import "golang.org/x/sys/cpu"

// useAVX2 selects the AVX2 loops for int8 rows (kernel_amd64.s), once at
// start (nothing assigns it; tests compare with dotGo and axpyGo): each does
// the Go loop's IEEE operations on the same operands in the same order —
// dot's four partial sums are the four lanes — so the bits are the same
// (TestKernelsAVX2).
var useAVX2 = cpu.X86.HasAVX2

// dot4Int8AVX2 adds w[j]·x[j] into s[j%4] for j in [0, len(w)), len(w) a
// multiple of 4 and len(x) at least len(w).
//
//go:noescape
func dot4Int8AVX2(s *[4]float64, w []float64, x []int8)

// axpyInt8AVX2 does w[j] += a·x[j] for j in [0, len(w)), len(w) a
// multiple of 4 and len(x) at least len(w).
//
//go:noescape
func axpyInt8AVX2(a float64, x []int8, w []float64)
