package ternary

import (
	"math"
	"math/rand/v2"
	"testing"
)

// randomProblem draws labels and binary features where y depends on a few
// columns plus noise, so there is something to learn.
func randomProblem(seed uint64, n, p int) (*Columns, []uint64, []int8) {
	rnd := rand.New(rand.NewPCG(seed, 99))
	z := NewColumns(n, p)
	y := make([]int8, n)
	for i := range n {
		score := 0
		for j := range p {
			bit := rnd.IntN(2)
			if bit == 1 {
				z.Data[j*z.Words+i/64] |= 1 << (i % 64)
			}
			if j < 5 {
				score += 2*bit - 1
			}
		}
		y[i] = 1
		if score+rnd.IntN(3)-1 < 0 {
			y[i] = -1
		}
	}
	return z, LabelBits(y), y
}

// fullObjective recomputes the objective from scratch, independently of the
// solver's incremental state.
func fullObjective(z *Columns, y []int8, w []int8, alpha float64, o Options) float64 {
	var loss float64
	nnz := 0
	for _, v := range w {
		nnz += int(v * v)
	}
	for i := range z.N {
		h := 0
		for j := range z.P {
			m := 1
			if o.Mult != nil {
				m = int(o.Mult[j])
			}
			h += m * int(w[j]) * (2*int(z.Bit(i, j)) - 1)
		}
		loss += o.Loss.Value(alpha * float64(int(y[i])*h))
	}
	return loss/float64(z.N) + o.Lambda*o.Reg.penalty(alpha, nnz)
}

var allLosses = []Loss{Hinge, SquaredHinge, Logistic, Square}

func TestSolveAlphaIsExactMinimiser(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		p := 1 + rnd.IntN(60)
		n := 1 + rnd.IntN(300)
		margins := make([]int32, n)
		bias := rnd.IntN(p + 1)
		for i := range margins {
			margins[i] = int32(rnd.IntN(2*p+1) - p + bias/2)
			margins[i] = max(-int32(p), min(int32(p), margins[i]))
		}
		h := newHistogram(margins, p)
		nnz := 1 + rnd.IntN(p)
		lambda := math.Pow(10, -4+4*rnd.Float64())
		for _, loss := range allLosses {
			for _, reg := range []Reg{L2, L1} {
				prev := 0.3
				a := h.solveAlpha(loss, reg, lambda, nnz, prev)
				if !(a > 0) {
					t.Fatalf("trial %d %v/%v: α = %g", trial, loss, reg, a)
				}
				f := func(x float64) float64 { return h.objective(loss, reg, lambda, x, nnz) }
				got := f(a)
				// Brute force: a log-spaced scan, then golden-section refinement
				// around the best point.
				best, bestX := math.Inf(1), 0.0
				for k := range 4001 {
					x := math.Pow(10, -6+8*float64(k)/4000)
					if v := f(x); v < best {
						best, bestX = v, x
					}
				}
				lo, hi := bestX/1.01, bestX*1.01
				for range 200 {
					m1, m2 := lo+(hi-lo)*0.382, lo+(hi-lo)*0.618
					if f(m1) < f(m2) {
						hi = m2
					} else {
						lo = m1
					}
				}
				best = math.Min(best, f((lo+hi)/2))
				if got > best+1e-12*math.Max(1, math.Abs(best)) {
					// The only allowed exception: the infimum is at α → 0,
					// where the solver keeps prev.
					if a == prev && f(1e-9) <= got {
						continue
					}
					t.Fatalf("trial %d %v/%v: f(α=%g) = %.15g, brute force finds %.15g at %g", trial, loss, reg, a, got, best, bestX)
				}
			}
		}
	}
}

func TestObjectiveNeverIncreases(t *testing.T) {
	z, yb, y := randomProblem(3, 700, 96)
	rnd := rand.New(rand.NewPCG(4, 5))
	for _, loss := range allLosses {
		for _, reg := range []Reg{L2, L1} {
			w0 := make([]int8, z.P)
			for j := range w0 {
				w0[j] = int8(rnd.IntN(3) - 1)
			}
			o := Options{Lambda: 1e-3, Loss: loss, Reg: reg}
			res, err := Solve(z, yb, w0, 0.05, &o)
			if err != nil {
				t.Fatal(err)
			}
			for i := 1; i < len(res.History); i++ {
				prev, cur := res.History[i-1].Objective, res.History[i].Objective
				if cur > prev+1e-12*math.Abs(prev) {
					t.Fatalf("%v/%v: step %d (%s) raised the objective from %.15g to %.15g", loss, reg, i, res.History[i].Kind, prev, cur)
				}
			}
			if want := fullObjective(z, y, res.W, res.Alpha, o.withDefaults()); math.Abs(want-res.Objective) > 1e-9*math.Abs(want) {
				t.Fatalf("%v/%v: reported objective %.12g, recomputed %.12g", loss, reg, res.Objective, want)
			}
			if res.History[len(res.History)-1].Objective >= res.History[0].Objective {
				t.Fatalf("%v/%v: no progress from a random start", loss, reg)
			}
		}
	}
}

// TestColumnMultipliers: with per-column multipliers the reported
// objective is the full objective of Σ mult_j w_j z_j, it never increases,
// and every multiplier-weighted move is exact (active set included).
func TestColumnMultipliers(t *testing.T) {
	z, yb, y := randomProblem(11, 900, 80)
	rnd := rand.New(rand.NewPCG(12, 13))
	mult := make([]int32, z.P)
	for j := range mult {
		mult[j] = 1
		if j < 20 {
			mult[j] = int32(1 + rnd.IntN(6))
		}
	}
	for _, loss := range allLosses {
		w0 := make([]int8, z.P)
		for j := range w0 {
			w0[j] = int8(rnd.IntN(3) - 1)
		}
		o := Options{Lambda: 1e-3, Loss: loss, Mult: mult}
		res, err := Solve(z, yb, w0, 0.05, &o)
		if err != nil {
			t.Fatal(err)
		}
		for i := 1; i < len(res.History); i++ {
			if prev, cur := res.History[i-1].Objective, res.History[i].Objective; cur > prev+1e-12*math.Abs(prev) {
				t.Fatalf("%v: step %d raised the objective from %.15g to %.15g", loss, i, prev, cur)
			}
		}
		if want := fullObjective(z, y, res.W, res.Alpha, o.withDefaults()); math.Abs(want-res.Objective) > 1e-9*math.Abs(want) {
			t.Fatalf("%v: reported objective %.12g, recomputed %.12g", loss, res.Objective, want)
		}
	}
	if _, err := Solve(z, yb, make([]int8, z.P), 0.1, &Options{Mult: mult[:3]}); err == nil {
		t.Fatal("short multiplier list accepted")
	}
	bad := append([]int32(nil), mult...)
	bad[5] = 0
	if _, err := Solve(z, yb, make([]int8, z.P), 0.1, &Options{Mult: bad}); err == nil {
		t.Fatal("zero multiplier accepted")
	}
}

// TestResultIsCoordinateWiseOptimal checks what convergence means for this
// algorithm: no single w_j change lowers the objective at the final α.
func TestResultIsCoordinateWiseOptimal(t *testing.T) {
	z, yb, y := randomProblem(6, 400, 48)
	for _, loss := range allLosses {
		o := Options{Lambda: 1e-3, Loss: loss, Tol: 1e-15, MaxRounds: 100, MaxSweeps: 100}
		res, err := Solve(z, yb, make([]int8, z.P), 0.1, &o)
		if err != nil {
			t.Fatal(err)
		}
		// Start from w = 0: coordinates must have been switched on.
		if res.History[len(res.History)-1].NonZero == 0 {
			t.Fatalf("%v: all weights zero", loss)
		}
		od := o.withDefaults()
		base := fullObjective(z, y, res.W, res.Alpha, od)
		w := append([]int8(nil), res.W...)
		for j := range w {
			orig := w[j]
			for _, v := range []int8{-1, 0, 1} {
				w[j] = v
				if f := fullObjective(z, y, w, res.Alpha, od); f < base-1e-9*math.Abs(base) {
					t.Fatalf("%v: setting w[%d] from %d to %d lowers the objective %.12g → %.12g", loss, j, orig, v, base, f)
				}
			}
			w[j] = orig
		}
	}
}

func TestSolveMatchesBruteForceOnTinyProblem(t *testing.T) {
	z, yb, y := randomProblem(7, 120, 6)
	o := Options{Lambda: 1e-2, Tol: 1e-15, MaxRounds: 100}
	od := o.withDefaults()
	res, _ := Solve(z, yb, make([]int8, 6), 0.5, &o)
	// Global optimum over all 3^6 weight vectors, each with its exact α.
	best := math.Inf(1)
	w := make([]int8, 6)
	for code := range 729 {
		c := code
		for j := range w {
			w[j] = int8(c%3 - 1)
			c /= 3
		}
		s := newSolver(z, yb, w, 1, &od, z.P)
		s.alphaStep()
		best = math.Min(best, s.objective())
	}
	// The alternation converges to a local optimum (the paper's lemma), not
	// necessarily the global one: here it stops at w = (1,1,1,1,1,-1) with
	// even margins, where neither α nor any single flip helps, while the
	// global optimum drops the last column. It can never beat the global
	// optimum, and it must do better than w = 0 (objective 1).
	if res.Objective < best-1e-12 || res.Objective >= 1 {
		t.Fatalf("solver objective %.6g, global optimum %.6g", res.Objective, best)
	}
	t.Logf("local optimum %.4f, global optimum %.4f", res.Objective, best)
	_ = y
}

func TestSolveIndependentOfWorkers(t *testing.T) {
	if testing.Short() {
		t.Skip("large n")
	}
	z, yb, _ := randomProblem(8, parallelMinN+1000, 40)
	w0 := make([]int8, z.P)
	var first *Result
	for _, workers := range []int{1, 2, 5} {
		res, err := Solve(z, yb, w0, 0.05, &Options{Lambda: 1e-4, Workers: workers, MaxRounds: 3})
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = res
			continue
		}
		if res.Objective != first.Objective || res.Alpha != first.Alpha {
			t.Fatalf("workers=%d: objective %v α %v, workers=1: %v %v", workers, res.Objective, res.Alpha, first.Objective, first.Alpha)
		}
		for j := range res.W {
			if res.W[j] != first.W[j] {
				t.Fatalf("workers=%d: w[%d] differs", workers, j)
			}
		}
	}
}

func TestSolveRejectsBadInput(t *testing.T) {
	z, yb, _ := randomProblem(9, 100, 10)
	cases := []func() error{
		func() error { _, err := Solve(z, yb[:0], make([]int8, 10), 1, nil); return err },
		func() error { _, err := Solve(z, yb, make([]int8, 9), 1, nil); return err },
		func() error { _, err := Solve(z, yb, make([]int8, 10), 0, nil); return err },
		func() error { _, err := Solve(z, yb, make([]int8, 10), math.NaN(), nil); return err },
		func() error { _, err := Solve(z, yb, make([]int8, 10), 1, &Options{Lambda: -1}); return err },
		func() error { _, err := Solve(&Columns{N: 5, P: 2, Words: 1}, yb, make([]int8, 2), 1, nil); return err },
	}
	for i, c := range cases {
		if c() == nil {
			t.Errorf("case %d: accepted", i)
		}
	}
}

func TestColumnsTransposeAndSubset(t *testing.T) {
	rnd := rand.New(rand.NewPCG(10, 11))
	const n, p = 150, 77
	rows := make([][]uint64, n)
	for i := range rows {
		rows[i] = make([]uint64, (p+63)/64)
		for j := range p {
			if rnd.IntN(2) == 1 {
				rows[i][j/64] |= 1 << (j % 64)
			}
		}
	}
	c := NewColumns(n, p)
	for base := 0; base < n; base += 64 {
		c.SetRows64(base, rows[base:min(base+64, n)])
	}
	for i := range n {
		for j := range p {
			if c.Bit(i, j) != rows[i][j/64]>>(j%64)&1 {
				t.Fatalf("bit (%d,%d) wrong after transpose", i, j)
			}
		}
	}
	sub := c.Subset([]int{149, 3, 64})
	for k, i := range []int{149, 3, 64} {
		for j := range p {
			if sub.Bit(k, j) != c.Bit(i, j) {
				t.Fatalf("subset row %d col %d wrong", k, j)
			}
		}
	}
}

// sweepProblem is BenchmarkSweep's problem, usps-sized: 7,291 samples ×
// 2,048 bits, one class, with fixed starting weights.
func sweepProblem() (z *Columns, y []uint64, w0 []int8, o Options) {
	z, y, _ = randomProblem(12, 7291, 2048)
	w0 = make([]int8, z.P)
	for j := range w0 {
		w0[j] = int8(j%3 - 1)
	}
	return z, y, w0, (&Options{Lambda: 1e-4}).withDefaults()
}

func BenchmarkSweep(b *testing.B) {
	z, yb, w0, od := sweepProblem()
	s := newSolver(z, yb, w0, 0.01, &od, z.P)
	s.alphaStep()
	b.ResetTimer()
	for b.Loop() {
		s.sweep()
	}
}

// TestActiveSetIsExact runs hinge problems long enough for samples to leave
// and re-enter the active range, and checks every trial sum and the final
// objective against a recomputation over all samples.
func TestActiveSetIsExact(t *testing.T) {
	for _, loss := range []Loss{Hinge, SquaredHinge} {
		z, yb, y := randomProblem(13, 3000, 200)
		o := Options{Lambda: 1e-5, Loss: loss, Tol: 1e-12, MaxRounds: 20, MaxSweeps: 20}
		od := o.withDefaults()
		s := newSolver(z, yb, make([]int8, z.P), 0.05, &od, z.P)
		s.setAlpha(s.alpha)
		for round := range 6 {
			s.alphaStep()
			s.sweep()
			seen := make(map[int32]bool)
			for _, i := range s.active {
				if seen[i] {
					t.Fatalf("%v round %d: sample %d listed twice", loss, round, i)
				}
				seen[i] = true
			}
			for j := range z.P {
				a, b := s.trial(j, 1, -1)
				var wa, wb float64
				for i := range z.N {
					c := int32(2*int(z.Bit(i, j))-1) * int32(y[i])
					wa += s.table[int(s.m[i]+c)+z.P]
					wb += s.table[int(s.m[i]-c)+z.P]
				}
				if math.Abs(a-wa) > 1e-9*math.Max(1, wa) || math.Abs(b-wb) > 1e-9*math.Max(1, wb) {
					t.Fatalf("%v round %d column %d: trial (%g, %g), all samples (%g, %g)", loss, round, j, a, b, wa, wb)
				}
			}
		}
		if len(s.active) == z.N {
			t.Logf("%v: every sample still active; the test did not exercise skipping", loss)
		}
		if want := fullObjective(z, y, s.w, s.alpha, od); math.Abs(want-s.objective()) > 1e-9*want {
			t.Fatalf("%v: objective %.12g, recomputed %.12g", loss, s.objective(), want)
		}
	}
}

// TestInitMarginsMatchesDefinition checks the starting margins, counted in
// bit-sliced counters, against their definition m_i = y_i·Σ_j
// mult(j)·w_j·(2·z_ij − 1), with and without multipliers (1, 2, 4 and 5:
// several binary digits), with columns that share storage (planes whose
// weights cancel or add), and a sample count that does not fill the last
// word.
func TestInitMarginsMatchesDefinition(t *testing.T) {
	const n, stored, planes = 1000, 70, 2
	rnd := rand.New(rand.NewPCG(8, 8))
	shared := randomPlanes(t, rnd, n, stored, planes)
	plain, _, _ := randomProblem(9, n, stored*planes)
	y := make([]int8, n)
	for i := range y {
		y[i] = int8(2*rnd.IntN(2) - 1)
	}
	yb := LabelBits(y)
	for _, z := range []*Columns{plain, shared} {
		for _, mults := range [][]int32{nil, {1, 2}, {4, 5}} {
			for _, binary := range []bool{false, true} {
				o := &Options{Lambda: 1e-3, Binary: binary}
				if mults != nil {
					o.Mult = make([]int32, z.P)
					for j := range o.Mult {
						o.Mult[j] = mults[j%planes]
					}
				}
				w0 := make([]int8, z.P)
				for j := range w0 {
					w0[j] = int8(rnd.IntN(3) - 1)
				}
				s := newSolver(z, yb, w0, 0.1, o, 1)
				for i := range n {
					var h int32
					for j, v := range s.w {
						h += int32(v) * s.mult(j) * (2*int32(z.Bit(i, j)) - 1)
					}
					if s.m[i] != int32(y[i])*h {
						t.Fatalf("shared %v mult %v binary %v: margin %d = %d, want %d",
							z == shared, mults, binary, i, s.m[i], int32(y[i])*h)
					}
				}
			}
		}
	}
}

// BenchmarkInitMarginsPlanes sets the starting margins at the shape of a
// drift128 fold fit with tree planes: 16,000 samples, 1,024 stored leaf
// columns of two planes each (multipliers 1 and 2), every weight nonzero.
// BenchmarkInitMarginsPlanesByColumn does it as the solver did before,
// one addColumn per column.
func BenchmarkInitMarginsPlanes(b *testing.B) { benchInitMargins(b, false) }

func BenchmarkInitMarginsPlanesByColumn(b *testing.B) { benchInitMargins(b, true) }

func benchInitMargins(b *testing.B, byColumn bool) {
	const n, stored, planes = 16000, 1024, 2
	rnd := rand.New(rand.NewPCG(3, 3))
	z := randomPlanes(b, rnd, n, stored, planes)
	y := make([]int8, n)
	w := make([]int8, z.P)
	mult := make([]int32, z.P)
	for i := range y {
		y[i] = int8(2*rnd.IntN(2) - 1)
	}
	for j := range w {
		w[j], mult[j] = int8(2*rnd.IntN(2)-1), int32(1+j%planes)
	}
	o := &Options{Lambda: 1e-3, Mult: mult}
	s := newSolver(z, LabelBits(y), w, 0.1, o, 1)
	for b.Loop() {
		if byColumn {
			clear(s.m)
			for j, v := range s.w {
				s.addColumn(j, int32(v))
			}
		} else {
			s.initMargins()
		}
	}
}

// TestBandSumMatchesDirectLoop checks bandSum, read from the band's pairs
// in four running sums, against its definition — the band samples' table
// entries summed in bandList's order — within the rounding lowerBound
// allows for (n·u times the sum of n positive terms), for every column and
// move after each of a few sweeps (so the pairs are rebuilt as the
// margins, the band and α change), with multipliers and both kinds of
// weights.
func TestBandSumMatchesDirectLoop(t *testing.T) {
	for _, binary := range []bool{false, true} {
		for _, mult := range []int32{1, 3} {
			z, yb, y := featureProblem(22, 2100, 200, 3)
			o := Options{Lambda: 1e-3, Binary: binary, Mult: make([]int32, z.P)}
			bound := 0
			for j := range o.Mult {
				o.Mult[j] = 1
				if j < 10 {
					o.Mult[j] = mult
				}
				bound += int(o.Mult[j])
			}
			od := o.withDefaults()
			s := newSolver(z, yb, centroidStart(z, y), 0.01, &od, bound)
			s.setAlpha(s.alpha)
			checked := 0
			for round := range 3 {
				s.alphaStep()
				s.sweep()
				for j := range z.P {
					s.lowerTrial(j, 1, -1) // rebuilds bandList if stale
					col := z.Col(j)
					for _, d := range []int32{1, -1, 2, -2} {
						d *= s.mult(j)
						var want float64
						for _, i := range s.bandList {
							c := ^(col[i>>6] ^ yb[i>>6]) >> (i & 63) & 1
							want += s.table[s.m[i]+int32(s.bound)+(int32(c)*2-1)*d]
						}
						if got := s.bandSum(col, d); math.Abs(got-want) > float64(len(s.bandList)+1)*0x1p-53*want || math.IsNaN(got) {
							t.Fatalf("binary %v mult %d round %d column %d d %d: bandSum %v, the direct loop %v", binary, mult, round, j, d, got, want)
						}
						checked++
					}
				}
			}
			if len(s.bandList) == 0 || checked == 0 {
				t.Fatalf("binary %v mult %d: an empty band tests nothing", binary, mult)
			}
		}
	}
}

// randomPlanes returns n samples of stored random bit columns, each shared
// by planes consecutive columns (a tree leaf's planes).
func randomPlanes(tb testing.TB, rnd *rand.Rand, n, stored, planes int) *Columns {
	tb.Helper()
	same := make([]int32, stored*planes)
	for j := range same {
		same[j] = int32(j / planes)
	}
	z, err := NewSharedColumns(n, same)
	if err != nil {
		tb.Fatal(err)
	}
	for i := range z.Data {
		z.Data[i] = rnd.Uint64()
	}
	return z
}

// BenchmarkBandSum times lowerTrial's band sums: every column, both
// moves, with a band of about 250 of 8,000 samples spread over the words,
// as a boosted model's leaf columns meet it (drift128's search: 260 a
// call, in 117 of 125 words).
func BenchmarkBandSum(b *testing.B) {
	z, yb, y := featureProblem(22, 8000, 256, 3)
	o := Options{Lambda: 1e-3}
	od := o.withDefaults()
	s := newSolver(z, yb, centroidStart(z, y), 0.01, &od, z.P)
	s.setAlpha(s.alpha)
	s.alphaStep()
	s.sweep()
	rnd := rand.New(rand.NewPCG(1, 2))
	for w := range s.band {
		s.band[w] = rnd.Uint64() & rnd.Uint64() & rnd.Uint64() & rnd.Uint64() & rnd.Uint64() // 1 bit in 32
	}
	s.bandStale = true
	s.lowerTrial(0, 1, -1) // rebuilds bandList
	b.Logf("band %d of %d samples", len(s.bandList), z.N)
	var sink float64
	for b.Loop() {
		for j := range z.P {
			col := z.Col(j)
			sink += s.bandSum(col, 1) + s.bandSum(col, -1)
		}
	}
	if math.IsNaN(sink) {
		b.Fatal("NaN")
	}
}
