//go:build !amd64

package trees

// useAVX2 is false off amd64: the Go loops run.
const useAVX2 = false

func histAVX2(h, gh []float64, rows []int32, col, leaf []uint8, slot, stride, k2 int) {
	panic("trees: histAVX2 without AVX2")
}

func splitScores(s *[lanes]float64, batch, tot []float64, used int, lambda float64) {
	panic("trees: splitScores without AVX2")
}

func cumLanes(batch, cum, h []float64, off *[lanes]int, width int) {
	panic("trees: cumLanes without AVX2")
}

func subTotal(h, tot []float64, bins, pitch, half int, right bool) {
	panic("trees: subTotal without AVX2")
}

func clearCells(h []float64, bins, pitch, off, width int) {
	panic("trees: clearCells without AVX2")
}

func histAVX2x4(hs *[4][]float64, gh []float64, rows []int32, cols *[4][]uint8, leaf []uint8, slot, stride, k2 int) {
	panic("trees: histAVX2x4 without AVX2")
}
