package inference

// The table path for blocks of d = 16 (table8.go has the argument and ≅).
// The first transform of B∘x is FWHT's stages h = 1, 2, 4 on each half, L
// and U, then stage h = 8: a_j, a_(j+8) = L_j + U_j, L_j − U_j. With each
// half's signs β·H_i∘R_m (signClass), L_j ≅ β_lo·Alo_m[j ⊕ i_lo] and
// U_j ≅ β_hi·Ahi_m'[j ⊕ i_hi], Alo and Ahi the d = 8 tables of x's two
// halves. With γ = β_lo·β_hi, δ = i_lo ⊕ i_hi and j' = j ⊕ i_lo:
// L_j ± U_j ≅ β_lo·(Alo_m[j'] ± γ·Ahi_m'[j' ⊕ δ]). So the table also keeps
// Ahi's rows shifted by each δ (128 rows), and with c and c' the sum and
// difference of block's Alo row and shifted Ahi row, C = (c, c'):
// a_p ≅ β_lo·C[p ⊕ i_lo ⊕ 8·[γ = −1]] for p < 16. The second transform's
// input gauss_l·a[perm_l] is then ≅ g_l·C[q_l] with g = β_lo·gauss and
// q = perm ⊕ i_lo ⊕ 8·[γ = −1], prepared at load. c and c' are the
// reference's stage h = 8 on ≅ operands, so ≅ holds to the end: the bits
// are the same.

// table16Len is the length of a d = 16 table: 16 rows of the lower half
// (from 0), 16 of the upper (from 128), and the upper ones once per shift
// δ, row 8m + δ (from table16Hi).
const (
	table16Hi  = 256
	table16Len = table16Hi + 1024
)

// initTable16 prepares the table path of a transform with d = 16: per
// block k, row8[k] = 8m of its lower half's class and hi16[k] = 8(8m' + δ)
// (from table16Hi) of its upper half's, and per value p8 = q and g8 = g as
// above.
func (tr *Transform) initTable16() {
	nb := len(tr.blocks)
	tr.row8, tr.hi16 = make([]int32, nb), make([]int32, nb)
	tr.p8, tr.g8 = make([]int32, 16*nb), make([]float32, 16*nb)
	for k, blk := range tr.blocks {
		bl, il, ml := signClass(blk.sign[:8])
		bh, ih, mh := signClass(blk.sign[8:16])
		flip := int32(0)
		if bl*bh < 0 {
			flip = 8
		}
		tr.row8[k] = int32(8 * ml)
		tr.hi16[k] = int32(8 * (8*mh + (il ^ ih)))
		for l := range 16 {
			tr.p8[16*k+l] = blk.perm[l] ^ int32(il) ^ flip
			tr.g8[16*k+l] = bl * blk.gauss[l]
		}
	}
}

// table16 writes the d = 16 table of the padded input x (len 16) into t.
func table16(t *[table16Len]float32, x []float32) {
	x = x[:16:16]
	table8((*[128]float32)(t[:128]), x[:8])
	hi := (*[128]float32)(t[128:256])
	table8(hi, x[8:])
	table16Shifts(t)
}

// table16Shifts writes the shifted upper rows of t from its upper rows:
// row 8m + δ, lane j is row m's lane j ⊕ δ.
func table16Shifts(t *[table16Len]float32) {
	for m := range 16 {
		row := t[128+8*m : 128+8*m+8 : 128+8*m+8]
		for s := range 8 {
			out := t[table16Hi+8*(8*m+s):][:8:8]
			for j := range 8 {
				out[j] = row[j^s]
			}
		}
	}
}

// block16 is transformBlock for block k of a d = 16 transform from the
// table t of the input (table16) into b (len 16): ≅ transformBlock's w.
func (tr *Transform) block16(k int, t *[table16Len]float32, b []float32) []float32 {
	b = b[:16:16]
	lo, hi := t[tr.row8[k]&127:][:8:8], t[table16Hi+tr.hi16[k]&1023:][:8:8]
	var c [16]float32
	for j := range 8 {
		c[j], c[j+8] = lo[j]+hi[j], lo[j]-hi[j]
	}
	p, g := tr.p8[16*k:16*k+16:16*k+16], tr.g8[16*k:16*k+16:16*k+16]
	for i := 0; i < 16; i += 4 {
		b[i], b[i+1], b[i+2], b[i+3] = butterfly4(
			float32(g[i]*c[p[i]&15]), float32(g[i+1]*c[p[i+1]&15]),
			float32(g[i+2]*c[p[i+2]&15]), float32(g[i+3]*c[p[i+3]&15]))
	}
	for j := range 4 {
		q0, q1, q2, q3 := b[j], b[j+4], b[j+8], b[j+12]
		s0, d0 := q0+q1, q0-q1
		s1, d1 := q2+q3, q2-q3
		b[j], b[j+4], b[j+8], b[j+12] = s0+s1, d0+d1, s0-s1, d0-d1
	}
	return b
}
