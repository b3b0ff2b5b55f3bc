package trees

import "golang.org/x/sys/cpu"

// useAVX2 selects histAVX2 for histograms of byte bins, once at start
// (nothing assigns it; Options.goLoops turns it off for a test).
var useAVX2 = cpu.X86.HasAVX2

// histAVX2 is the row loop of histogram for byte bins, in AVX2 (four
// float64 additions at a time): for each row i of rows, in order,
//
//	o := (int(col[i])*stride + int(leaf[i]|slot)) * k2
//	h[o+j] += gh[i*k2+j]   for j in [0, k2)
//
// The same IEEE additions of the same operands in the same order as the
// Go loop, so the same bits (TestHistAVX2 compares them). It does no
// bounds checks: the caller guarantees every row is below len(col) and
// len(leaf), every cell index in h and every gradient index in gh, and
// that k2 is even.
//
//go:noescape
func histAVX2(h, gh []float64, rows []int32, col, leaf []uint8, slot, stride, k2 int)
