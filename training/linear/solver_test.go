package linear

import (
	"fmt"
	"math"
	"testing"
)

var losses = []Loss{Hinge, SquaredHinge}

// TestMatchesReference compares the dual CD optimum with two independent
// solvers on 2–3 dimensional problems. The reference FISTA run on the full
// dual brackets the optimum: lower ≤ P* ≤ upper. Because the primal is
// 1-strongly convex, ‖w − w*‖² ≤ 2(P(w) − P*), which bounds how far the
// weights may be from the reference's.
func TestMatchesReference(t *testing.T) {
	const n = 40
	for _, loss := range losses {
		for _, cfg := range []struct {
			p    int
			bias float32
		}{{2, 1}, {3, 0}} {
			for _, c := range []float64{0.1, 1, 10} {
				t.Run(fmt.Sprintf("%v/p=%d/bias=%v/C=%v", loss, cfg.p, cfg.bias, c), func(t *testing.T) {
					x, y := blobs(3, n, cfg.p, 2, 1) // overlapping classes
					rows := augmented(x, n, cfg.p, cfg.bias)
					wRef, upper, lower := dualReference(rows, y, c, loss, 20000)
					if upper-lower > 1e-12*upper {
						t.Fatalf("reference did not converge: bracket [%v, %v]", lower, upper)
					}
					if loss == SquaredHinge {
						pn := primalAug(newtonSquaredHinge(rows, y, c), rows, y, c, loss)
						if math.Abs(pn-upper) > 1e-12*upper {
							t.Fatalf("references disagree: Newton %v, dual %v", pn, upper)
						}
					}

					// Tight Eps: within 1e-6 relative of the optimum.
					// Loose default Eps: within 1% (LIBLINEAR's default is coarse).
					for _, tc := range []struct {
						eps, tol float64
					}{{1e-6, 1e-6}, {0, 1e-2}} {
						opt := &Options{C: c, Loss: loss, Bias: cfg.bias, Eps: tc.eps, MaxIter: 100000}
						m, err := Train(x, n, cfg.p, y, opt)
						if err != nil {
							t.Fatal(err)
						}
						if !m.Converged {
							t.Fatalf("eps %g: not converged after %d iterations", tc.eps, m.Iter)
						}
						obj := Objective(m, x, n, cfg.p, y, opt)
						if obj < lower*(1-1e-12) {
							t.Errorf("eps %g: objective %v below the optimum's lower bound %v", tc.eps, obj, lower)
						}
						if obj-lower > tc.tol*upper {
							t.Errorf("eps %g: objective %v, optimum %v: relative excess %.2e > %g",
								tc.eps, obj, upper, (obj-lower)/upper, tc.tol)
						}
						w := append([]float64(nil), m.W...)
						if cfg.bias > 0 {
							w = append(w, m.Bias/float64(cfg.bias))
						}
						var d2 float64
						for j := range w {
							d2 += (w[j] - wRef[j]) * (w[j] - wRef[j])
						}
						bound := math.Sqrt(2*max(obj-lower, 0)) + math.Sqrt(2*(upper-lower)) + 1e-9
						if math.Sqrt(d2) > bound {
							t.Errorf("eps %g: ‖w − w_ref‖ = %v exceeds the strong-convexity bound %v", tc.eps, math.Sqrt(d2), bound)
						}
					}
				})
			}
		}
	}
}

// TestDualityGap checks at Eps = 1e-4 that primal and dual objectives agree.
// If every dual gradient G_i is within ε of its optimality condition, the
// gap Σ_i gap_i has gap_i ≤ C|G_i| (hinge) or C·G_i² (squared hinge), so
// gap ≤ nCε or nCε²; the relative gap must also be below 1e-4.
func TestDualityGap(t *testing.T) {
	const n, p, eps = 300, 20, 1e-4
	x, y := blobs(5, n, p, 1.5, 1)
	for _, loss := range losses {
		for _, bias := range []float32{0, 1} {
			for _, c := range []float64{0.01, 0.1, 1, 10} {
				opt := &Options{C: c, Loss: loss, Bias: bias, Eps: eps, MaxIter: 100000}
				m, alpha, o := solveAlpha(t, x, n, p, y, opt)
				if !m.Converged {
					t.Fatalf("%v bias %v C %v: not converged", loss, bias, c)
				}
				primal := Objective(m, x, n, p, y, opt)
				dual := dualObjective(alpha, x, n, p, y, &o)
				gap := primal - dual
				bound := float64(n) * c * eps
				if loss == SquaredHinge {
					bound *= eps
				}
				switch {
				case gap < -1e-9*primal:
					t.Errorf("%v bias %v C %v: dual %v > primal %v breaks weak duality", loss, bias, c, dual, primal)
				case gap > bound:
					t.Errorf("%v bias %v C %v: gap %v > bound %v", loss, bias, c, gap, bound)
				case gap > 1e-4*primal:
					t.Errorf("%v bias %v C %v: relative gap %.2e > 1e-4", loss, bias, c, gap/primal)
				}
			}
		}
	}
}

// TestDualAscent checks the defining property of exact coordinate descent:
// the dual objective never decreases, pass after pass (a run with MaxIter k
// is a prefix of a longer run with the same seed), while the primal
// objective falls to the optimum.
func TestDualAscent(t *testing.T) {
	const n, p = 200, 10
	x, y := blobs(9, n, p, 1, 1)
	for _, loss := range losses {
		var prevDual float64
		var first, last float64
		for k := 1; k <= 150; k++ { // converges in about 110 passes
			opt := &Options{C: 0.1, Loss: loss, Bias: 1, Eps: 1e-9, MaxIter: k}
			m, alpha, o := solveAlpha(t, x, n, p, y, opt)
			dual := dualObjective(alpha, x, n, p, y, &o)
			primal := Objective(m, x, n, p, y, opt)
			if dual < prevDual-1e-9*math.Abs(prevDual) {
				t.Errorf("%v: dual fell from %v to %v at iteration %d", loss, prevDual, dual, k)
			}
			if k == 1 {
				first = primal
			}
			last = primal
			prevDual = dual
		}
		if !(last < first) {
			t.Errorf("%v: primal objective did not decrease: %v after 1 pass, %v after 150", loss, first, last)
		}
		if last-prevDual > 1e-6*last {
			t.Errorf("%v: gap after 150 passes %v, want ≤ 1e-6 relative (primal %v)", loss, last-prevDual, last)
		}
	}
}

func TestSeparableFitsXORDoesNot(t *testing.T) {
	for _, loss := range losses {
		const n, p = 200, 5
		x, y := blobs(1, n, p, 6, 0.5) // margin ≫ spread
		m, err := Train(x, n, p, y, &Options{Loss: loss, Bias: 1})
		if err != nil {
			t.Fatal(err)
		}
		if acc := accuracy(m, x, n, p, y); acc != 1 {
			t.Errorf("%v: separable data: training accuracy %v, want 1", loss, acc)
		}

		x, y = xorData(2, n)
		m, err = Train(x, n, 2, y, &Options{Loss: loss, Bias: 1})
		if err != nil {
			t.Fatal(err)
		}
		// No line gets more than 3 of the 4 XOR clusters right.
		if acc := accuracy(m, x, n, 2, y); acc > 0.8 {
			t.Errorf("%v: XOR data: training accuracy %v, want ≤ 0.8 for a linear model", loss, acc)
		}
	}
}

// A zero row with hinge loss and no bias has Q_ii = 0: its dual variable
// must go to C (its gradient is −1 whatever w), without dividing by zero.
func TestZeroRow(t *testing.T) {
	x := []float32{1, 2, 0, 0, -1, -1}
	y := []int8{1, -1, -1}
	for _, loss := range losses {
		opt := &Options{Loss: loss, Eps: 1e-8}
		m, alpha, o := solveAlpha(t, x, 3, 2, y, opt)
		if !m.Converged {
			t.Fatalf("%v: not converged", loss)
		}
		for j, v := range m.W {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("%v: W[%d] = %v", loss, j, v)
			}
		}
		if loss == Hinge && alpha[1] != o.C {
			t.Errorf("hinge: α of the zero row = %v, want C = %v", alpha[1], o.C)
		}
		primal := Objective(m, x, 3, 2, y, opt)
		if dual := dualObjective(alpha, x, 3, 2, y, &o); primal-dual > 1e-6 {
			t.Errorf("%v: gap %v", loss, primal-dual)
		}
	}
}

func TestMaxIterNotConverged(t *testing.T) {
	const n, p = 200, 10
	x, y := blobs(4, n, p, 0.5, 1)
	m, err := Train(x, n, p, y, &Options{C: 100, Eps: 1e-12, MaxIter: 3})
	if err != nil {
		t.Fatal(err)
	}
	if m.Converged || m.Iter != 3 {
		t.Errorf("got Converged %v after %d iterations, want false after 3", m.Converged, m.Iter)
	}
}
