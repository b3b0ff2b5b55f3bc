//go:build !amd64

package trees

// useAVX2 is false off amd64: histogram's Go loop runs.
const useAVX2 = false

func histAVX2(h, gh []float64, rows []int32, col, leaf []uint8, slot, stride, k2 int) {
	panic("trees: histAVX2 without AVX2")
}
