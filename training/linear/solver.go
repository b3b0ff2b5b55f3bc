package linear

import (
	"math"

	"github.com/trit-iot/trit/training/internal/splitmix"
)

// workspace holds the per-solve buffers; a one-vs-rest worker reuses one
// across the classes it trains.
type workspace struct {
	alpha []float64 // dual variables
	index []int32   // permutation of rows; index[:active] are not shrunk
}

func newWorkspace(n int) *workspace {
	return &workspace{alpha: make([]float64, n), index: make([]int32, n)}
}

// solve runs dual coordinate descent with random permutation and shrinking
// (Hsieh et al. 2008, Section 3; LIBLINEAR's solve_l2r_l1l2_svc) for labels
// y ∈ {−1,+1}^n and resolved options o. On return ws.alpha holds the dual
// solution.
//
// For coordinate i the dual gradient is G = y_i wᵀx_i − 1 + D_ii α_i, and
// the projected gradient PG is G clipped to 0 in the direction that would
// leave the box [0, U]. The exact one-variable minimiser is
// α_i ← clip(α_i − G/Q̄_ii, 0, U), after which w += (Δα_i y_i) x_i.
//
// Shrinking: a variable at 0 with G > max PG of the previous pass (or at U
// with G < min PG) is unlikely to move, so it leaves the active set until
// the active problem has converged; then all variables are re-checked, and
// the solver stops only when a pass over all of them has
// max PG − min PG ≤ Eps.
func (pr *problem[T]) solve(y []int8, o *Options, ws *workspace) *Model {
	n, p := pr.n, pr.p
	diag, upper := dualTerms(o)
	eps := o.Eps

	w := make([]float64, p)
	var wb float64 // weight of the bias feature
	alpha := ws.alpha[:n]
	clear(alpha)
	index := ws.index[:n]
	for i := range index {
		index[i] = int32(i)
	}
	r := splitmix.New(o.Seed)

	// The previous pass's PG range, used by the shrinking test. ±∞ means
	// "shrink nothing".
	pgMaxOld, pgMinOld := math.Inf(1), math.Inf(-1)
	active := n
	m := &Model{}
	for m.Iter < o.MaxIter {
		pgMaxNew, pgMinNew := math.Inf(-1), math.Inf(1)
		shuffle(r, index[:active])
		for s := 0; s < active; {
			i := int(index[s])
			row := pr.row(i)
			yi := float64(y[i])
			a := alpha[i]
			g := yi*(dot(w, row)+wb*pr.bias) - 1 + diag*a

			var pg float64
			switch {
			case a == 0:
				if g > pgMaxOld {
					active--
					index[s], index[active] = index[active], index[s]
					continue // s now holds an unvisited row
				}
				pg = min(g, 0)
			case a == upper:
				if g < pgMinOld {
					active--
					index[s], index[active] = index[active], index[s]
					continue
				}
				pg = max(g, 0)
			default:
				pg = g
			}
			s++
			pgMaxNew = max(pgMaxNew, pg)
			pgMinNew = min(pgMinNew, pg)

			if math.Abs(pg) <= 1e-12 {
				continue
			}
			var next float64
			if q := pr.sqNorm[i] + diag; q > 0 {
				next = min(max(a-g/q, 0), upper)
			} else if g < 0 {
				// Hinge, zero row, no bias: the dual is linear in α_i
				// with slope g = −1, so α_i goes to its upper bound.
				next = upper
			}
			alpha[i] = next
			if d := (next - a) * yi; d != 0 {
				axpy(d, row, w)
				wb += d * pr.bias
			}
		}
		m.Iter++

		if pgMaxNew-pgMinNew <= eps {
			if active == n {
				m.Converged = true
				break
			}
			// The active set has converged: re-check everything.
			active = n
			pgMaxOld, pgMinOld = math.Inf(1), math.Inf(-1)
			continue
		}
		pgMaxOld, pgMinOld = pgMaxNew, pgMinNew
		if pgMaxOld <= 0 {
			pgMaxOld = math.Inf(1)
		}
		if pgMinOld >= 0 {
			pgMinOld = math.Inf(-1)
		}
	}
	m.W = w
	m.Bias = wb * pr.bias
	return m
}
