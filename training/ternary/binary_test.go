package ternary

import (
	"math"
	"testing"
)

// With Binary set, no weight may be 0, the objective never increases, and
// the result is a local optimum over sign flips: flipping any single weight
// at the returned α does not lower the objective.
func TestBinaryCoefficients(t *testing.T) {
	z, yb, y := randomProblem(8, 400, 40)
	for _, loss := range allLosses {
		o := Options{Lambda: 1e-3, Loss: loss, Tol: 1e-15, MaxRounds: 100, MaxSweeps: 100, Binary: true}
		w0 := make([]int8, z.P) // zeros must start as +1
		w0[3] = -1
		res, err := Solve(z, yb, w0, 0.1, &o)
		if err != nil {
			t.Fatal(err)
		}
		for j, v := range res.W {
			if v != 1 && v != -1 {
				t.Fatalf("%v: w[%d] = %d, want ±1", loss, j, v)
			}
		}
		for k := 1; k < len(res.History); k++ {
			if res.History[k].Objective > res.History[k-1].Objective*(1+1e-12) {
				t.Fatalf("%v: objective rose at step %d", loss, k)
			}
			if res.History[k].NonZero != z.P {
				t.Fatalf("%v: step %d has %d non-zeros, want %d", loss, k, res.History[k].NonZero, z.P)
			}
		}
		od := o.withDefaults()
		base := fullObjective(z, y, res.W, res.Alpha, od)
		if math.Abs(base-res.Objective) > 1e-9*math.Abs(base) {
			t.Fatalf("%v: reported objective %.12g, recomputed %.12g", loss, res.Objective, base)
		}
		w := append([]int8(nil), res.W...)
		for j := range w {
			w[j] = -w[j]
			if f := fullObjective(z, y, w, res.Alpha, od); f < base-1e-9*math.Abs(base) {
				t.Fatalf("%v: flipping w[%d] lowers the objective %.12g → %.12g", loss, j, base, f)
			}
			w[j] = -w[j]
		}
	}
}
