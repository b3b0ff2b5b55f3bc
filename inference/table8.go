package inference

// The table path for blocks of d = 8 (issue 30). transformBlock's first
// transform a = H B_k x is, for every block, a permutation of one of 16
// vectors, up to sign: so per input x the 16 vectors are computed once
// (table8, 128 values), and each block keeps only the second half of
// transformBlock — a gather from the table, one multiply, the second FWHT.
//
// Why it gives the same bits. Write ≅ for "equal, except that zeros may
// differ in sign and NaNs in sign and payload". FWHT's output j of a
// vector z is a fixed tree of additions and subtractions of the z_l
// (butterfly4's grouping, then stage h = 4), the operation at each node
// chosen by j. Under round-to-nearest-even fl(u − v) = fl(u + (−v)) and
// fl((−u) + (−v)) = −fl(u + v) unless the sum is zero (an exact
// cancellation gives +0 for both) — so, node by node, output j of z is
// ≅ the all-additions tree of H_j∘z (H_j row j of H, ∘ lane by lane),
// and that tree of −y is ≅ −(that tree of y). ≅ is kept by every later
// operation: u + v with u ≅ u', v ≅ v' is ≅ u' + v' (x + (±0) = x for
// x ≠ 0, a sum of two zeros is a zero, a NaN operand or ∞ − ∞ gives NaN
// either way), and so is g·u for a finite g (the Gaussians are finite).
// Since H_j∘H_i = H_(j⊕i), output j of FWHT(β·H_i∘y) is ≅ β times output
// j⊕i of FWHT(y), for β = ±1. Every sign vector B with B_0 = β is
// β·H_i∘R_m for exactly one i < 8 and one of the 16 vectors R_m with
// R_m,0 = R_m,1 = R_m,2 = R_m,4 = +1 (the rows H_i are the 8 patterns of
// the signs at 1, 2 and 4 and have +1 at 0). So with table row
// A_m = FWHT(x∘R_m), computed by FWHT's own tree, block k's first
// transform is a_j ≅ β_k·A_m[j ⊕ i_k], and the second transform's input
// gauss_l·a[perm_l] is ≅ (β_k·gauss_l)·A_m[perm_l ⊕ i_k]: the signed
// Gaussians g8 and the indices p8 are prepared at load. The second FWHT
// then runs the reference's operations on ≅ inputs, so w is ≅ the
// reference w, and the interval test gives the same bit for ≅ values: a
// NaN phase is bit 0 whatever its sign, and v = ±0·scale = ±0 gives
// q = turn (or ±0 + 0 = +0) either way, as in the float32 first pass of
// bitsSIMD. w itself may differ from transformBlock's in zeros' signs,
// which is why only the bits, never w, are compared (table8_test.go).

// table8Signs are the 16 sign vectors R_m: +1 at lanes 0, 1, 2 and 4,
// and bit 0–3 of m the signs (set: −1) of lanes 3, 5, 6 and 7.
var table8Signs = func() (s [16][8]float32) {
	for m := range s {
		for j := range 8 {
			s[m][j] = 1
		}
		for b, j := range []int{3, 5, 6, 7} {
			if m>>b&1 == 1 {
				s[m][j] = -1
			}
		}
	}
	return s
}()

// initTable8 prepares the table path of a transform with d = 8: per block
// k with sign vector B = β·H_i∘R_m, row[k] = 8m, p8[8k+l] = perm_l ⊕ i
// (plus 16 for odd k, for blocks8AVX512; the other paths read the low three
// bits) and g8[8k+l] = β·gauss_l (exact: a sign change).
func (tr *Transform) initTable8() {
	nb := len(tr.blocks)
	tr.row8, tr.p8, tr.g8 = make([]int32, nb), make([]int32, 8*nb), make([]float32, 8*nb)
	for k, blk := range tr.blocks {
		beta, i, m := signClass(blk.sign[:8])
		tr.row8[k] = int32(8 * m)
		for l := range 8 {
			tr.p8[8*k+l] = blk.perm[l] ^ int32(i) | int32(k&1)<<4
			tr.g8[8*k+l] = beta * blk.gauss[l]
		}
	}
}

// signClass returns the β, i and m with s = β·H_i∘R_m for a vector s of
// eight signs (±1).
func signClass(s []float32) (beta float32, i, m int) {
	beta = s[0]
	for b, j := range []int{1, 2, 4} {
		if beta*s[j] < 0 {
			i |= 1 << b
		}
	}
	for mm, r := range table8Signs {
		ok := true
		for j := range 8 {
			h := float32(1 - 2*(bitsOnes(i&j)&1)) // H_i,j
			ok = ok && beta*h*r[j] == s[j]
		}
		if ok {
			return beta, i, mm
		}
	}
	panic("inference: table8: sign vector not in the table")
}

// bitsOnes is the number of set bits of a small non-negative v.
func bitsOnes(v int) int {
	n := 0
	for ; v != 0; v &= v - 1 {
		n++
	}
	return n
}

// table8 writes row m of the table, FWHT(x∘R_m) with transformBlock's
// operations, into t[8m:8m+8], for the padded input x (len 8).
func table8(t *[128]float32, x []float32) {
	x = x[:8:8]
	for m := range table8Signs {
		r, v := &table8Signs[m], t[8*m:8*m+8:8*m+8]
		v[0], v[1], v[2], v[3] = butterfly4(x[0]*r[0], x[1]*r[1], x[2]*r[2], x[3]*r[3])
		v[4], v[5], v[6], v[7] = butterfly4(x[4]*r[4], x[5]*r[5], x[6]*r[6], x[7]*r[7])
		for j := range 4 {
			v[j], v[j+4] = v[j]+v[j+4], v[j]-v[j+4]
		}
	}
}

// block8 is transformBlock for block k of a d = 8 transform from the
// table t of the input (table8) into b (len 8): b is ≅ transformBlock's w
// (see above), the same bits.
func (tr *Transform) block8(k int, t *[128]float32, b []float32) []float32 {
	b = b[:8:8]
	p, g := tr.p8[8*k:8*k+8:8*k+8], tr.g8[8*k:8*k+8:8*k+8]
	a := t[tr.row8[k]&120:][:8:8]
	b[0], b[1], b[2], b[3] = butterfly4(
		float32(g[0]*a[p[0]&7]), float32(g[1]*a[p[1]&7]),
		float32(g[2]*a[p[2]&7]), float32(g[3]*a[p[3]&7]))
	b[4], b[5], b[6], b[7] = butterfly4(
		float32(g[4]*a[p[4]&7]), float32(g[5]*a[p[5]&7]),
		float32(g[6]*a[p[6]&7]), float32(g[7]*a[p[7]&7]))
	for j := range 4 {
		b[j], b[j+4] = b[j]+b[j+4], b[j]-b[j+4]
	}
	return b
}
