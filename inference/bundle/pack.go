package bundle

import (
	"math/bits"
	"strconv"
)

// A ternary vector — a weight vector over the K kept columns, or a
// projection row over the D inputs — ships as a flags byte and a payload in
// one of three forms:
//
//	flags 1 (packSign):   sign plane only, ⌈n/8⌉ bytes; the vector has no
//	                      zero (its non-zero plane is all ones)
//	flags 0 (packPlanes): sign plane then non-zero plane, 2·⌈n/8⌉ bytes
//	flags 2 (packBase3):  ⌈n/5⌉ bytes, five trits a byte: byte j is
//	                      Σ_{k<5} t_{5j+k}·3^k < 243, trit 0 ↔ 0, 1 ↔ +1,
//	                      2 ↔ −1; trits past n are 0
//
// Format 1 knows flags 0 and 1 only and accepts either whatever the vector
// holds, and sign bits where the weight is 0. Format 2 has exactly one
// encoding per vector (canonicalPack): the smallest form, planes on a tie,
// and in the planes form no sign bit where the weight is 0.
const (
	packPlanes = 0
	packSign   = 1 << 0 // format 1's "non-zero plane omitted" flag
	packBase3  = 1 << 1
)

// packName names a form for Inspect.
func packName(flags byte) string {
	switch flags {
	case packSign:
		return "sign"
	case packPlanes:
		return "planes"
	case packBase3:
		return "base3"
	}
	return "form " + strconv.Itoa(int(flags))
}

// packedSize is the payload of a vector of n coordinates in the given form.
func packedSize(flags byte, n int) int {
	switch flags {
	case packSign:
		return (n + 7) / 8
	case packBase3:
		return (n + 4) / 5
	}
	return 2 * ((n + 7) / 8)
}

// canonicalPack returns the form format 2 uses for a vector of n
// coordinates: the sign plane alone when there is no zero (never larger than
// base 3), else whichever of the two planes and base 3 is smaller, the
// planes on a tie.
func canonicalPack(n int, hasZero bool) byte {
	switch {
	case !hasZero:
		return packSign
	case packedSize(packBase3, n) < packedSize(packPlanes, n):
		return packBase3
	}
	return packPlanes
}

// appendPacked writes the flags byte and payload of the ternary vector (sign,
// nz) of n coordinates (bit planes as in inference.TernaryDot, no bits past
// n) in the given form. In the planes forms the sign plane is masked with
// the non-zero plane when mask is set (format 2); format 1 ships it as is.
func appendPacked(out []byte, flags byte, sign, nz []uint64, n int, mask bool) []byte {
	out = append(out, flags)
	nb := (n + 7) / 8
	switch flags {
	case packSign:
		return appendPlane(out, sign, nb)
	case packPlanes:
		if mask {
			start := len(out)
			out = appendPlane(out, sign, nb)
			for i := range nb {
				out[start+i] &= byte(nz[i/8] >> (8 * (i % 8)))
			}
		} else {
			out = appendPlane(out, sign, nb)
		}
		return appendPlane(out, nz, nb)
	}
	for j := 0; j < n; j += 5 {
		var v byte
		for k := min(n-1, j+4); k >= j; k-- { // high trit first: Horner
			v *= 3
			if nz[k>>6]>>(k&63)&1 != 0 {
				v += 2 - byte(sign[k>>6]>>(k&63)&1) // +1 → 1, −1 → 2
			}
		}
		out = append(out, v)
	}
	return out
}

// hasZero reports whether the ternary vector with non-zero plane nz over n
// coordinates has a zero.
func hasZero(nz []uint64, n int) bool { return !allOnes(nz, n) }

// packed reads a ternary vector of n coordinates (what names it in errors)
// into bit planes of words 64-bit words each, and returns its form. Format 1
// accepts flags 0 and 1; format 2 accepts exactly the canonical form.
func (r *reader) packed(what string, n, words int, format byte) (sign, nz []uint64, flags byte) {
	at := r.pos
	flags = r.u8(what + " flags")
	if r.err != nil {
		return nil, nil, flags
	}
	switch {
	case format == 1 && flags&^packSign != 0:
		r.fail(ErrInvalid, at, "%s: unknown flags %#x", what, flags)
	case format >= 2 && flags != packPlanes && flags != packSign && flags != packBase3:
		r.fail(ErrInvalid, at, "%s: flags %#x, want 0 (planes), 1 (sign plane) or 2 (base 3)", what, flags)
	}
	nb := (n + 7) / 8
	switch flags {
	case packSign:
		sign = r.plane(what+" sign plane", n, words, nb)
		nz = onesPlane(n, words)
	case packPlanes:
		sign = r.plane(what+" sign plane", n, words, nb)
		nz = r.plane(what+" non-zero plane", n, words, nb)
		if r.err == nil && format >= 2 {
			for i := range sign {
				if sign[i]&^nz[i] != 0 {
					r.fail(ErrInvalid, at, "%s: sign bit set where the weight is 0 (sign bit %d)", what, 64*i+bits.TrailingZeros64(sign[i]&^nz[i]))
					break
				}
			}
		}
	case packBase3:
		sign, nz = r.base3(what, n, words)
	}
	if r.err != nil {
		return nil, nil, flags
	}
	if format >= 2 {
		if want := canonicalPack(n, hasZero(nz, n)); flags != want {
			r.fail(ErrInvalid, at, "%s: %s form (%d bytes), but the %s form (%d bytes) is the canonical one",
				what, packName(flags), packedSize(flags, n), packName(want), packedSize(want, n))
			return nil, nil, flags
		}
	}
	return sign, nz, flags
}

// base3 reads the base-3 payload of a vector of n coordinates.
func (r *reader) base3(what string, n, words int) (sign, nz []uint64) {
	start := r.pos
	raw := r.take((n+4)/5, what+" trits")
	if r.err != nil {
		return nil, nil
	}
	sign, nz = make([]uint64, words), make([]uint64, words)
	for j, v := range raw {
		if v >= 243 {
			r.fail(ErrInvalid, start+j, "%s: base-3 byte %d is %d, want < 243", what, j, v)
			return nil, nil
		}
		for k := 5 * j; v != 0; k++ {
			t := v % 3
			v /= 3
			if k >= n {
				r.fail(ErrInvalid, start+j, "%s: non-zero trit %d past the last of %d coordinates", what, k, n)
				return nil, nil
			}
			if t != 0 {
				nz[k>>6] |= 1 << (k & 63)
				if t == 1 {
					sign[k>>6] |= 1 << (k & 63)
				}
			}
		}
	}
	return sign, nz
}
