package ternary

import "math"

// histogram counts the integer margins m_i = y_i·wᵀz_i: cnt[m+off] is the
// number of samples with margin m, for m in [-off, off].
type histogram struct {
	cnt []float64
	off int
	n   int
}

func newHistogram(margins []int32, p int) histogram {
	h := histogram{cnt: make([]float64, 2*p+1), off: p, n: len(margins)}
	for _, m := range margins {
		h.cnt[int(m)+p]++
	}
	return h
}

// objective returns (1/n) Σ_i ℓ(α m_i) + λ R(α, nnz).
func (h *histogram) objective(loss Loss, reg Reg, lambda, alpha float64, nnz int) float64 {
	var s float64
	for k, c := range h.cnt {
		if c != 0 {
			s += c * loss.Value(alpha*float64(k-h.off))
		}
	}
	return s/float64(h.n) + lambda*reg.penalty(alpha, nnz)
}

// solveAlpha returns the exact minimiser over α > 0 of
//
//	f(α) = (1/n) Σ_m cnt[m] ℓ(α m) + λ R(α, nnz)
//
// f is convex in α. For hinge and squared hinge it is piecewise polynomial
// with breakpoints α = 1/m (m > 0 a margin that occurs): between two
// breakpoints the samples with α·m < 1 are the active ones, f′ is affine (or
// constant) there, and the minimiser is the root of f′ in the first interval
// where f′ turns non-negative, or that interval's left end. Square loss is
// one quadratic. Logistic loss is smooth and solved by safeguarded Newton to
// machine precision. When the infimum is approached only as α → 0 (the
// weights do more harm than good) or f does not depend on α (no non-zero
// weight), prev is returned: it is feasible and no worse than any α that
// could be returned instead.
func (h *histogram) solveAlpha(loss Loss, reg Reg, lambda float64, nnz int, prev float64) float64 {
	n := float64(h.n)
	lr := lambda * float64(nnz) // λ·r
	if nnz == 0 {
		return prev
	}
	// Sums over all margins.
	var a1, a2 float64
	maxPos := 0
	for k, c := range h.cnt {
		if c == 0 {
			continue
		}
		m := float64(k - h.off)
		a1 += c * m
		a2 += c * m * m
		if k-h.off > maxPos {
			maxPos = k - h.off
		}
	}
	// root returns the stationary point of f on an interval whose active set
	// has sums (a1, a2), or NaN when f′ is constant there (then its sign is
	// returned through slope).
	root := func(a1, a2 float64) (alpha, slope float64) {
		switch {
		case loss == Hinge && reg == L2:
			return a1 / (2 * lr * n), 0
		case loss == Hinge: // L1: f′ = -a1/n + λr
			return math.NaN(), -a1/n + lr
		case reg == L2: // squared hinge and square
			return a1 / (a2 + lr*n), 0
		default: // L1: f′ = (2α a2 - 2 a1)/n + λr
			if a2 == 0 {
				return math.NaN(), lr
			}
			return (2*a1 - lr*n) / (2 * a2), 0
		}
	}
	accept := func(alpha float64) float64 {
		if alpha > 0 && !math.IsInf(alpha, 0) {
			return alpha
		}
		return prev
	}
	switch loss {
	case Logistic:
		return accept(h.newtonAlpha(reg, lr, prev))
	case Square:
		r, slope := root(a1, a2)
		if math.IsNaN(r) {
			_ = slope
			return prev
		}
		return accept(r)
	}
	// Hinge and squared hinge: walk the intervals (lo, hi) of α upwards.
	// On (1/(k+1), 1/k) the active margins are those m <= k.
	lo := 0.0
	for k := maxPos; k >= 0; k-- {
		if k > 0 && k < maxPos && h.cnt[k+h.off] == 0 {
			continue // not a breakpoint: the interval goes on
		}
		hi := math.Inf(1)
		if k > 0 {
			hi = 1 / float64(k)
		}
		r, slope := root(a1, a2)
		if math.IsNaN(r) {
			if slope >= 0 {
				return accept(lo)
			}
		} else {
			if r <= lo {
				return accept(lo)
			}
			if r <= hi {
				return accept(r)
			}
		}
		// Leaving (lo, hi): margin k stops being active.
		if k > 0 {
			c := h.cnt[k+h.off]
			a1 -= c * float64(k)
			a2 -= c * float64(k) * float64(k)
			lo = hi
		}
	}
	return accept(lo)
}

// newtonAlpha minimises the logistic objective over α > 0: f′(α) =
// (1/n) Σ cnt·(-m)·σ(-αm) + R′(α) is increasing; bracket its root, then
// Newton steps kept inside the bracket (bisection when a step leaves it),
// until the bracket is as narrow as float64 allows.
func (h *histogram) newtonAlpha(reg Reg, lr, prev float64) float64 {
	n := float64(h.n)
	deriv := func(alpha float64) (d1, d2 float64) {
		for k, c := range h.cnt {
			if c == 0 {
				continue
			}
			m := float64(k - h.off)
			s := 1 / (1 + math.Exp(alpha*m)) // σ(-αm)
			d1 += c * -m * s
			d2 += c * m * m * s * (1 - s)
		}
		d1, d2 = d1/n, d2/n
		if reg == L2 {
			return d1 + 2*lr*alpha, d2 + 2*lr
		}
		return d1 + lr, d2
	}
	if d, _ := deriv(0); d >= 0 {
		return prev // decreasing α always helps: the infimum is at α → 0
	}
	lo, hi := 0.0, math.Max(prev, 1e-6)
	for {
		d, _ := deriv(hi)
		if d >= 0 {
			break
		}
		lo, hi = hi, 2*hi
		if math.IsInf(hi, 0) {
			return prev
		}
	}
	a := (lo + hi) / 2
	for range 200 {
		d1, d2 := deriv(a)
		if d1 == 0 {
			return a
		}
		if d1 > 0 {
			hi = a
		} else {
			lo = a
		}
		next := a - d1/d2
		if !(next > lo && next < hi) {
			next = (lo + hi) / 2
		}
		if next == a || hi-lo <= 4*math.Nextafter(hi, math.Inf(1))-4*hi {
			return next
		}
		a = next
	}
	return a
}
