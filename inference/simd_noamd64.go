//go:build !amd64

package inference

// The fast paths that exist on amd64 only (simd_amd64.go): elsewhere each
// reports that it did nothing, and its pure-Go loop runs.

func (k *kernels) fwhtSIMD(x []float32) bool { return false }

func (k *kernels) embedSIMD() bool { return false }

func (k *kernels) blocksSIMD(u, a, x, sign []float32, perm []int32, gauss []float32, nb int) bool {
	return false
}

func (k *kernels) bitsSIMD(out []uint64, u, scale []float32, turn, half []float64, s32, t32, e32 []float32) bool {
	return false
}

func (k *kernels) tilesSIMD(u, a, xt, sign []float32, perm []int32, gauss []float32, d int, pairs bool) bool {
	return false
}

func (k *kernels) tilesFor(d int) bool { return false }

func (k *kernels) pairTiles(d int) bool { return false }

func (k *kernels) pairsInRegisters(d int) bool { return false }

func measuredGather() int { return 0 }

func (k *kernels) table8SIMD(t *[128]float32, x []float32) bool { return false }

func (k *kernels) blocks8SIMD(u []float32, t *[128]float32, row, p8 []int32, g8 []float32) bool {
	return false
}

func (k *kernels) table16SIMD(t *[table16Len]float32, x []float32) bool { return false }

func (k *kernels) blocks16SIMD(u []float32, t *[table16Len]float32, row, hi, p16 []int32, g16 []float32) bool {
	return false
}

func (k *kernels) treeLeavesSIMD(leaf []int32, xs []float32, feat []int32, value []float32, depth int) int {
	return 0
}

func (k *kernels) threshSIMD(out []uint64, xs []float32, feature []int32, value []float32) int {
	return 0
}

func (k *kernels) projSIMD(acc *[8]float32, x []float32, idx []int32, coef []int8) {
	panic("inference: no fast path")
}

func (k *kernels) differSIMD(z, sign, nz []uint64) (differ, words int) { return 0, 0 }

func (k *kernels) noveltySIMD(z []uint64, cols, d []int32) (sum int32, n int) { return 0, 0 }

func (k *kernels) outsideSIMD(x, lo, scale []float32, w uint32) (sum uint32, n int) { return 0, 0 }
