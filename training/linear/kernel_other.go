//go:build !amd64

package linear

// useAVX2 is false off amd64: the Go loops run.
const useAVX2 = false

func dot4Int8AVX2(s *[4]float64, w []float64, x []int8) { panic("linear: no AVX2") }

func axpyInt8AVX2(a float64, x []int8, w []float64) { panic("linear: no AVX2") }
