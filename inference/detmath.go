package inference

import "math"

// This file holds the only transcendental functions the transform generator
// uses. They are written out here rather than taken from package math
// because the generated transform must be bit-identical on every
// architecture: math.Log has assembly versions on some (amd64, s390x) and
// pure-Go versions on others, and on arm64 the compiler may fuse x*y+z into
// an FMA that rounds once instead of twice. Every product that feeds an
// addition below is therefore wrapped in an explicit float64 conversion,
// which the Go spec defines as a rounding point that forbids fusion.
// Only +, -, *, / and math.Sqrt (correctly rounded by IEEE 754 everywhere)
// are used, plus exact bit manipulation (math.Frexp, math.Floor).
//
// Accuracy is a secondary goal (a few ulp is fine); determinism is the point.

const ln2 = 0.693147180559945309417232121458176568

// detLog returns the natural logarithm of x > 0 (finite). Reference:
//
//	x = m·2^e with m in [√½, √2);  log x = e·ln2 + 2·atanh(s),  s = (m-1)/(m+1)
//	atanh(s) = s + s³/3 + s⁵/5 + … (|s| ≤ 0.1716, 12 terms reach 1e-18)
func detLog(x float64) float64 {
	m, e := math.Frexp(x) // m in [0.5, 1)
	if m < math.Sqrt2/2 {
		m *= 2 // exact
		e--
	}
	s := (m - 1) / (m + 1)
	s2 := float64(s * s)
	// Horner over the odd reciprocals 1/23 … 1/1.
	sum := 1.0 / 23
	for k := 10; k >= 0; k-- {
		sum = float64(sum*s2) + 1/float64(2*k+1)
	}
	return float64(float64(e)*ln2) + float64(2*s*sum)
}

// detAtanReduced is Cephes' atan on [0, 0.66] (as in Go's math.xatan), with
// every intermediate product rounded explicitly.
func detAtanReduced(x float64) float64 {
	const (
		p0 = -8.750608600031904122785e-01
		p1 = -1.615753718733365076637e+01
		p2 = -7.500855792314704667340e+01
		p3 = -1.228866684490136173410e+02
		p4 = -6.485021904942025371773e+01
		q0 = +2.485846490142306297962e+01
		q1 = +1.650270098316988542046e+02
		q2 = +4.328810604912902668951e+02
		q3 = +4.853903996359136964868e+02
		q4 = +1.945506571482613964425e+02
	)
	z := float64(x * x)
	num := float64(float64(float64(float64(float64(float64(float64(p0*z)+p1)*z)+p2)*z)+p3)*z) + p4
	den := float64(float64(float64(float64(float64(float64(float64(float64(z+q0)*z)+q1)*z)+q2)*z)+q3)*z) + q4
	z = float64(z*num) / den
	return float64(x*z) + x
}

// detAtan returns atan(x) for x >= 0 (Cephes' argument reduction).
func detAtan(x float64) float64 {
	const (
		morebits = 6.123233995736765886130e-17 // π/2 = math.Pi/2 + morebits
		tan3pio8 = 2.41421356237309504880      // tan(3π/8)
	)
	switch {
	case x <= 0.66:
		return detAtanReduced(x)
	case x > tan3pio8:
		return math.Pi/2 - detAtanReduced(1/x) + morebits
	default:
		return math.Pi/4 + detAtanReduced((x-1)/(x+1)) + 0.5*morebits
	}
}

// detAcos returns arccos(x) for x in [-1, 1]:
//
//	asin(x) = atan(x/√(1-x²)) for |x| ≤ 0.7, π/2 - atan(√(1-x²)/|x|) otherwise
//	acos(x) = π/2 - asin(x)
func detAcos(x float64) float64 {
	ax := math.Abs(x)
	// (1-|x|)(1+|x|) rather than 1-x²: 1-|x| is exact for |x| >= ½
	// (Sterbenz), so there is no cancellation as |x| → 1.
	r := math.Sqrt(float64((1 - ax) * (1 + ax)))
	var asin float64
	if ax > 0.7 {
		asin = math.Pi/2 - detAtan(r/ax)
	} else {
		asin = detAtan(ax / r)
	}
	if x < 0 {
		asin = -asin
	}
	return math.Pi/2 - asin
}
