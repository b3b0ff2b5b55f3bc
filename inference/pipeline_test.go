package inference

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestScalerClip(t *testing.T) {
	sc := Scaler{Lo: []float32{0, 0, 0, 0}, Hi: []float32{10, 10, 10, 10}, Clip: true}
	x := []float32{-5, 5, 1e9, float32(math.NaN())}
	dst := make([]float32, 4)
	if err := sc.Apply(dst, x); err != nil {
		t.Fatal(err)
	}
	if dst[0] != -1 || dst[1] != 0 || dst[2] != 1 || dst[3] != 0 {
		t.Fatalf("clipped scaling = %v, want [-1 0 1 0]: a missing value takes the middle of the range", dst)
	}
	sc.Clip = false
	sc.Apply(dst, x)
	if dst[0] != -2 || dst[2] <= 1 || dst[3] != 0 {
		t.Fatalf("unclipped scaling = %v, want values beyond [-1, 1] and 0 for the missing one", dst)
	}
}

// randomThresholds returns ascending thresholds in (-1, 1) for d features,
// some features with none.
func randomThresholds(rnd *rand.Rand, d, maxPer int) [][]float32 {
	th := make([][]float32, d)
	for i := range th {
		n := rnd.IntN(maxPer + 1)
		set := map[float32]bool{}
		for range n {
			set[float32(rnd.Float64()*2-1)] = true
		}
		for v := range set {
			th[i] = append(th[i], v)
		}
		slices.Sort(th[i])
	}
	return th
}

// refProjection is the reference loop of Projection's doc comment.
func refProjection(p *Projection, x []float32) []float32 {
	v := make([]float32, p.Out())
	t := make([]int8, len(x))
	for k := range v {
		UnpackTernary(t, p.Sign[k], p.NonZero[k])
		var acc float32
		for i := range x {
			if t[i] != 0 {
				acc += float32(t[i]) * x[i]
			}
		}
		v[k] = float32(acc*p.Scale[k]) - p.Bias[k]
	}
	return v
}

func randomProjection(rnd *rand.Rand, in, out int) *Projection {
	p := &Projection{}
	words := (in + 63) / 64
	for range out {
		s, nz := make([]uint64, words), make([]uint64, words)
		PackTernary(s, nz, randomTernary(rnd, in, 0.4))
		p.Sign = append(p.Sign, s)
		p.NonZero = append(p.NonZero, nz)
		p.Scale = append(p.Scale, float32(0.1+rnd.Float64()))
		p.Bias = append(p.Bias, float32(rnd.NormFloat64()))
	}
	return p
}

func TestProjectionMatchesReference(t *testing.T) {
	rnd := rand.New(rand.NewPCG(31, 32))
	for _, in := range []int{1, 5, 64, 65, 300} {
		p := randomProjection(rnd, in, 7)
		x := make([]float32, in)
		for i := range x {
			x[i] = float32(rnd.NormFloat64())
		}
		got := make([]float32, 7)
		if err := p.Apply(got, x); err != nil {
			t.Fatal(err)
		}
		want := refProjection(p, x)
		for k := range got {
			if math.Float32bits(got[k]) != math.Float32bits(want[k]) {
				t.Fatalf("in=%d output %d: %v, reference %v", in, k, got[k], want[k])
			}
		}
	}
}

func TestProjectionValidation(t *testing.T) {
	rnd := rand.New(rand.NewPCG(33, 34))
	good := func() *Projection { return randomProjection(rnd, 10, 3) }
	cases := map[string]func(p *Projection){
		"no outputs":      func(p *Projection) { p.Scale, p.Bias, p.Sign, p.NonZero = nil, nil, nil, nil },
		"short bias":      func(p *Projection) { p.Bias = p.Bias[:2] },
		"wide plane":      func(p *Projection) { p.Sign[1] = append(p.Sign[1], 0) },
		"bit past inputs": func(p *Projection) { p.NonZero[0][0] |= 1 << 12 },
		"NaN scale":       func(p *Projection) { p.Scale[2] = float32(math.NaN()) },
		"infinite bias":   func(p *Projection) { p.Bias[0] = float32(math.Inf(1)) },
	}
	for name, mutate := range cases {
		p := good()
		mutate(p)
		if err := p.Validate(10); !errors.Is(err, ErrProjection) {
			t.Errorf("%s: Validate = %v, want ErrProjection", name, err)
		}
	}
	if err := good().Validate(10); err != nil {
		t.Fatalf("valid projection: %v", err)
	}
}

// pipelineSpec builds a random model with thresholds, optionally a
// projection, and p random features.
func pipelineSpec(t testing.TB, seed uint64, d, p, classes int, project bool) *ModelSpec {
	t.Helper()
	rnd := rand.New(rand.NewPCG(seed, 2))
	base := &ModelSpec{
		Scaler:          Scaler{Lo: make([]float32, d), Hi: make([]float32, d), Clip: true},
		Thresholds:      randomThresholds(rnd, d, 5),
		ThresholdWeight: int32(rnd.IntN(5)), // 0 (meaning 1) to 4
	}
	for i := range d {
		base.Scaler.Lo[i] = float32(-rnd.Float64() * 3)
		base.Scaler.Hi[i] = base.Scaler.Lo[i] + float32(rnd.Float64()*5)
	}
	in := d
	if project {
		base.Projection = randomProjection(rnd, d, 6)
		in = 6
	}
	if p > 0 {
		base.Transform = TransformSpec{GeneratorV1, seed, 1.3, in, p}
	}
	for c := range classes {
		base.Classes = append(base.Classes, string(rune('A'+c)))
	}
	nv := Vectors(classes)
	weights := make([][]int8, nv)
	alpha := make([]float32, nv)
	for c := range weights {
		weights[c] = randomTernary(rnd, base.Columns(), 0.3)
		alpha[c] = float32(0.01 + rnd.Float64())
	}
	spec, err := NewSpec(base, weights, alpha)
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// refEmbedding computes the full embedding (NT + NL + P bits as ±1) from
// the definitions: scale and clip, threshold comparisons, each tree's leaf
// by the formula of Trees' doc comment, reference projection,
// sign(cos(u+b)+t) in float64.
func refEmbedding(spec *ModelSpec, x []float32) []int8 {
	xs := make([]float32, len(x))
	spec.Scaler.Apply(xs, x)
	var z []int8
	for i, list := range spec.Thresholds {
		for _, v := range list {
			b := int8(-1)
			if xs[i] > v {
				b = 1
			}
			z = append(z, b)
		}
	}
	for range spec.Trees.NumPlanes() * min(spec.Trees.Count(), 1) { // every plane repeats the leaf bits
		tr := spec.Trees
		for t := range len(tr.Feature) / tr.Depth {
			leaf := 0
			for l := range tr.Depth {
				if xs[tr.Feature[t*tr.Depth+l]] > tr.Value[t*tr.Depth+l] {
					leaf += 1 << l
				}
			}
			for k := range 1 << tr.Depth {
				b := int8(-1)
				if k == leaf {
					b = 1
				}
				z = append(z, b)
			}
		}
	}
	if spec.Transform.P == 0 {
		return z
	}
	in := xs
	if spec.Projection != nil {
		in = refProjection(spec.Projection, xs)
	}
	tr, _ := NewTransform(spec.Transform)
	u := make([]float32, spec.Transform.P)
	tr.Project(u, in, tr.NewWorkspace())
	for j := range u {
		b := int8(-1)
		if math.Cos(float64(u[j])+tr.Offset(j))+float64(tr.Threshold(j)) >= 0 {
			b = 1
		}
		z = append(z, b)
	}
	return z
}

func TestPipelinePredictMatchesDefinition(t *testing.T) {
	rnd := rand.New(rand.NewPCG(35, 36))
	for _, tc := range []struct {
		d, p, classes int
		project       bool
	}{
		{3, 0, 2, false}, {7, 0, 4, false}, {5, 64, 2, false}, {9, 200, 3, true}, {40, 1000, 5, true}, {130, 96, 2, true},
	} {
		spec := pipelineSpec(t, uint64(tc.d*1000+tc.p), tc.d, tc.p, tc.classes, tc.project)
		m, err := New(spec)
		if err != nil {
			t.Fatalf("%+v: %v", tc, err)
		}
		nv := Vectors(tc.classes)
		w := make([]int8, len(spec.Kept))
		scores := make([]float32, tc.classes)
		kept := make([]uint64, (len(spec.Kept)+63)/64)
		for range 50 {
			x := make([]float32, tc.d)
			for i := range x {
				x[i] = float32(rnd.NormFloat64() * 4) // often outside the fitted range: clipping matters
			}
			z := refEmbedding(spec, x)
			if err := m.EmbedKept(kept, x); err != nil {
				t.Fatal(err)
			}
			for i, j := range spec.Kept {
				if got := int8(kept[i/64]>>(i%64)&1)*2 - 1; got != z[j] {
					t.Fatalf("%+v: kept bit %d (column %d) = %d, definition %d", tc, i, j, got, z[j])
				}
			}
			got, err := m.Predict(scores, x)
			if err != nil {
				t.Fatal(err)
			}
			best, bestScore := 0, math.Inf(-1)
			for c := range nv {
				UnpackTernary(w, spec.Sign[c], spec.NonZero[c])
				dot, nt := 0, spec.NumThresholds()
				for i, j := range spec.Kept {
					rho := 1
					if int(j) < nt && spec.ThresholdWeight > 1 {
						rho = int(spec.ThresholdWeight)
					}
					dot += rho * int(w[i]) * int(z[j])
				}
				s := float64(spec.Alpha[c] * float32(dot))
				if nv == 1 {
					best = 0
					if dot >= 0 {
						best = 1
					}
					break
				}
				if s > bestScore {
					best, bestScore = c, s
				}
			}
			if got != best {
				t.Fatalf("%+v: Predict = %d, definition %d", tc, got, best)
			}
		}
	}
}

func TestPipelinePredictAllocatesNothing(t *testing.T) {
	spec := pipelineSpec(t, 7, 20, 512, 4, true)
	m, err := New(spec)
	if err != nil {
		t.Fatal(err)
	}
	x := make([]float32, 20)
	scores := make([]float32, 4)
	m.Predict(scores, x)
	if n := testing.AllocsPerRun(100, func() { m.Predict(scores, x) }); n != 0 {
		t.Fatalf("Predict allocates %v times per call", n)
	}
}

func TestPipelineValidation(t *testing.T) {
	cases := map[string]func(s *ModelSpec){
		"no features at all": func(s *ModelSpec) { s.Thresholds = nil; s.Transform = TransformSpec{} },
		"threshold lists":    func(s *ModelSpec) { s.Thresholds = s.Thresholds[:2] },
		"unsorted":           func(s *ModelSpec) { s.Thresholds[0] = []float32{0.5, 0.1} },
		"duplicate":          func(s *ModelSpec) { s.Thresholds[0] = []float32{0.5, 0.5} },
		"NaN threshold":      func(s *ModelSpec) { s.Thresholds[1] = []float32{float32(math.NaN())} },
		"transform width":    func(s *ModelSpec) { s.Transform.D = 3 },
		"projection, no P":   func(s *ModelSpec) { s.Transform = TransformSpec{} },
		"kept past columns":  func(s *ModelSpec) { s.Kept[len(s.Kept)-1] = int32(s.Columns()) },
		"threshold weight":   func(s *ModelSpec) { s.ThresholdWeight = MaxThresholdWeight + 1 },
		"negative weight":    func(s *ModelSpec) { s.ThresholdWeight = -2 },
	}
	for name, mutate := range cases {
		spec := pipelineSpec(t, 9, 6, 128, 3, true)
		spec.Thresholds[0] = []float32{-0.5, 0, 0.5}
		spec.Thresholds[1] = []float32{0}
		mutate(spec)
		if _, err := New(spec); err == nil {
			t.Errorf("%s: New accepted an invalid spec", name)
		}
	}
}

func BenchmarkPredictPipeline(b *testing.B) {
	for _, bc := range []struct {
		name          string
		d, p, classes int
		project       bool
	}{
		{"wall-following(24,thresholds,4096,4)", 24, 4096, 4, false},
		{"mnist(784,proj32,12288,10)", 784, 12288, 10, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			spec := pipelineSpec(b, 3, bc.d, bc.p, bc.classes, bc.project)
			m, err := New(spec)
			if err != nil {
				b.Fatal(err)
			}
			x := make([]float32, bc.d)
			scores := make([]float32, bc.classes)
			b.ReportAllocs()
			for b.Loop() {
				m.Predict(scores, x)
			}
		})
	}
}

func TestEmbedderMatchesDefinition(t *testing.T) {
	rnd := rand.New(rand.NewPCG(37, 38))
	for _, project := range []bool{false, true} {
		spec := pipelineSpec(t, 11, 12, 300, 3, project)
		e, err := NewEmbedder(spec)
		if err != nil {
			t.Fatal(err)
		}
		if e.Columns() != spec.Columns() {
			t.Fatalf("Columns = %d, want %d", e.Columns(), spec.Columns())
		}
		dst := make([]uint64, (e.Columns()+63)/64)
		for range 30 {
			x := make([]float32, 12)
			for i := range x {
				x[i] = float32(rnd.NormFloat64() * 3)
			}
			if err := e.Embed(dst, x); err != nil {
				t.Fatal(err)
			}
			for c, want := range refEmbedding(spec, x) {
				if got := int8(dst[c/64]>>(c%64)&1)*2 - 1; got != want {
					t.Fatalf("projection %v: column %d = %d, definition %d", project, c, got, want)
				}
			}
		}
	}
}

func TestAllColumnsPredictsTheSame(t *testing.T) {
	spec := pipelineSpec(t, 13, 8, 300, 3, true)
	// Drop some columns: zero them in every vector.
	w := make([]int8, len(spec.Kept))
	weights := make([][]int8, len(spec.Sign))
	for v := range spec.Sign {
		UnpackTernary(w, spec.Sign[v], spec.NonZero[v])
		full := make([]int8, spec.Columns())
		for i, j := range spec.Kept {
			if j%7 != 3 {
				full[j] = w[i]
			}
		}
		weights[v] = full
	}
	base := *spec
	dropped, err := NewSpec(&base, weights, spec.Alpha)
	if err != nil {
		t.Fatal(err)
	}
	all := dropped.AllColumns()
	if len(all.Kept) != all.Columns() || len(dropped.Kept) == all.Columns() {
		t.Fatalf("kept %d and %d of %d columns", len(dropped.Kept), len(all.Kept), all.Columns())
	}
	a, err := New(dropped)
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(all)
	if err != nil {
		t.Fatal(err)
	}
	rnd := rand.New(rand.NewPCG(39, 40))
	sa, sb := make([]float32, 3), make([]float32, 3)
	for range 100 {
		x := make([]float32, 8)
		for i := range x {
			x[i] = float32(rnd.NormFloat64() * 2)
		}
		ca, _ := a.Predict(sa, x)
		cb, _ := b.Predict(sb, x)
		if ca != cb || !slices.Equal(sa, sb) {
			t.Fatalf("predictions differ: %d %v and %d %v", ca, sa, cb, sb)
		}
	}
}
