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
