package features

import "math"

// moments holds what the statistics of one window are computed from.
type moments struct {
	n                float64
	mean, m2, m4     float64 // m2, m4: Σ(x-mean)², Σ(x-mean)⁴
	sumSq            float64 // Σx²
	min, max, maxAbs float64
}

// momentsOf makes two passes over x (len >= 1): one for mean and range, one
// for the central moments, which is more accurate than one-pass formulas
// when the mean is large against the spread (gravity on an accelerometer).
func momentsOf(x []float64) moments {
	m := moments{n: float64(len(x)), min: x[0], max: x[0]}
	var sum float64
	for _, v := range x {
		sum += v
		m.sumSq += v * v
		m.min = min(m.min, v)
		m.max = max(m.max, v)
		m.maxAbs = max(m.maxAbs, math.Abs(v))
	}
	m.mean = sum / m.n
	for _, v := range x {
		d := v - m.mean
		d2 := d * d
		m.m2 += d2
		m.m4 += d2 * d2
	}
	return m
}

// stat returns the named statistic (one of Stats).
func (m *moments) stat(name string) float64 {
	switch name {
	case StatMean:
		return m.mean
	case StatStd:
		return math.Sqrt(m.m2 / m.n)
	case StatMin:
		return m.min
	case StatMax:
		return m.max
	case StatRMS:
		return math.Sqrt(m.sumSq / m.n)
	case StatP2P:
		return m.max - m.min
	case StatKurtosis:
		if m.m2 == 0 {
			return 0
		}
		return m.n * m.m4 / (m.m2 * m.m2)
	case StatCrest:
		rms := math.Sqrt(m.sumSq / m.n)
		if rms == 0 {
			return 0
		}
		return m.maxAbs / rms
	}
	return math.NaN() // unreachable for a validated spec
}
