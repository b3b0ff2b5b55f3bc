package ternary

import "golang.org/x/sys/cpu"

// useAVX2 selects addWord64AVX2 for addColumn's full words, once at start
// (nothing assigns it).
var useAVX2 = cpu.X86.HasAVX2

// addWord64AVX2 is addWord for a full word of 64 margins, in AVX2 (eight
// int32 additions and zone tests at a time): the same integers, so the
// same margins and mask (TestAddWordAVX2).
//
//go:noescape
func addWord64AVX2(mm *[64]int32, c uint64, tab *[256][8]int32, zlo int32, zw uint32) uint64

// deepAgreeAVX2 is lowerTrial's count of the deep samples where a column
// agrees with the label, Σ_w popcount(deep[w] &^ (col[w] ^ y[w])) over n
// words, in AVX2 (four words at a time, the bytes counted by nibble
// lookups): an integer, so the same count (TestDeepAgreeAVX2). n ≥ 0;
// the caller guarantees n words of each. No bounds checks.
//
//go:noescape
func deepAgreeAVX2(deep, col, y *uint64, n int) int
