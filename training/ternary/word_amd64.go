package ternary

import "golang.org/x/sys/cpu"

// useAVX2 selects addColumnAVX2 for addColumn's full words and
// deepAgreeAVX2 for lowerTrial's count, once at start (nothing assigns
// it).
var useAVX2 = cpu.X86.HasAVX2

// useAVX512 selects addColumn512 instead, and usePopcnt512 deepAgree512,
// once at start (nothing but TestSolveMatchesReferenceAVX2 assigns them).
// x/sys/cpu reports AVX-512 only where the operating system saves its
// registers.
var (
	useAVX512    = cpu.X86.HasAVX512F
	usePopcnt512 = cpu.X86.HasAVX512F && cpu.X86.HasAVX512VPOPCNTDQ
)

// deepAgreeAVX2 is lowerTrial's count of the deep samples where a column
// agrees with the label, Σ_w popcount(deep[w] &^ (col[w] ^ y[w])) over n
// words, in AVX2 (four words at a time, the bytes counted by nibble
// lookups): an integer, so the same count (TestDeepAgreeAVX2). n ≥ 0;
// the caller guarantees n words of each. No bounds checks.
//
//go:noescape
func deepAgreeAVX2(deep, col, y *uint64, n int) int

// addColumn512 is addWord over words full words of 64 margins at m, the
// sign bits ^(col[w] ^ y[w]) and the increments ±delta computed in
// AVX-512 (sixteen margins at a time) instead of read from a table; the
// zone mask of word w goes to hits[w]. The same integers, so the same
// margins and masks (TestAddColumn512). The caller guarantees words
// words of col, y and hits and 64·words margins. No bounds checks.
//
//go:noescape
func addColumn512(m *int32, col, y *uint64, words int, delta, zlo int32, zw uint32, hits *uint64)

// deepAgree512 is deepAgreeAVX2 eight words at a time with AVX-512's
// VPOPCNTQ: the same count (TestDeepAgree512).
//
//go:noescape
func deepAgree512(deep, col, y *uint64, n int) int

// addColumnAVX2 is addColumn512 in AVX2, eight margins at a time, each
// byte of sign bits expanded to lanes: the same integers, so the same
// margins and masks (TestAddColumnAVX2). Its loop uses VEX encodings only:
// a legacy SSE move into a vector register there, with the upper halves
// in use, made mnist's training 5 times as slow on an Intel Xeon.
//
//go:noescape
func addColumnAVX2(m *int32, col, y *uint64, words int, delta, zlo int32, zw uint32, hits *uint64)
