package inference

import (
	"errors"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
)

func randomTernary(rnd *rand.Rand, n int, zeroFrac float64) []int8 {
	w := make([]int8, n)
	for j := range w {
		switch {
		case rnd.Float64() < zeroFrac:
		case rnd.IntN(2) == 0:
			w[j] = 1
		default:
			w[j] = -1
		}
	}
	return w
}

func TestTernaryDotMatchesNaive(t *testing.T) {
	rnd := rand.New(rand.NewPCG(21, 22))
	for _, n := range []int{1, 2, 63, 64, 65, 127, 128, 129, 1000, 2047, 2049} {
		for _, zf := range []float64{0, 0.3, 0.9, 1} {
			w := randomTernary(rnd, n, zf)
			zv := make([]int8, n)
			words := (n + 63) / 64
			z := make([]uint64, words)
			for j := range zv {
				zv[j] = -1
				if rnd.IntN(2) == 1 {
					zv[j] = 1
					z[j/64] |= 1 << (j % 64)
				}
			}
			// Garbage past n in z must not matter.
			if n%64 != 0 {
				z[words-1] |= ^uint64(0) << (n % 64)
			}
			sign, nz := make([]uint64, words), make([]uint64, words)
			PackTernary(sign, nz, w)
			want := 0
			for j := range n {
				want += int(w[j]) * int(zv[j])
			}
			if got := TernaryDot(z, sign, nz); got != want {
				t.Fatalf("n=%d zero fraction %g: TernaryDot = %d, naive = %d", n, zf, got, want)
			}
			back := make([]int8, n)
			UnpackTernary(back, sign, nz)
			for j := range w {
				if back[j] != w[j] {
					t.Fatalf("n=%d: Unpack(Pack(w))[%d] = %d, want %d", n, j, back[j], w[j])
				}
			}
		}
	}
}

// testSpec builds a random ternary model over a real transform.
func testSpec(t testing.TB, seed uint64, d, p, classes int, zeroFrac float64) *ModelSpec {
	t.Helper()
	rnd := rand.New(rand.NewPCG(seed, 1))
	ts := TransformSpec{GeneratorV1, seed, 1.5, d, p}
	sc := Scaler{Lo: make([]float32, d), Hi: make([]float32, d)}
	for i := range d {
		sc.Lo[i] = float32(-rnd.Float64() * 3)
		sc.Hi[i] = sc.Lo[i] + float32(rnd.Float64()*5)
	}
	names := make([]string, classes)
	for c := range names {
		names[c] = string(rune('A' + c))
	}
	nv := Vectors(classes)
	weights := make([][]int8, nv)
	alpha := make([]float32, nv)
	for c := range weights {
		weights[c] = randomTernary(rnd, p, zeroFrac)
		alpha[c] = float32(0.01 + rnd.Float64())
	}
	spec, err := NewTernarySpec(ts, sc, names, weights, alpha)
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// naivePredict classifies x from the definitions: scale, project all P
// columns, take the sign of cos(u+b)+t in float64, and dot full-length
// ternary weights.
func naiveScores(spec *ModelSpec, x []float32) []float64 {
	tr, _ := NewTransform(spec.Transform)
	xs := make([]float32, len(x))
	spec.Scaler.Apply(xs, x)
	u := make([]float32, spec.Transform.P)
	tr.Project(u, xs, tr.NewWorkspace())
	nv := Vectors(len(spec.Classes))
	scores := make([]float64, nv)
	w := make([]int8, len(spec.Kept))
	for c := range nv {
		UnpackTernary(w, spec.Sign[c], spec.NonZero[c])
		dot := 0
		for i, j := range spec.Kept {
			z := -1
			if math.Cos(float64(u[j])+tr.Offset(int(j)))+float64(tr.Threshold(int(j))) >= 0 {
				z = 1
			}
			dot += int(w[i]) * z
		}
		scores[c] = float64(spec.Alpha[c]) * float64(dot)
	}
	return scores
}

func TestPredictMatchesDefinition(t *testing.T) {
	rnd := rand.New(rand.NewPCG(23, 24))
	for _, c := range []struct{ d, p, classes int }{{7, 300, 2}, {33, 1000, 3}, {256, 2048, 10}} {
		spec := testSpec(t, uint64(c.d), c.d, c.p, c.classes, 0.5)
		m, err := New(spec)
		if err != nil {
			t.Fatal(err)
		}
		scores := make([]float32, c.classes)
		x := make([]float32, c.d)
		for range 200 {
			for i := range x {
				x[i] = spec.Scaler.Lo[i] + float32(rnd.Float64())*(spec.Scaler.Hi[i]-spec.Scaler.Lo[i])
			}
			got, err := m.Predict(scores, x)
			if err != nil {
				t.Fatal(err)
			}
			want := naiveScores(spec, x)
			if c.classes == 2 {
				if math.Abs(float64(scores[1])-want[0]) > 1e-3 || scores[0] != -scores[1] {
					t.Fatalf("%+v: scores %v, want ±%v", c, scores, want[0])
				}
				if (want[0] >= 0) != (got == 1) {
					t.Fatalf("%+v: predicted %d for score %v", c, got, want[0])
				}
				continue
			}
			best := 0
			for k := range want {
				if math.Abs(float64(scores[k])-want[k]) > 1e-3*math.Max(1, math.Abs(want[k])) {
					t.Fatalf("%+v: score[%d] = %v, want %v", c, k, scores[k], want[k])
				}
				if want[k] > want[best] {
					best = k
				}
			}
			if got != best {
				t.Fatalf("%+v: predicted %d, want %d (scores %v)", c, got, best, want)
			}
		}
	}
}

func TestNewTernarySpecDropsAllZeroColumns(t *testing.T) {
	const p = 200
	w := [][]int8{make([]int8, p), make([]int8, p), make([]int8, p)}
	w[0][5], w[1][5], w[2][150], w[1][199] = 1, -1, 1, -1
	spec, err := NewTernarySpec(TransformSpec{GeneratorV1, 1, 1, 4, p}, Scaler{Lo: make([]float32, 4), Hi: []float32{1, 1, 1, 1}}, []string{"a", "b", "c"}, w, []float32{1, 1, 1})
	if err != nil {
		t.Fatal(err)
	}
	if want := []int32{5, 150, 199}; len(spec.Kept) != 3 || spec.Kept[0] != want[0] || spec.Kept[1] != want[1] || spec.Kept[2] != want[2] {
		t.Fatalf("kept %v, want %v", spec.Kept, want)
	}
	m, err := New(spec)
	if err != nil {
		t.Fatal(err)
	}
	// Only blocks 0 and 1 (d = 4: columns 0-3, 4-7, …) hold kept columns.
	if len(m.emb.plan.ranges) != 3 {
		t.Fatalf("block ranges %+v", m.emb.plan.ranges)
	}
}

func TestPredictAllocatesNothing(t *testing.T) {
	spec := testSpec(t, 3, 256, 2048, 10, 0.3)
	m, _ := New(spec)
	x := make([]float32, 256)
	scores := make([]float32, 10)
	if a := testing.AllocsPerRun(200, func() { m.Predict(scores, x) }); a != 0 {
		t.Fatalf("Predict allocates %v times per call", a)
	}
}

func TestPredictConcurrent(t *testing.T) {
	spec := testSpec(t, 4, 64, 1024, 5, 0.3)
	m, _ := New(spec)
	rnd := rand.New(rand.NewPCG(25, 26))
	xs := make([][]float32, 64)
	want := make([]int, len(xs))
	for i := range xs {
		xs[i] = make([]float32, 64)
		for j := range xs[i] {
			xs[i][j] = float32(rnd.NormFloat64())
		}
		want[i], _ = m.Predict(nil, xs[i])
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range 200 {
				i := (g*31 + r) % len(xs)
				if got, _ := m.Predict(nil, xs[i]); got != want[i] {
					t.Errorf("goroutine %d: input %d predicted %d, want %d", g, i, got, want[i])
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestPredictRejectsWrongLength(t *testing.T) {
	m, _ := New(testSpec(t, 5, 10, 128, 2, 0))
	if _, err := m.Predict(nil, make([]float32, 9)); !errors.Is(err, ErrInputLen) {
		t.Fatalf("Predict on 9 features: %v, want ErrInputLen", err)
	}
}

func TestModelSpecValidation(t *testing.T) {
	mutate := []func(s *ModelSpec){
		func(s *ModelSpec) { s.Classes = s.Classes[:1] },
		func(s *ModelSpec) { s.Classes[1] = s.Classes[0] },
		func(s *ModelSpec) { s.Features = []string{"only one"} },
		func(s *ModelSpec) { s.Kept[1] = s.Kept[0] },
		func(s *ModelSpec) { s.Kept[len(s.Kept)-1] = int32(s.Transform.P) },
		func(s *ModelSpec) { s.Alpha[0] = 0 },
		func(s *ModelSpec) { s.Alpha[0] = float32(math.NaN()) },
		func(s *ModelSpec) { s.Sign = s.Sign[:1] },
		func(s *ModelSpec) { s.NonZero[0] = s.NonZero[0][:1] },
		func(s *ModelSpec) { s.NonZero[0][len(s.NonZero[0])-1] |= 1 << 63 },
		func(s *ModelSpec) { s.Scaler.Hi = s.Scaler.Hi[:3] },
		func(s *ModelSpec) { s.Scaler.Hi[0] = s.Scaler.Lo[0] - 1 },
		func(s *ModelSpec) { s.Scaler.Lo[0] = float32(math.Inf(-1)) },
		func(s *ModelSpec) { s.Transform.Sigma = 0 },
	}
	for i, f := range mutate {
		s := testSpec(t, 6, 10, 300, 3, 0.5)
		if len(s.Kept)%64 == 0 {
			t.Fatal("test needs a partial last word")
		}
		f(s)
		if _, err := New(s); err == nil {
			t.Errorf("mutation %d: New accepted an invalid spec", i)
		}
	}
}

// denseRFF is the full-precision random-Fourier-feature classifier the paper
// compares against: a dense d×p Gaussian matrix, cos features, and float32
// one-vs-all weights. It is the baseline for BenchmarkPredict.
type denseRFF struct {
	d, p, nv int
	r        []float32 // p×d, row-major
	b        []float32
	w        []float32 // nv×p
	u        []float32
}

func newDenseRFF(d, p, classes int) *denseRFF {
	rnd := rand.New(rand.NewPCG(uint64(d), uint64(p)))
	nv := Vectors(classes)
	m := &denseRFF{d: d, p: p, nv: nv, r: make([]float32, p*d), b: make([]float32, p), w: make([]float32, nv*p), u: make([]float32, p)}
	for i := range m.r {
		m.r[i] = float32(rnd.NormFloat64())
	}
	for i := range m.b {
		m.b[i] = float32(rnd.Float64() * 2 * math.Pi)
	}
	for i := range m.w {
		m.w[i] = float32(rnd.NormFloat64())
	}
	return m
}

func (m *denseRFF) predict(scores, x []float32) int {
	for j := range m.p {
		row := m.r[j*m.d : (j+1)*m.d]
		var s0, s1, s2, s3 float32
		i := 0
		for ; i+3 < len(row); i += 4 {
			s0 += row[i] * x[i]
			s1 += row[i+1] * x[i+1]
			s2 += row[i+2] * x[i+2]
			s3 += row[i+3] * x[i+3]
		}
		for ; i < len(row); i++ {
			s0 += row[i] * x[i]
		}
		m.u[j] = float32(math.Cos(float64(s0 + s1 + s2 + s3 + m.b[j])))
	}
	best := 0
	for c := range m.nv {
		w := m.w[c*m.p : (c+1)*m.p]
		var s float32
		for j, v := range m.u {
			s += w[j] * v
		}
		scores[c] = s
		if s > scores[best] {
			best = c
		}
	}
	return best
}

// BenchmarkPredict measures one prediction for the (d, p, classes) shapes of
// usps, mnist, covtype and a wide usps model: trit (FWHT + interval test +
// popcount) against the dense float RFF baseline.
func BenchmarkPredict(b *testing.B) {
	for _, c := range []struct {
		name          string
		d, p, classes int
	}{
		{"usps_d256_p2048_c10", 256, 2048, 10},
		{"mnist_d784_p2048_c10", 784, 2048, 10},
		{"covtype_d54_p2048_c2", 54, 2048, 2},
		{"usps_d256_p8192_c10", 256, 8192, 10},
	} {
		x := make([]float32, c.d)
		for i := range x {
			x[i] = float32(math.Sin(float64(i)))
		}
		scores := make([]float32, c.classes)
		b.Run(c.name+"/trit", func(b *testing.B) {
			// A third of the columns zero in every class is typical of trained
			// usps models; the rest are dropped at export.
			m, err := New(testSpec(b, 1, c.d, c.p, c.classes, 0.3))
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				m.Predict(scores, x)
			}
		})
		b.Run(c.name+"/dense-rff", func(b *testing.B) {
			m := newDenseRFF(c.d, c.p, c.classes)
			b.ReportAllocs()
			for b.Loop() {
				m.predict(scores, x)
			}
		})
	}
}

// TestEmbedKeptMatchesEmbed checks the kept-column embedding Predict uses
// (with its fast path for runs of consecutive columns) against Embed of all
// P columns, for kept sets that are complete, gapped, single columns, runs
// crossing a block boundary and runs not aligned to 64-bit words.
func TestEmbedKeptMatchesEmbed(t *testing.T) {
	rnd := rand.New(rand.NewPCG(7, 8))
	for _, c := range []struct {
		name string
		d, p int
		keep func(j int) bool
	}{
		{"all", 50, 300, func(int) bool { return true }},
		{"all, p < d", 100, 70, func(int) bool { return true }},
		{"every other", 30, 200, func(j int) bool { return j%2 == 0 }},
		{"runs across blocks", 16, 150, func(j int) bool { return j%37 < 29 }},
		{"one block missing", 16, 100, func(j int) bool { return j < 32 || j >= 48 }},
		{"unaligned tail", 64, 130, func(j int) bool { return j >= 3 }},
		{"single column", 8, 40, func(j int) bool { return j == 17 }},
	} {
		t.Run(c.name, func(t *testing.T) {
			ts := TransformSpec{Generator: GeneratorV1, Seed: 99, Sigma: 1.5, D: c.d, P: c.p}
			w := make([]int8, c.p)
			for j := range w {
				if c.keep(j) {
					w[j] = int8(1 - 2*rnd.IntN(2))
				}
			}
			lo, hi := make([]float32, c.d), make([]float32, c.d)
			for i := range hi {
				lo[i], hi[i] = -1, 1
			}
			spec, err := NewTernarySpec(ts, Scaler{Lo: lo, Hi: hi}, []string{"a", "b"}, [][]int8{w}, []float32{1})
			if err != nil {
				t.Fatal(err)
			}
			m, err := New(spec)
			if err != nil {
				t.Fatal(err)
			}
			tr := m.Transform()
			ws := tr.NewWorkspace()
			all := make([]uint64, (c.p+63)/64)
			kept := make([]uint64, (len(spec.Kept)+63)/64)
			x := make([]float32, c.d)
			for range 20 {
				for i := range x {
					x[i] = float32(2*rnd.Float64() - 1)
				}
				tr.Embed(all, x, ws) // the scaler is the identity on [-1, 1]
				if err := m.EmbedKept(kept, x); err != nil {
					t.Fatal(err)
				}
				for i, j := range spec.Kept {
					if got, want := kept[i/64]>>(i%64)&1, all[j/64]>>(j%64)&1; got != want {
						t.Fatalf("kept bit %d (column %d) = %d, Embed says %d", i, j, got, want)
					}
				}
				if tail := len(spec.Kept) % 64; tail != 0 && kept[len(kept)-1]>>tail != 0 {
					t.Fatalf("bits past the %d kept columns are set", len(spec.Kept))
				}
			}
		})
	}
}

func TestTernaryDotPrefix(t *testing.T) {
	rnd := rand.New(rand.NewPCG(41, 42))
	n := 300
	w := randomTernary(rnd, n, 0.3)
	words := (n + 63) / 64
	sign, nz, z := make([]uint64, words), make([]uint64, words), make([]uint64, words)
	PackTernary(sign, nz, w)
	for i := range z {
		z[i] = rnd.Uint64()
	}
	for _, k := range []int{0, 1, 63, 64, 65, 200, 300} {
		want := 0
		for j := range k {
			want += int(w[j]) * (int(z[j/64]>>(j%64)&1)*2 - 1)
		}
		if got := ternaryDotPrefix(&cpu, z, sign, nz, k); got != want {
			t.Fatalf("prefix %d: %d, want %d", k, got, want)
		}
	}
}
