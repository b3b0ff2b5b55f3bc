package ternary

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// featureProblem draws n samples of a d-dimensional mixture of classes
// Gaussian clusters and embeds them as p random-hyperplane bits
// z_ij = [u_j·x_i + b_j > 0], the shape of the random features the trainer
// feeds the solver: correlated columns, margins spread over a wide range.
// The labels are class 0 against the rest.
func featureProblem(seed uint64, n, p, classes int) (*Columns, []uint64, []int8) {
	const d = 16
	rnd := rand.New(rand.NewPCG(seed, 7))
	means := make([][d]float64, classes)
	for c := range means {
		for k := range d {
			means[c][k] = rnd.NormFloat64()
		}
	}
	x := make([][d]float64, n)
	y := make([]int8, n)
	for i := range n {
		c := rnd.IntN(classes)
		for k := range d {
			x[i][k] = means[c][k] + 0.8*rnd.NormFloat64()
		}
		y[i] = -1
		if c == 0 {
			y[i] = 1
		}
	}
	z := NewColumns(n, p)
	var u [d]float64
	for j := range p {
		for k := range d {
			u[k] = rnd.NormFloat64()
		}
		b := 2 * rnd.NormFloat64()
		col := z.Col(j)
		for i := range n {
			s := b
			for k := range d {
				s += u[k] * x[i][k]
			}
			if s > 0 {
				col[i>>6] |= 1 << (i & 63)
			}
		}
	}
	return z, LabelBits(y), y
}

// centroidStart is the trainer's centroid initialisation: the sign of the
// difference of the class means of each column.
func centroidStart(z *Columns, y []int8) []int8 {
	w := make([]int8, z.P)
	for j := range z.P {
		d := 0
		for i := range z.N {
			d += int(y[i]) * (2*int(z.Bit(i, j)) - 1)
		}
		switch {
		case d > 0:
			w[j] = 1
		case d < 0:
			w[j] = -1
		}
	}
	return w
}

// sameResult reports how two results differ, bit for bit, or "".
func sameResult(got, want *Result) string {
	switch {
	case math.Float64bits(got.Alpha) != math.Float64bits(want.Alpha):
		return fmt.Sprintf("α %v, want %v", got.Alpha, want.Alpha)
	case math.Float64bits(got.Objective) != math.Float64bits(want.Objective):
		return fmt.Sprintf("objective %v, want %v", got.Objective, want.Objective)
	case got.Sweeps != want.Sweeps || got.Converged != want.Converged:
		return fmt.Sprintf("sweeps %d converged %v, want %d %v", got.Sweeps, got.Converged, want.Sweeps, want.Converged)
	case len(got.History) != len(want.History):
		return fmt.Sprintf("%d steps, want %d", len(got.History), len(want.History))
	}
	for k := range got.History {
		g, w := got.History[k], want.History[k]
		if g.Kind != w.Kind || g.Changed != w.Changed || g.NonZero != w.NonZero ||
			math.Float64bits(g.Objective) != math.Float64bits(w.Objective) {
			return fmt.Sprintf("step %d: %+v, want %+v", k, g, w)
		}
	}
	for j := range got.W {
		if got.W[j] != want.W[j] {
			return fmt.Sprintf("w[%d] = %d, want %d", j, got.W[j], want.W[j])
		}
	}
	return ""
}

// TestSolveMatchesReference checks that Solve returns exactly what the
// solver of reference_test.go (the code before the fast hinge trial)
// returns: the same weights, the same α and objective bits, the same history.
func TestSolveMatchesReference(t *testing.T) {
	type problem struct {
		n, p, classes int
		lambda        float64
		loss          Loss
		binary        bool
		mult          int32 // the first 8 columns count mult times
		init          string
		alpha0        float64
	}
	problems := []problem{
		{2000, 300, 3, 1e-3, Hinge, true, 1, "centroid", 0.01},
		{2000, 300, 3, 1e-3, Hinge, false, 1, "centroid", 0.01},
		{2000, 300, 3, 1e-4, Hinge, false, 1, "zero", 0.05},
		{3000, 256, 5, 1 / (2 * 3000 * 0.001), Hinge, true, 1, "centroid", 1.0 / 256},
		{3000, 256, 5, 1 / (2 * 3000 * 0.1), Hinge, true, 1, "centroid", 1.0 / 256},
		{3000, 256, 5, 1 / (2 * 3000 * 10.0), Hinge, false, 1, "centroid", 1.0 / 256},
		{1500, 200, 4, 1e-3, Hinge, false, 4, "centroid", 0.01},
		{1500, 200, 4, 1e-3, Hinge, true, 3, "centroid", 0.01},
		{1000, 150, 2, 1e-3, SquaredHinge, false, 1, "centroid", 0.01},
		{1000, 150, 2, 1e-3, Logistic, true, 1, "centroid", 0.01},
		{1000, 150, 2, 1e-3, Square, false, 1, "zero", 0.01},
		{130, 70, 2, 1e-2, Hinge, false, 1, "centroid", 0.1},
	}
	if !testing.Short() {
		problems = append(problems,
			problem{parallelMinN + 3000, 96, 10, 1 / (2 * float64(parallelMinN+3000) * 0.001), Hinge, true, 1, "centroid", 1.0 / 96},
			problem{parallelMinN + 3000, 96, 10, 1e-4, Hinge, false, 2, "centroid", 1.0 / 96})
	}
	for k, pr := range problems {
		z, yb, y := featureProblem(uint64(100+k), pr.n, pr.p, pr.classes)
		w0 := make([]int8, pr.p)
		if pr.init == "centroid" {
			w0 = centroidStart(z, y)
		}
		var mult []int32
		if pr.mult > 1 {
			mult = make([]int32, pr.p)
			for j := range mult {
				mult[j] = 1
				if j < 8 {
					mult[j] = pr.mult
				}
			}
		}
		for _, workers := range []int{1, 2} {
			o := &Options{Lambda: pr.lambda, Loss: pr.loss, Binary: pr.binary, Mult: mult, Workers: workers, MaxRounds: 12}
			want, err := refSolve(z, yb, w0, pr.alpha0, o)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Solve(z, yb, w0, pr.alpha0, o)
			if err != nil {
				t.Fatal(err)
			}
			if d := sameResult(got, want); d != "" {
				t.Errorf("problem %d %+v workers %d: %s", k, pr, workers, d)
			}
			moves := 0
			for _, s := range want.History {
				moves += s.Changed
			}
			if moves == 0 {
				t.Errorf("problem %d: the reference moved no weight; the comparison tests nothing", k)
			}
		}
	}
}

// BenchmarkSolveMNISTShape is one solve at the shape of an mnist fit's
// weight vector, scaled down: 20,000 samples × 8,192 random-feature bits,
// binary weights from the centroid start, C = 0.001 (λ = 1/(2nC)), three
// rounds. BenchmarkSolveMNISTShapeReference runs the old solver on the same
// problem.
func BenchmarkSolveMNISTShape(b *testing.B) { benchSolve(b, Solve) }

func BenchmarkSolveMNISTShapeReference(b *testing.B) { benchSolve(b, refSolve) }

func benchSolve(b *testing.B, solve func(*Columns, []uint64, []int8, float64, *Options) (*Result, error)) {
	const n, p = 20000, 8192
	z, yb, y := featureProblem(1, n, p, 10)
	w0 := centroidStart(z, y)
	o := &Options{Lambda: 1 / (2 * n * 0.001), Binary: true, Workers: 1, MaxRounds: 3}
	var res *Result
	for b.Loop() {
		var err error
		if res, err = solve(z, yb, w0, 1.0/p, o); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(res.Sweeps), "sweeps")
}

// TestHingeFilterIsSound runs hinge sweeps and checks after each that the
// filter's sets, kept up to date move by move, equal a fresh rebuild, and
// that lowerTrial is a lower bound of trial for every column and move, and
// a close one (so the filter does skip work).
func TestHingeFilterIsSound(t *testing.T) {
	for _, mult := range []int32{1, 3} {
		z, yb, y := featureProblem(21, 2500, 300, 3)
		o := Options{Lambda: 1e-3, Mult: make([]int32, z.P)}
		for j := range o.Mult {
			o.Mult[j] = 1
			if j < 10 {
				o.Mult[j] = mult
			}
		}
		od := o.withDefaults()
		bound := 0
		for _, m := range o.Mult {
			bound += int(m)
		}
		s := newSolver(z, yb, centroidStart(z, y), 0.01, &od, bound)
		s.setAlpha(s.alpha)
		for round := range 4 {
			s.alphaStep()
			changed := s.sweep()
			deep, band := append([]uint64(nil), s.deep...), append([]uint64(nil), s.band...)
			nDeep, sumDeep := s.nDeep, s.sumDeep
			active := len(s.active)
			s.rebuildActive()
			if d := slices.Compare(deep, s.deep); d != 0 || slices.Compare(band, s.band) != 0 || nDeep != s.nDeep || sumDeep != s.sumDeep {
				t.Fatalf("mult %d round %d: kept sets (%d deep, Σ %d) differ from a rebuild (%d, Σ %d)", mult, round, nDeep, sumDeep, s.nDeep, s.sumDeep)
			}
			if s.nDeep == 0 || len(s.active) == active {
				t.Logf("mult %d round %d: %d deep, active %d → %d", mult, round, s.nDeep, active, len(s.active))
			}
			for j := range z.P {
				for _, d := range [][2]int32{{1, -1}, {2, -2}, {1, 2}, {-1, -2}, {2, 2}, {-2, -2}} {
					l1, l2 := s.trial(j, d[0], d[1])
					lo1, lo2 := s.lowerTrial(j, d[0], d[1])
					if !(lo1 <= l1 && lo2 <= l2) {
						t.Fatalf("mult %d round %d column %d moves %v: bounds (%v, %v) above sums (%v, %v)", mult, round, j, d, lo1, lo2, l1, l2)
					}
					if l1-lo1 > 1e-9*l1 || l2-lo2 > 1e-9*l2 {
						t.Fatalf("mult %d round %d column %d: bounds (%v, %v) far below sums (%v, %v)", mult, round, j, lo1, lo2, l1, l2)
					}
				}
			}
			if changed == 0 {
				break
			}
		}
	}
}

// BenchmarkSweepReference is BenchmarkSweep on the old solver.
func BenchmarkSweepReference(b *testing.B) {
	z, yb, w0, od := sweepProblem()
	s := newRefSolver(z, yb, w0, 0.01, &od, z.P)
	s.alphaStep()
	b.ResetTimer()
	for b.Loop() {
		s.sweep()
	}
}
