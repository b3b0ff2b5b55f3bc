package bundle

import (
	"math"

	"github.com/trit-iot/trit/inference"
)

// This file holds the IEEE 754 binary16 ("half") conversions the scaler's
// compact form uses. Both directions are pure integer bit manipulation, so
// they give the same result on every architecture.

// MaxHalf is the largest finite float16 value. A scaler with any |value|
// above it ships as float32 (see CompactScaler).
const MaxHalf = 65504

// halfToFloat32 returns the float32 equal to the half h. It is exact: every
// half value is a float32 value. NaN payloads are kept.
func halfToFloat32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	man := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f: // Inf or NaN
		return math.Float32frombits(sign | 0x7f800000 | man<<13)
	case exp == 0 && man == 0:
		return math.Float32frombits(sign)
	case exp == 0: // subnormal: man·2⁻²⁴, exact in float32
		f := float32(man) * (1.0 / (1 << 24))
		return math.Float32frombits(sign | math.Float32bits(f))
	}
	return math.Float32frombits(sign | (exp+112)<<23 | man<<13)
}

// float32ToHalf rounds f to the nearest half, ties to even. Values at or
// beyond 65520 in magnitude round to ±Inf, as IEEE 754 requires; NaN stays
// NaN (quiet).
func float32ToHalf(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23) & 0xff
	man := b & 0x7fffff
	if exp == 0xff {
		if man != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15 // half exponent field
	if e >= 0x1f {
		return sign | 0x7c00
	}
	if e <= 0 {
		// Half subnormal m·2⁻²⁴: m is the 24-bit significand shifted right
		// by 14-e. Below 2⁻²⁵ (shift > 24) everything rounds to zero.
		if e < -10 {
			return sign
		}
		sig := man | 0x800000
		shift := uint(14 - e)
		return sign | uint16(roundShift(sig, shift))
	}
	// Normal: keep 10 of the 23 mantissa bits. A carry out of the mantissa
	// correctly bumps the exponent (up to Inf).
	h := uint32(e)<<10 | man>>13
	rem, half := man&0x1fff, uint32(0x1000)
	if rem > half || rem == half && h&1 == 1 {
		h++
	}
	return sign | uint16(h)
}

// roundShift returns v >> shift rounded to nearest, ties to even.
func roundShift(v uint32, shift uint) uint32 {
	q := v >> shift
	rem, half := v&(1<<shift-1), uint32(1)<<(shift-1)
	if rem > half || rem == half && q&1 == 1 {
		q++
	}
	return q
}

// isHalf reports whether f is exactly a finite float16 value.
func isHalf(f float32) bool {
	h := float32ToHalf(f)
	return h&0x7c00 != 0x7c00 && math.Float32bits(halfToFloat32(h)) == math.Float32bits(f)
}

// halfDown returns the largest half <= f, and halfUp the smallest half >= f,
// for finite |f| <= MaxHalf.
func halfDown(f float32) uint16 {
	h := float32ToHalf(f)
	if halfToFloat32(h) > f {
		h = halfPrev(h)
	}
	return h
}

func halfUp(f float32) uint16 {
	h := float32ToHalf(f)
	if halfToFloat32(h) < f {
		h = halfNext(h)
	}
	return h
}

// halfPrev returns the next half towards -Inf from the finite half h, and
// halfNext the next towards +Inf. Halves are sign-magnitude, so a step is
// ±1 on the magnitude bits, crossing zero through the smallest subnormal.
func halfPrev(h uint16) uint16 {
	switch {
	case h&0x7fff == 0: // ±0
		return 0x8001
	case h&0x8000 == 0:
		return h - 1
	}
	return h + 1
}

func halfNext(h uint16) uint16 {
	switch {
	case h&0x7fff == 0:
		return 0x0001
	case h&0x8000 == 0:
		return h + 1
	}
	return h - 1
}

// CompactScaler returns the scaler that ships in a bundle's compact form:
// every Lo rounded down and every Hi rounded up to a float16 value, so data
// the original scaler mapped into [-1, 1] stays inside it. Training snaps its
// fitted scaler with CompactScaler before it trains, so the bundled model is
// exactly the trained model.
//
// If any value is beyond the float16 range (|v| > MaxHalf) or not finite,
// it returns an unchanged copy: such a scaler ships as float32, whole.
// Clip is kept. The input is never modified.
func CompactScaler(s inference.Scaler) inference.Scaler {
	out := inference.Scaler{
		Lo:   append([]float32(nil), s.Lo...),
		Hi:   append([]float32(nil), s.Hi...),
		Clip: s.Clip,
	}
	if !halfRange(s.Lo) || !halfRange(s.Hi) {
		return out
	}
	for i, v := range out.Lo {
		out.Lo[i] = halfToFloat32(halfDown(v))
	}
	for i, v := range out.Hi {
		out.Hi[i] = halfToFloat32(halfUp(v))
	}
	return out
}

// halfRange reports whether every value is finite and within ±MaxHalf.
func halfRange(vs []float32) bool {
	for _, v := range vs {
		if !(v >= -MaxHalf && v <= MaxHalf) {
			return false
		}
	}
	return true
}
