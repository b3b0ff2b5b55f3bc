package inference

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// randomTrees returns n random oblivious trees of the given depth on d
// features, thresholds in about the clipped scaled range.
func randomTrees(rnd *rand.Rand, d, n, depth int) *Trees {
	t := &Trees{Depth: depth}
	for range n * depth {
		t.Feature = append(t.Feature, uint16(rnd.IntN(d)))
		t.Value = append(t.Value, float32(rnd.Float64()*2.2-1.1))
	}
	return t
}

// treeShape describes a test model with trees (see treeSpec).
type treeShape struct {
	d, p, classes    int
	thresholds       bool // random thresholds too
	trees, depth     int
	project          bool
	rho              int32
	planes           int     // Trees.Planes
	zeroFrac         float64 // fraction of zero weights
	deadTrees        int     // trees whose every leaf weight is zero (not kept)
	clip, nanInputs  bool
	name             string
	wantDroppedLeafs bool // the case must drop some leaf columns
}

// treeSpec builds a random model of the given shape.
func treeSpec(t testing.TB, seed uint64, s treeShape) *ModelSpec {
	t.Helper()
	rnd := rand.New(rand.NewPCG(seed, 3))
	base := &ModelSpec{
		Scaler:          Scaler{Lo: make([]float32, s.d), Hi: make([]float32, s.d), Clip: s.clip},
		Trees:           randomTrees(rnd, s.d, s.trees, s.depth),
		ThresholdWeight: s.rho,
	}
	base.Trees.Planes = s.planes
	for i := range s.d {
		base.Scaler.Lo[i] = float32(-rnd.Float64() * 3)
		base.Scaler.Hi[i] = base.Scaler.Lo[i] + float32(rnd.Float64()*5)
	}
	if s.thresholds {
		base.Thresholds = randomThresholds(rnd, s.d, 4)
	}
	in := s.d
	if s.project {
		base.Projection = randomProjection(rnd, s.d, 5)
		in = 5
	}
	if s.p > 0 {
		base.Transform = TransformSpec{GeneratorV1, seed, 1.1, in, s.p}
	}
	for c := range s.classes {
		base.Classes = append(base.Classes, string(rune('A'+c)))
	}
	nv := Vectors(s.classes)
	weights, alpha := make([][]int8, nv), make([]float32, nv)
	nt := base.NumThresholds()
	for c := range weights {
		weights[c] = randomTernary(rnd, base.Columns(), s.zeroFrac)
		for k := range s.deadTrees {
			tr := (k * 7) % s.trees
			for b := range base.Trees.NumPlanes() {
				clear(weights[c][nt+b*base.Trees.Leaves()+tr<<s.depth:][:1<<s.depth])
			}
		}
		alpha[c] = float32(0.01 + rnd.Float64())
	}
	spec, err := NewSpec(base, weights, alpha)
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// refRawScores computes each vector's integer score from the full
// reference embedding: Σ w_j z_j, columns below NT + NL counted ρ times,
// and tree plane b's columns ρ·2^b times.
func refRawScores(spec *ModelSpec, z []int8) []int {
	nv := Vectors(len(spec.Classes))
	w := make([]int8, len(spec.Kept))
	out := make([]int, nv)
	rho := 1
	if spec.ThresholdWeight > 1 {
		rho = int(spec.ThresholdWeight)
	}
	for c := range nv {
		UnpackTernary(w, spec.Sign[c], spec.NonZero[c])
		for i, j := range spec.Kept {
			r := 1
			if int(j) < spec.AxisColumns() {
				r = rho
			}
			if nt := spec.NumThresholds(); int(j) >= nt && int(j) < spec.AxisColumns() {
				r <<= (int(j) - nt) / spec.Trees.Leaves()
			}
			out[c] += r * int(w[i]) * int(z[j])
		}
	}
	return out
}

var treeShapes = []treeShape{
	{name: "thresholds+trees+transform", d: 9, p: 200, classes: 3, thresholds: true, trees: 20, depth: 3, rho: 3, zeroFrac: 0.4, deadTrees: 2, clip: true},
	{name: "trees alone", d: 6, classes: 2, trees: 15, depth: 4, zeroFrac: 0.6, deadTrees: 3, nanInputs: true, wantDroppedLeafs: true},
	{name: "trees alone, ρ", d: 4, classes: 5, trees: 3, depth: 1, rho: 7, zeroFrac: 0.2},
	{name: "depth 8, sparse", d: 30, classes: 2, trees: 4, depth: 8, zeroFrac: 0.97, wantDroppedLeafs: true},
	{name: "trees+projection+transform", d: 12, p: 100, classes: 4, trees: 10, depth: 2, project: true, zeroFrac: 0.3, clip: true, nanInputs: true},
	{name: "thresholds+trees, one word boundary", d: 3, classes: 2, thresholds: true, trees: 8, depth: 3, rho: 2, zeroFrac: 0.5, wantDroppedLeafs: true},
	{name: "trees alone, 2 planes", d: 6, classes: 4, trees: 30, depth: 6, planes: 2, zeroFrac: 0.3, deadTrees: 2, nanInputs: true, wantDroppedLeafs: true},
	{name: "thresholds+trees+transform, 4 planes, ρ", d: 9, p: 130, classes: 2, thresholds: true, trees: 7, depth: 3, planes: 4, rho: 5, zeroFrac: 0.5, deadTrees: 1, clip: true},
	{name: "trees, 3 planes, sparse", d: 5, classes: 3, trees: 5, depth: 2, planes: 3, zeroFrac: 0.9, wantDroppedLeafs: true},
}

// TestTreesEmbedMatchesDefinition: the kept bits Predict computes, the
// integer scores and the class equal those of the doc comment's formula
// computed naively over the full embedding, for thresholds, trees and
// transform together, trees alone, and leaf columns dropped (whole trees
// and single leaves).
func TestTreesEmbedMatchesDefinition(t *testing.T) {
	rnd := rand.New(rand.NewPCG(51, 52))
	for k, s := range treeShapes {
		spec := treeSpec(t, uint64(100+k), s)
		if got, want := spec.Columns(), spec.NumThresholds()+s.trees<<s.depth*max(s.planes, 1)+s.p; got != want {
			t.Fatalf("%s: Columns = %d, want %d", s.name, got, want)
		}
		treeKept := 0
		for _, j := range spec.Kept {
			if int(j) >= spec.NumThresholds() && int(j) < spec.AxisColumns() {
				treeKept++
			}
		}
		if treeKept == 0 || (s.wantDroppedLeafs || s.deadTrees > 0) && treeKept == spec.NumTreeColumns() {
			t.Fatalf("%s: %d of %d tree columns kept", s.name, treeKept, spec.NumTreeColumns())
		}
		m, err := New(spec)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		kept := make([]uint64, (len(spec.Kept)+63)/64)
		raw := make([]int32, Vectors(s.classes))
		for range 200 {
			x := make([]float32, s.d)
			for i := range x {
				x[i] = float32(rnd.NormFloat64() * 3)
				if s.nanInputs && rnd.IntN(8) == 0 {
					x[i] = float32(math.NaN())
				}
			}
			z := refEmbedding(spec, x)
			if len(z) != spec.Columns() {
				t.Fatalf("%s: reference has %d columns, spec %d", s.name, len(z), spec.Columns())
			}
			if err := m.EmbedKept(kept, x); err != nil {
				t.Fatal(err)
			}
			for i, j := range spec.Kept {
				if got := int8(kept[i/64]>>(i%64)&1)*2 - 1; got != z[j] {
					t.Fatalf("%s: kept bit %d (column %d) = %d, definition %d", s.name, i, j, got, z[j])
				}
			}
			if tail := len(spec.Kept) % 64; tail != 0 && kept[len(kept)-1]>>tail != 0 {
				t.Fatalf("%s: bits set past the kept columns", s.name)
			}
			class, err := m.PredictRaw(raw, x)
			if err != nil {
				t.Fatal(err)
			}
			want := refRawScores(spec, z)
			for c := range want {
				if int(raw[c]) != want[c] {
					t.Fatalf("%s: vector %d raw score %d, definition %d", s.name, c, raw[c], want[c])
				}
			}
			if pc, _ := m.Predict(nil, x); pc != class {
				t.Fatalf("%s: Predict %d, PredictRaw %d", s.name, pc, class)
			}
		}
	}
}

// TestTreesEmbedder: the Embedder writes every column, trees included,
// as the definition says.
func TestTreesEmbedder(t *testing.T) {
	rnd := rand.New(rand.NewPCG(53, 54))
	for k, s := range treeShapes {
		spec := treeSpec(t, uint64(200+k), s)
		e, err := NewEmbedder(spec)
		if err != nil {
			t.Fatal(err)
		}
		if e.Columns() != spec.Columns() {
			t.Fatalf("%s: Columns = %d, want %d", s.name, e.Columns(), spec.Columns())
		}
		dst := make([]uint64, (e.Columns()+63)/64)
		for range 30 {
			x := make([]float32, s.d)
			for i := range x {
				x[i] = float32(rnd.NormFloat64() * 3)
			}
			if err := e.Embed(dst, x); err != nil {
				t.Fatal(err)
			}
			for c, want := range refEmbedding(spec, x) {
				if got := int8(dst[c/64]>>(c%64)&1)*2 - 1; got != want {
					t.Fatalf("%s: column %d = %d, definition %d", s.name, c, got, want)
				}
			}
		}
	}
}

func TestTreesLeaf(t *testing.T) {
	tr := &Trees{Depth: 3, Feature: []uint16{0, 1, 0, 2, 2, 2}, Value: []float32{0, 0.5, -0.5, -1, 0, 1}}
	for _, c := range []struct {
		x      []float32
		t, out int
	}{
		{[]float32{0.1, 0.6, 0}, 0, 0b111},
		{[]float32{-0.1, 0.6, 0}, 0, 0b110},
		{[]float32{0, 0.5, 0}, 0, 0b100}, // equal compares false
		{[]float32{0, 0, 0.5}, 1, 0b011},
		{[]float32{0, 0, 2}, 1, 0b111},
		{[]float32{0, 0, float32(math.NaN())}, 1, 0},
	} {
		if got := tr.Leaf(c.t, c.x); got != c.out {
			t.Errorf("Leaf(%d, %v) = %03b, want %03b", c.t, c.x, got, c.out)
		}
	}
	if tr.Count() != 2 || tr.Leaves() != 16 {
		t.Errorf("Count %d, Leaves %d", tr.Count(), tr.Leaves())
	}
	var none *Trees
	if none.Count() != 0 || none.Leaves() != 0 {
		t.Error("nil trees have columns")
	}
}

func TestTreesPredictAllocatesNothing(t *testing.T) {
	for k, s := range treeShapes {
		spec := treeSpec(t, uint64(300+k), s)
		m, err := New(spec)
		if err != nil {
			t.Fatal(err)
		}
		x := make([]float32, s.d)
		for i := range x {
			x[i] = float32(i%3) - 1
		}
		scores := make([]float32, s.classes)
		m.Predict(scores, x)
		if n := testing.AllocsPerRun(100, func() { m.Predict(scores, x) }); n != 0 {
			t.Fatalf("%s: Predict allocates %v times per call", s.name, n)
		}
	}
}

func TestTreesValidation(t *testing.T) {
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	cases := []struct {
		name   string
		mutate func(s *ModelSpec)
		want   error
	}{
		{"depth 0", func(s *ModelSpec) { s.Trees.Depth = 0 }, ErrTrees},
		{"depth 9", func(s *ModelSpec) {
			s.Trees = &Trees{Depth: 9, Feature: make([]uint16, 9), Value: make([]float32, 9)}
		}, ErrTrees},
		{"feature out of range", func(s *ModelSpec) { s.Trees.Feature[4] = uint16(s.NumFeatures()) }, ErrTrees},
		{"NaN threshold", func(s *ModelSpec) { s.Trees.Value[1] = nan }, ErrTrees},
		{"+Inf threshold", func(s *ModelSpec) { s.Trees.Value[2] = inf }, ErrTrees},
		{"-Inf threshold", func(s *ModelSpec) { s.Trees.Value[0] = -inf }, ErrTrees},
		{"length mismatch", func(s *ModelSpec) { s.Trees.Value = s.Trees.Value[:len(s.Trees.Value)-1] }, ErrTrees},
		{"partial tree", func(s *ModelSpec) {
			s.Trees.Feature, s.Trees.Value = s.Trees.Feature[:len(s.Trees.Feature)-1], s.Trees.Value[:len(s.Trees.Value)-1]
		}, ErrTrees},
		{"empty trees", func(s *ModelSpec) { s.Trees = &Trees{Depth: 2} }, ErrTrees},
		{"too many trees", func(s *ModelSpec) {
			s.Trees = &Trees{Depth: 1, Feature: make([]uint16, MaxTrees+1), Value: make([]float32, MaxTrees+1)}
		}, ErrTrees},
		{"kept past the columns", func(s *ModelSpec) { s.Kept[len(s.Kept)-1] = int32(s.Columns()) }, ErrModel},
		{"no features once the trees go", func(s *ModelSpec) { s.Trees = nil }, ErrModel},
	}
	for _, c := range cases {
		spec := treeSpec(t, 61, treeShape{d: 5, classes: 3, trees: 4, depth: 3, rho: 4, zeroFrac: 0.1})
		c.mutate(spec)
		err := spec.Validate()
		if !errors.Is(err, c.want) {
			t.Errorf("%s: Validate = %v, want %v", c.name, err, c.want)
		}
		if _, err := New(spec); err == nil {
			t.Errorf("%s: New accepted an invalid spec", c.name)
		}
	}
	// Trees alone, weighted: valid (the weight is over the tree columns).
	spec := treeSpec(t, 62, treeShape{d: 5, classes: 2, trees: 2, depth: 2, rho: MaxThresholdWeight, zeroFrac: 0.1})
	if err := spec.Validate(); err != nil {
		t.Fatalf("trees alone with ρ = %d: %v", spec.ThresholdWeight, err)
	}
	if err := (&Trees{Depth: MaxTreeDepth, Feature: make([]uint16, 8), Value: make([]float32, 8)}).Validate(1); err != nil {
		t.Fatalf("depth %d: %v", MaxTreeDepth, err)
	}
	err := (&Trees{Depth: 2, Feature: []uint16{0, 3}, Value: []float32{0, 0}}).Validate(3)
	if err == nil || !strings.Contains(err.Error(), "feature 3 of 3") {
		t.Fatalf("feature 3 of 3 features: %v", err)
	}
}

// TestTreesAllColumns: keeping every column (trees included) predicts the
// same.
func TestTreesAllColumns(t *testing.T) {
	spec := treeSpec(t, 71, treeShapes[0])
	all := spec.AllColumns()
	m1, err := New(spec)
	if err != nil {
		t.Fatal(err)
	}
	m2, err := New(all)
	if err != nil {
		t.Fatal(err)
	}
	rnd := rand.New(rand.NewPCG(72, 73))
	r1, r2 := make([]int32, 3), make([]int32, 3)
	for range 100 {
		x := make([]float32, treeShapes[0].d)
		for i := range x {
			x[i] = float32(rnd.NormFloat64() * 3)
		}
		m1.PredictRaw(r1, x)
		m2.PredictRaw(r2, x)
		if r1[0] != r2[0] || r1[1] != r2[1] || r1[2] != r2[2] {
			t.Fatalf("raw scores %v, all columns %v", r1, r2)
		}
	}
}

// BenchmarkPredictTrees: a gradient-boosted-sized model, 300 depth-6 trees
// on 24 features, 4 classes, every leaf kept, no random features.
func BenchmarkPredictTrees(b *testing.B) {
	spec := treeSpec(b, 81, treeShape{d: 24, classes: 4, trees: 300, depth: 6, zeroFrac: 0.2})
	m, err := New(spec)
	if err != nil {
		b.Fatal(err)
	}
	rnd := rand.New(rand.NewPCG(82, 83))
	x := make([]float32, 24)
	for i := range x {
		x[i] = float32(rnd.NormFloat64() * 2)
	}
	scores := make([]float32, 4)
	b.ReportAllocs()
	for b.Loop() {
		m.Predict(scores, x)
	}
}

// embedReference is treeColumns.embed as the reference loop says it:
// one OR into dst per kept leaf bit.
func (tc *treeColumns) embedReference(dst []uint64, xs []float32) {
	d := tc.depth
	if d == 0 {
		return
	}
	n := len(tc.feature) / d
	for t := range n {
		feature, value := tc.feature[t*d:][:d], tc.value[t*d:][:d]
		leaf := 0
		for l, f := range feature {
			b := 0
			if xs[f] > value[l] {
				b = 1
			}
			leaf |= b << (l & (MaxTreeDepth - 1)) // l < MaxTreeDepth: the mask drops the shift's range check
		}
		for b := range tc.planes {
			if p := tc.pos[(t*tc.planes+b)<<d|leaf]; p >= 0 {
				dst[p>>6] |= 1 << (p & 63)
			}
		}
	}
}

// The tree bits against the reference, with the fast path (the leaves of
// groups of eight trees at once) and without.
func TestTreeEmbedMatchesReference(t *testing.T) {
	t.Parallel()
	testTreeEmbed(t, cpu)
	testTreeEmbed(t, goKernels)
}

// testTreeEmbed checks the tree bits with the kernels k against the
// reference.
func testTreeEmbed(t *testing.T, k kernels) {
	rnd := rand.New(rand.NewPCG(41, 42))
	for _, depth := range []int{1, 2, 6, 8} {
		for planes := 1; planes <= MaxTreePlanes; planes++ {
			const d, n = 5, 150
			tr := &Trees{Depth: depth, Planes: planes, Feature: make([]uint16, n*depth), Value: make([]float32, n*depth)}
			for i := range tr.Feature {
				tr.Feature[i], tr.Value[i] = uint16(rnd.IntN(d)), float32(rnd.NormFloat64())
			}
			var kept []int32
			for c := range tr.Columns() {
				if rnd.IntN(3) > 0 {
					kept = append(kept, int32(7+c))
				}
			}
			tc := newTreeColumns(&k, tr, 7, 3, kept)
			xs := make([]float32, d)
			words := (3 + len(kept) + 63) / 64
			got, want := make([]uint64, words), make([]uint64, words)
			leaves := make([]int32, tc.trees())
			for trial := range 20 {
				for i := range xs {
					xs[i] = float32(rnd.NormFloat64())
					if trial%3 == 0 { // a tie with some test: not greater
						xs[i] = tr.Value[rnd.IntN(len(tr.Value))]
					}
				}
				clear(got)
				clear(want)
				tc.embed(&k, got, xs, leaves)
				tc.embedReference(want, xs)
				for w := range got {
					if got[w] != want[w] {
						t.Fatalf("depth %d, %d planes: word %d = %#x, reference %#x", depth, planes, w, got[w], want[w])
					}
				}
			}
		}
	}
}
