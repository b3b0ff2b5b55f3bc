package inference

import "math/bits"

// TernaryDot returns wᵀz for a ternary w ∈ {-1, 0, +1}ⁿ held as two bit
// planes and a binary z ∈ {-1, +1}ⁿ held as one, all packed LSB-first in
// words of 64 (bit 1 of z means +1; bit 1 of sign means w = +1; bit 1 of nz
// means w ≠ 0; sign bits where nz is 0 are ignored). Bits past n in the last
// word must be 0 in nz. With x = z XOR sign, a kept coordinate contributes +1
// when x is 0 (signs agree) and -1 otherwise:
//
//	popcount(nz &^ (z ^ sign)) - popcount(nz & (z ^ sign))
//
// Reference loop:
//
//	var dot int
//	for j := 0; j < n; j++ {
//		dot += w[j] * z[j]
//	}
//
// Since agree + differ = popcount(nz), it is computed as popcount(nz) −
// 2·differ: one count per word that depends on z (ternaryDiffer), the
// other fixed by the weights (a Model counts it once, at load). Counts are
// integers, so the result is the same.
func TernaryDot(z, sign, nz []uint64) int { return ternaryDot(&cpu, z, sign, nz) }

// ternaryDot is TernaryDot with the kernels k.
func ternaryDot(k *kernels, z, sign, nz []uint64) int {
	return onesCount(nz[:len(z)]) - 2*ternaryDiffer(k, z, sign, nz)
}

// onesCount returns the number of bits set in v.
func onesCount(v []uint64) int {
	n := 0
	for _, w := range v {
		n += bits.OnesCount64(w)
	}
	return n
}

// ternaryDiffer returns popcount(nz & (z ^ sign)) over len(z) words: how
// many kept coordinates' signs differ. With a fast path (AVX2 on amd64;
// AVX-512 BW or VPOPCNTQ where the CPU has them) whole groups of four or
// eight words are counted at a time; counts are integers, so the result
// is the same.
//
// Reference loop:
//
//	differ := 0
//	for i := range z {
//		differ += bits.OnesCount64(nz[i] & (z[i] ^ sign[i]))
//	}
func ternaryDiffer(k *kernels, z, sign, nz []uint64) int {
	sign, nz = sign[:len(z)], nz[:len(z)]
	differ, done := k.differSIMD(z, sign, nz)
	for i := done; i < len(z); i++ {
		differ += bits.OnesCount64(nz[i] & (z[i] ^ sign[i]))
	}
	return differ
}

// ternaryDotPrefix is TernaryDot over the first n coordinates only.
// Reference loop: as TernaryDot's, for j < n.
func ternaryDotPrefix(k *kernels, z, sign, nz []uint64, n int) int {
	full := n / 64
	dot := ternaryDot(k, z[:full], sign[:full], nz[:full])
	if tail := n % 64; tail != 0 {
		mask := uint64(1)<<tail - 1
		x := z[full] ^ sign[full]
		k := nz[full] & mask
		dot += bits.OnesCount64(k&^x) - bits.OnesCount64(k&x)
	}
	return dot
}

// PackTernary packs w ∈ {-1, 0, +1}ⁿ into sign and non-zero bit planes of
// (n+63)/64 words each (see TernaryDot). Values other than -1, 0 and 1 are
// treated by their sign.
func PackTernary(sign, nz []uint64, w []int8) {
	words := (len(w) + 63) / 64
	clear(sign[:words])
	clear(nz[:words])
	for j, v := range w {
		if v == 0 {
			continue
		}
		nz[j>>6] |= 1 << (j & 63)
		if v > 0 {
			sign[j>>6] |= 1 << (j & 63)
		}
	}
}

// UnpackTernary is the inverse of PackTernary: it writes len(w) coordinates.
func UnpackTernary(w []int8, sign, nz []uint64) {
	for j := range w {
		switch {
		case nz[j>>6]>>(j&63)&1 == 0:
			w[j] = 0
		case sign[j>>6]>>(j&63)&1 == 1:
			w[j] = 1
		default:
			w[j] = -1
		}
	}
}
