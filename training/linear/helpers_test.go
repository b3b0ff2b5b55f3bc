package linear

import (
	"math"
	"math/rand/v2"
	"testing"
)

// blobs returns n rows of two Gaussian classes in p dimensions whose means
// are ±sep/2 along a random unit direction; noise is the per-coordinate
// standard deviation. Labels alternate so both classes are present.
func blobs(seed uint64, n, p int, sep, noise float64) ([]float32, []int8) {
	r := rand.New(rand.NewPCG(seed, 7))
	u := make([]float64, p)
	var norm float64
	for j := range u {
		u[j] = r.NormFloat64()
		norm += u[j] * u[j]
	}
	norm = math.Sqrt(norm)
	x := make([]float32, n*p)
	y := make([]int8, n)
	for i := range y {
		y[i] = int8(1 - 2*(i%2))
		for j := range p {
			x[i*p+j] = float32(float64(y[i])*sep/2*u[j]/norm + noise*r.NormFloat64())
		}
	}
	return x, y
}

// xorData returns n points around the four corners (±1, ±1) with label
// sign(x₀·x₁): not linearly separable.
func xorData(seed uint64, n int) ([]float32, []int8) {
	r := rand.New(rand.NewPCG(seed, 11))
	x := make([]float32, 2*n)
	y := make([]int8, n)
	for i := range y {
		a, b := float64(1-2*(i%2)), float64(1-2*(i/2%2))
		x[2*i] = float32(a + 0.2*r.NormFloat64())
		x[2*i+1] = float32(b + 0.2*r.NormFloat64())
		y[i] = int8(a * b)
	}
	return x, y
}

// solveAlpha trains like Train but also returns the dual solution.
func solveAlpha(t testing.TB, x []float32, n, p int, y []int8, opt *Options) (*Model, []float64, Options) {
	t.Helper()
	o, err := resolve(opt)
	if err != nil {
		t.Fatal(err)
	}
	pr, err := newProblem(x, n, p, o.Bias)
	if err != nil {
		t.Fatal(err)
	}
	ws := newWorkspace(n)
	m := pr.solve(y, &o, ws)
	return m, ws.alpha, o
}

// dualObjective returns Σα − ½‖w‖² − ½ D_ii Σα², w = Σ α_i y_i x̃_i
// recomputed from α (x̃ with the bias feature). By weak duality it is at
// most the primal objective of any w, with equality at the optimum.
func dualObjective(alpha []float64, x []float32, n, p int, y []int8, o *Options) float64 {
	diag, _ := dualTerms(o)
	w := make([]float64, p+1)
	var sa, sa2 float64
	for i, a := range alpha {
		sa += a
		sa2 += a * a
		for j := range p {
			w[j] += a * float64(y[i]) * float64(x[i*p+j])
		}
		w[p] += a * float64(y[i]) * float64(o.Bias)
	}
	var ww float64
	for _, v := range w {
		ww += v * v
	}
	return sa - 0.5*ww - 0.5*diag*sa2
}

// accuracy is the fraction of rows whose decision has the sign of y.
func accuracy(m *Model, x []float32, n, p int, y []int8) float64 {
	ok := 0
	for i := range n {
		if d := m.Decision(x[i*p : (i+1)*p]); (d > 0) == (y[i] > 0) {
			ok++
		}
	}
	return float64(ok) / float64(n)
}
