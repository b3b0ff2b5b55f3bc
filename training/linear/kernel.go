package linear

// The hot loops of the solver: float32 or int8 rows (Value) against
// float64 weights; every int8 is exactly a float32, so both give the same
// bits. Each is
// unrolled four ways with independent accumulators so the additions overlap;
// the summation order is fixed, so results do not depend on anything but the
// inputs (and on whether the platform fuses multiply-adds).

// dot returns Σ_j w[j]·x[j]; len(x) must be at least len(w). Reference loop:
//
//	for j := range w {
//		s += w[j] * float64(x[j])
//	}
func dot[T Value](w []float64, x []T) float64 {
	x = x[:len(w)]
	if x8, ok := any(x).([]int8); ok && useAVX2 {
		n4 := len(w) &^ 3
		var s [4]float64
		dot4Int8AVX2(&s, w[:n4], x8[:n4])
		for j := n4; j < len(w); j++ {
			s[0] += w[j] * float64(x8[j])
		}
		return (s[0] + s[1]) + (s[2] + s[3])
	}
	return dotGo(w, x)
}

// dotGo is dot's Go loop, which the AVX2 loop must equal bit for bit.
func dotGo[T Value](w []float64, x []T) float64 {
	x = x[:len(w)]
	var s0, s1, s2, s3 float64
	for len(w) >= 4 {
		ww, xx := w[:4:4], x[:4:4]
		s0 += ww[0] * float64(xx[0])
		s1 += ww[1] * float64(xx[1])
		s2 += ww[2] * float64(xx[2])
		s3 += ww[3] * float64(xx[3])
		w, x = w[4:], x[4:]
	}
	for j := range w {
		s0 += w[j] * float64(x[j])
	}
	return (s0 + s1) + (s2 + s3)
}

// axpy does w[j] += a·x[j]; len(x) must be at least len(w). Reference loop:
//
//	for j := range w {
//		w[j] += a * float64(x[j])
//	}
func axpy[T Value](a float64, x []T, w []float64) {
	x = x[:len(w)]
	if x8, ok := any(x).([]int8); ok && useAVX2 {
		n4 := len(w) &^ 3
		axpyInt8AVX2(a, x8[:n4], w[:n4])
		for j := n4; j < len(w); j++ {
			w[j] += a * float64(x8[j])
		}
		return
	}
	axpyGo(a, x, w)
}

// axpyGo is axpy's Go loop, which the AVX2 loop must equal bit for bit.
func axpyGo[T Value](a float64, x []T, w []float64) {
	x = x[:len(w)]
	for len(w) >= 4 {
		ww, xx := w[:4:4], x[:4:4]
		ww[0] += a * float64(xx[0])
		ww[1] += a * float64(xx[1])
		ww[2] += a * float64(xx[2])
		ww[3] += a * float64(xx[3])
		w, x = w[4:], x[4:]
	}
	for j := range w {
		w[j] += a * float64(x[j])
	}
}

// sqNorm returns Σ_j x[j]², accumulated in float64 (so it cannot overflow
// for finite float32 input; a NaN or ±Inf makes it NaN or +Inf).
func sqNorm[T Value](x []T) float64 {
	var s0, s1, s2, s3 float64
	for len(x) >= 4 {
		xx := x[:4:4]
		a, b, c, d := float64(xx[0]), float64(xx[1]), float64(xx[2]), float64(xx[3])
		s0 += a * a
		s1 += b * b
		s2 += c * c
		s3 += d * d
		x = x[4:]
	}
	for _, v := range x {
		f := float64(v)
		s0 += f * f
	}
	return (s0 + s1) + (s2 + s3)
}

// Value is the type of the training rows' values: float32, or int8 for
// data that are small integers (trit's embedding bits as ±1, times small
// multipliers), at a quarter of the memory and the same results.
type Value interface{ ~float32 | ~int8 }
