package inference

// The amd64 table path for d = 8 (table8.go, table8_amd64.s): the table
// and the blocks with AVX2 and FMA3. FMA only adds ±1 times a value, an
// exact product, so each FMA is one rounded addition or subtraction of
// the reference loop (see T8FWHT).

//go:noescape
func table8AVX2(t *[128]float32, x []float32, signs *[16][8]float32, masks *[3][8]float32)

//go:noescape
func blocks8AVX512(u []float32, t *[128]float32, row, p8 []int32, g8 []float32, masks *[3][8]float32)

//go:noescape
func table8AVX512(t *[128]float32, x []float32, signs *[16][8]float32, masks *[3][8]float32)

//go:noescape
func table16AVX512(t *[table16Len]float32, x []float32, signs *[16][8]float32, masks *[3][8]float32, idx *[4][16]int32)

//go:noescape
func blocks8AVX2(u []float32, t *[128]float32, row, p8 []int32, g8 []float32, masks *[3][8]float32)

//go:noescape
func table16ShiftsAVX2(t *[table16Len]float32, idx *[8][8]int32)

//go:noescape
func blocks16AVX512(u []float32, t *[table16Len]float32, row, hi, p16 []int32, g16 []float32, masks *[3][8]float32, m8 *[16]float32)

//go:noescape
func blocks16AVX2(u []float32, t *[table16Len]float32, row, hi, p16 []int32, g16 []float32, masks *[3][8]float32)

// table16Idx are table16ShiftsAVX2's permutations: lane j of row δ is
// j ⊕ δ.
var table16Idx = func() (idx [8][8]int32) {
	for s := range idx {
		for j := range idx[s] {
			idx[s][j] = int32(j ^ s)
		}
	}
	return idx
}()

// table16PairIdx are table16AVX512's permutations: two shifted upper
// rows, 2q and 2q + 1, from the upper half.
var table16PairIdx = func() (idx [4][16]int32) {
	for q := range idx {
		for j := range 8 {
			idx[q][j], idx[q][8+j] = int32(8+(j^(2*q))), int32(8+(j^(2*q+1)))
		}
	}
	return idx
}()

// table16M8 is T16STAGE8's ±1 lanes: −1 in the upper half.
var table16M8 = [16]float32{1, 1, 1, 1, 1, 1, 1, 1, -1, -1, -1, -1, -1, -1, -1, -1}

// table8Masks are T8FWHT's ±1 lanes for the stages h = 1, 2, 4: −1 in the
// upper lane of each pair.
var table8Masks = [3][8]float32{
	{1, -1, 1, -1, 1, -1, 1, -1},
	{1, 1, -1, -1, 1, 1, -1, -1},
	{1, 1, 1, 1, -1, -1, -1, -1},
}

// table8SIMD is table8 with the fast path; it returns false, doing
// nothing, when there is none.
func (k *kernels) table8SIMD(t *[128]float32, x []float32) bool {
	if !k.simd || !k.fma3 {
		return false
	}
	if k.avx512 {
		table8AVX512(t, x[:8], &table8Signs, &table8Masks)
		return true
	}
	table8AVX2(t, x[:8], &table8Signs, &table8Masks)
	return true
}

// blocks8SIMD computes block8 of len(row) consecutive blocks into u with
// the fast path (p8 and g8 theirs, 8 a block); it returns false, doing
// nothing, when there is none.
func (k *kernels) blocks8SIMD(u []float32, t *[128]float32, row, p8 []int32, g8 []float32) bool {
	if !k.simd || !k.fma3 {
		return false
	}
	n := 8 * len(row)
	if !k.avx512 {
		blocks8AVX2(u[:n], t, row, p8[:n], g8[:n], &table8Masks)
		return true
	}
	if n > 0 && p8[0]&16 != 0 { // an odd first block (see blocks8AVX512)
		blocks8AVX2(u[:8], t, row[:1], p8[:8], g8[:8], &table8Masks)
		u, row, p8, g8, n = u[8:], row[1:], p8[8:], g8[8:], n-8
	}
	blocks8AVX512(u[:n], t, row, p8[:n], g8[:n], &table8Masks)
	return true
}

// table16SIMD is table16 with the fast path (FMA3, which blocks16SIMD
// needs); it returns false, doing nothing, when there is none.
func (k *kernels) table16SIMD(t *[table16Len]float32, x []float32) bool {
	if !k.simd || !k.fma3 {
		return false
	}
	if k.avx512 {
		table16AVX512(t, x[:16], &table8Signs, &table8Masks, &table16PairIdx)
		return true
	}
	table8AVX2((*[128]float32)(t[:128]), x[:8], &table8Signs, &table8Masks)
	table8AVX2((*[128]float32)(t[128:256]), x[8:16], &table8Signs, &table8Masks)
	table16ShiftsAVX2(t, &table16Idx)
	return true
}

// blocks16SIMD computes block16 of len(row) consecutive blocks into u with
// the fast path (hi, p16 and g16 theirs); it returns false, doing nothing,
// when there is none.
func (k *kernels) blocks16SIMD(u []float32, t *[table16Len]float32, row, hi, p16 []int32, g16 []float32) bool {
	if !k.simd || !k.fma3 {
		return false
	}
	n := 16 * len(row)
	if !k.avx512 {
		blocks16AVX2(u[:n], t, row, hi[:len(row)], p16[:n], g16[:n], &table8Masks)
		return true
	}
	blocks16AVX512(u[:n], t, row, hi[:len(row)], p16[:n], g16[:n], &table8Masks, &table16M8)
	return true
}
