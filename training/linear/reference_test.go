package linear

import "math"

// Two solvers that share nothing with solve, used to check it on tiny
// problems. Both work on the augmented rows x̃_i = (x_i, B) in float64.

// augmented returns the rows with the bias feature appended (if any).
func augmented(x []float32, n, p int, bias float32) [][]float64 {
	rows := make([][]float64, n)
	for i := range rows {
		r := make([]float64, p, p+1)
		for j := range p {
			r[j] = float64(x[i*p+j])
		}
		if bias > 0 {
			r = append(r, float64(bias))
		}
		rows[i] = r
	}
	return rows
}

// primalAug is ½‖w‖² + C Σ ξ over augmented rows.
func primalAug(w []float64, rows [][]float64, y []int8, c float64, loss Loss) float64 {
	var reg, sum float64
	for _, v := range w {
		reg += v * v
	}
	for i, r := range rows {
		var s float64
		for j, v := range r {
			s += w[j] * v
		}
		if m := 1 - float64(y[i])*s; m > 0 {
			if loss == SquaredHinge {
				m *= m
			}
			sum += m
		}
	}
	return 0.5*reg + c*sum
}

// dualReference minimises the dual ½αᵀQ̄α − eᵀα over 0 ≤ α ≤ U by
// accelerated projected gradient (FISTA with gradient restart) on the full
// Gram matrix, and returns w = Σ α_i y_i x̃_i, the primal objective of w
// (an upper bound on the optimum) and the dual objective of α (a lower
// bound).
func dualReference(rows [][]float64, y []int8, c float64, loss Loss, iters int) (w []float64, upper, lower float64) {
	n := len(rows)
	diag, ub := dualTerms(&Options{C: c, Loss: loss})
	q := make([]float64, n*n)
	var trace float64
	for i := range n {
		for k := range n {
			var s float64
			for j := range rows[i] {
				s += rows[i][j] * rows[k][j]
			}
			q[i*n+k] = float64(y[i]) * float64(y[k]) * s
		}
		q[i*n+i] += diag
		trace += q[i*n+i]
	}
	step := 1 / trace // trace ≥ λ_max(Q̄) for a PSD matrix
	dual := func(a []float64) float64 {
		var v float64
		for i := range n {
			var s float64
			for k := range n {
				s += q[i*n+k] * a[k]
			}
			v += a[i] - 0.5*a[i]*s
		}
		return v
	}
	alpha := make([]float64, n)
	prev := make([]float64, n)
	z := make([]float64, n) // extrapolated point
	grad := make([]float64, n)
	t := 1.0
	for range iters {
		for i := range n {
			var s float64
			for k := range n {
				s += q[i*n+k] * z[k]
			}
			grad[i] = s - 1
		}
		copy(prev, alpha)
		for i := range n {
			alpha[i] = min(max(z[i]-step*grad[i], 0), ub)
		}
		// Restart the momentum when it points uphill (O'Donoghue & Candès).
		var dir float64
		for i := range n {
			dir += grad[i] * (alpha[i] - prev[i])
		}
		if dir > 0 {
			t = 1
		}
		tNext := (1 + math.Sqrt(1+4*t*t)) / 2
		for i := range n {
			z[i] = alpha[i] + (t-1)/tNext*(alpha[i]-prev[i])
		}
		t = tNext
	}
	w = make([]float64, len(rows[0]))
	for i, r := range rows {
		for j, v := range r {
			w[j] += alpha[i] * float64(y[i]) * v
		}
	}
	return w, primalAug(w, rows, y, c, loss), dual(alpha)
}

// newtonSquaredHinge minimises the squared-hinge primal directly by the
// generalised Newton method with Armijo backtracking (Mangasarian 2002),
// which terminates at the exact minimiser of this piecewise quadratic.
func newtonSquaredHinge(rows [][]float64, y []int8, c float64) []float64 {
	d := len(rows[0])
	w := make([]float64, d)
	for range 100 {
		grad := make([]float64, d)
		copy(grad, w)
		h := make([][]float64, d)
		for j := range h {
			h[j] = make([]float64, d)
			h[j][j] = 1
		}
		for i, r := range rows {
			var s float64
			for j, v := range r {
				s += w[j] * v
			}
			m := 1 - float64(y[i])*s
			if m <= 0 {
				continue
			}
			for j, v := range r {
				grad[j] -= 2 * c * float64(y[i]) * m * v
				for k, u := range r {
					h[j][k] += 2 * c * v * u
				}
			}
		}
		var gnorm float64
		for _, g := range grad {
			gnorm += g * g
		}
		if gnorm < 1e-26 {
			break
		}
		dir := solveDense(h, grad)
		f0 := primalAug(w, rows, y, c, SquaredHinge)
		var slope float64
		for j := range d {
			slope += grad[j] * dir[j]
		}
		next := make([]float64, d)
		for step := 1.0; step > 1e-20; step /= 2 {
			for j := range d {
				next[j] = w[j] - step*dir[j]
			}
			if primalAug(next, rows, y, c, SquaredHinge) <= f0-1e-4*step*slope {
				break
			}
		}
		copy(w, next)
	}
	return w
}

// solveDense solves a·x = b by Gaussian elimination with partial pivoting;
// a is overwritten.
func solveDense(a [][]float64, b []float64) []float64 {
	d := len(b)
	x := append([]float64(nil), b...)
	for col := range d {
		piv := col
		for r := col + 1; r < d; r++ {
			if math.Abs(a[r][col]) > math.Abs(a[piv][col]) {
				piv = r
			}
		}
		a[col], a[piv] = a[piv], a[col]
		x[col], x[piv] = x[piv], x[col]
		for r := col + 1; r < d; r++ {
			f := a[r][col] / a[col][col]
			for k := col; k < d; k++ {
				a[r][k] -= f * a[col][k]
			}
			x[r] -= f * x[col]
		}
	}
	for r := d - 1; r >= 0; r-- {
		for k := r + 1; k < d; k++ {
			x[r] -= a[r][k] * x[k]
		}
		x[r] /= a[r][r]
	}
	return x
}
