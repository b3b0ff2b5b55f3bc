//go:build !amd64

package ternary

// useAVX2 is false off amd64: addWord's Go loop runs.
const useAVX2 = false

func addWord64AVX2(mm *[64]int32, c uint64, tab *[256][8]int32, zlo int32, zw uint32) uint64 {
	panic("ternary: addWord64AVX2 without AVX2")
}

func deepAgreeAVX2(deep, col, y *uint64, n int) int {
	panic("ternary: deepAgreeAVX2 without AVX2")
}
