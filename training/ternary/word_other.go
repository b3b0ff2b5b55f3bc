//go:build !amd64

package ternary

// No SIMD off amd64: addWord's and lowerTrial's Go loops run.
const (
	useAVX2      = false
	useAVX512    = false
	usePopcnt512 = false
)

func deepAgreeAVX2(deep, col, y *uint64, n int) int {
	panic("ternary: deepAgreeAVX2 without AVX2")
}

func addColumn512(m *int32, col, y *uint64, words int, delta, zlo int32, zw uint32, hits *uint64) {
	panic("ternary: addColumn512 without AVX-512")
}

func deepAgree512(deep, col, y *uint64, n int) int {
	panic("ternary: deepAgree512 without AVX-512")
}

func addColumnAVX2(m *int32, col, y *uint64, words int, delta, zlo int32, zw uint32, hits *uint64) {
	panic("ternary: addColumnAVX2 without AVX2")
}
