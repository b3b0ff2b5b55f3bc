package benchmark

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/trit-iot/trit/inference"
	"github.com/trit-iot/trit/inference/bundle"
	"github.com/trit-iot/trit/training"
	"github.com/trit-iot/trit/training/data"
)

// mlpInt8 is the peers' one-hidden-layer MLP as a gateway would run it:
// trit's scaler, int8 weights with a float32 scale and bias per output
// channel, ReLU, argmax (scripts/peers/peers.py's quantised forward pass).
type mlpInt8 struct {
	d, h, k int
	lo, mul []float32 // the scaler, prepared: x ↦ clip((x−lo)·mul − 1)
	w1      []int8    // h rows of d
	s1, b1  []float32
	w2      []int8 // k rows of h
	s2, b2  []float32
}

// randomMLP returns an MLP of width h with random weights (speed does not
// depend on their values).
func randomMLP(sc inference.Scaler, d, h, k int, rng *rand.Rand) *mlpInt8 {
	m := &mlpInt8{d: d, h: h, k: k, lo: sc.Lo, mul: scaleMul(sc),
		w1: make([]int8, h*d), s1: make([]float32, h), b1: make([]float32, h),
		w2: make([]int8, k*h), s2: make([]float32, k), b2: make([]float32, k)}
	for i := range m.w1 {
		m.w1[i] = int8(rng.IntN(255) - 127)
	}
	for i := range m.w2 {
		m.w2[i] = int8(rng.IntN(255) - 127)
	}
	for i := range m.s1 {
		m.s1[i], m.b1[i] = 1/127.0, rng.Float32()-0.5
	}
	for i := range m.s2 {
		m.s2[i], m.b2[i] = 1/127.0, rng.Float32()-0.5
	}
	return m
}

// scaleMul is 2/(hi−lo) per feature (0 for a constant one), as the
// inference scaler computes it.
func scaleMul(sc inference.Scaler) []float32 {
	k := make([]float32, len(sc.Lo))
	for i, lo := range sc.Lo {
		if hi := sc.Hi[i]; hi > lo {
			k[i] = float32(2 / (float64(hi) - float64(lo)))
		}
	}
	return k
}

// predict classifies x; xs (d) and hid (h) are the caller's workspace, so
// a prediction allocates nothing.
func (m *mlpInt8) predict(xs, hid, x []float32) (int, error) {
	if len(x) != m.d {
		return 0, fmt.Errorf("%d features, want %d", len(x), m.d)
	}
	for i, v := range x {
		xs[i] = min(1, max(-1, float32((v-m.lo[i])*m.mul[i])-1))
	}
	for j := range m.h {
		w := m.w1[j*m.d : (j+1)*m.d]
		var s float32
		for i, v := range xs {
			s += v * float32(w[i])
		}
		hid[j] = max(0, s*m.s1[j]+m.b1[j])
	}
	best, bestScore := 0, float32(math.Inf(-1))
	for c := range m.k {
		w := m.w2[c*m.h : (c+1)*m.h]
		var s float32
		for j, v := range hid {
			s += v * float32(w[j])
		}
		if s = s*m.s2[c] + m.b2[c]; s > bestScore {
			best, bestScore = c, s
		}
	}
	if m.k == 1 { // one score for two classes
		if bestScore > 0 {
			return 1, nil
		}
		return 0, nil
	}
	return best, nil
}

// predictUnrolled is predict with each dot product summed in four
// independent float32 accumulators (lanes i mod 4, added pairwise at the
// end): the same arithmetic in another order, so its scores differ from
// predict's in the last bits. The single accumulator makes predict wait
// on each addition; this is the faster loop a careful Go programmer would
// write, the bar's upper reference (docs/BENCHMARKS.md).
func (m *mlpInt8) predictUnrolled(xs, hid, x []float32) (int, error) {
	if len(x) != m.d {
		return 0, fmt.Errorf("%d features, want %d", len(x), m.d)
	}
	for i, v := range x {
		xs[i] = min(1, max(-1, float32((v-m.lo[i])*m.mul[i])-1))
	}
	for j := range m.h {
		hid[j] = max(0, dot4(m.w1[j*m.d:(j+1)*m.d], xs)*m.s1[j]+m.b1[j])
	}
	best, bestScore := 0, float32(math.Inf(-1))
	for c := range m.k {
		if s := dot4(m.w2[c*m.h:(c+1)*m.h], hid)*m.s2[c] + m.b2[c]; s > bestScore {
			best, bestScore = c, s
		}
	}
	if m.k == 1 {
		if bestScore > 0 {
			return 1, nil
		}
		return 0, nil
	}
	return best, nil
}

// dot4 is Σ v[i]·w[i] in four accumulators.
func dot4(w []int8, v []float32) float32 {
	w = w[:len(v)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(v); i += 4 {
		ww, vv := w[i:i+4:i+4], v[i:i+4:i+4]
		s0 += vv[0] * float32(ww[0])
		s1 += vv[1] * float32(ww[1])
		s2 += vv[2] * float32(ww[2])
		s3 += vv[3] * float32(ww[3])
	}
	for ; i < len(v); i++ {
		s0 += v[i] * float32(w[i])
	}
	return (s0 + s1) + (s2 + s3)
}

// blobs is usps-shaped generated data: d features, k classes, Gaussian
// clusters around random means.
func blobs(n, d, k int, seed uint64) *data.Dataset {
	rng := rand.New(rand.NewPCG(seed, 1))
	means := make([]float32, k*d)
	for i := range means {
		means[i] = float32(rng.NormFloat64())
	}
	ds := &data.Dataset{Name: "blobs", N: n, D: d, X: make([]float32, n*d), Y: make([]int32, n)}
	for c := range k {
		ds.Classes = append(ds.Classes, string(rune('a'+c)))
	}
	for i := range n {
		c := i % k
		ds.Y[i] = int32(c)
		for j := range d {
			ds.X[i*d+j] = means[c*d+j] + 1.5*float32(rng.NormFloat64())
		}
	}
	return ds
}

// BenchmarkPredictVsMLP: one prediction of a trit model trained at the
// default 30 KiB budget on usps-shaped data (256 features, 10 classes)
// against one of the int8 MLP that fills the same budget (MLPWidth), both
// from raw features (scaling included) with no allocation.
//
//	go test -run '^$' -bench PredictVsMLP -benchmem ./benchmark
func BenchmarkPredictVsMLP(b *testing.B) {
	const d, k = 256, 10
	ds := blobs(2000, d, k, 1)
	res, err := training.Train(ds, &training.Config{Budget: training.DefaultBudget, Sigma: 8, C: 1, Weights: "ternary", Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	raw, err := res.Bundle(ds, training.BundleMeta{ModelID: "blobs", Release: 1})
	if err != nil {
		b.Fatal(err)
	}
	h := MLPWidth(d, k, training.DefaultBudget, 1024)
	mlp := randomMLP(res.Spec.Scaler, d, h, k, rand.New(rand.NewPCG(2, 2)))
	x := ds.Row(7)
	b.Run("trit", func(b *testing.B) {
		scores := make([]float32, k)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := res.Model.Predict(scores, x); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(res.Structure.P), "p")
		b.ReportMetric(float64(len(raw)), "model-bytes")
	})
	b.Run("mlp-int8", func(b *testing.B) {
		xs, hid := make([]float32, d), make([]float32, h)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := mlp.predict(xs, hid, x); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(h), "hidden")
		b.ReportMetric(float64(MLPBytes(d, k, h)), "model-bytes")
	})
}

// The Go forward pass is the one the benchmark times: on a two-unit
// network it computes what the formula says.
func TestMLPInt8Predict(t *testing.T) {
	m := &mlpInt8{d: 2, h: 2, k: 2, lo: []float32{-1, -1}, mul: scaleMul(inference.Scaler{Lo: []float32{-1, -1}, Hi: []float32{1, 1}}),
		w1: []int8{127, 0, 0, 127}, s1: []float32{1.0 / 127, 1.0 / 127}, b1: []float32{0, 0},
		w2: []int8{127, -127, -127, 127}, s2: []float32{1, 1}, b2: []float32{0, 0}}
	xs, hid := make([]float32, 2), make([]float32, 2)
	for _, c := range []struct {
		x    []float32
		want int
	}{{[]float32{0.9, 0.1}, 0}, {[]float32{0.1, 0.9}, 1}, {[]float32{-0.5, 0.2}, 1}} {
		got, err := m.predict(xs, hid, c.x)
		if err != nil || got != c.want {
			t.Errorf("%v: class %d (%v), want %d", c.x, got, err, c.want)
		}
	}
	x := []float32{0.3, 0.4}
	if allocs := testing.AllocsPerRun(100, func() { m.predict(xs, hid, x) }); allocs != 0 {
		t.Errorf("%g allocations per prediction", allocs)
	}
}

// The unrolled forward pass predicts the same classes as the plain one on
// a random network (only the order of its additions differs).
func TestMLPInt8PredictUnrolled(t *testing.T) {
	const d, h, k = 37, 50, 5
	lo, hi := make([]float32, d), make([]float32, d)
	for i := range lo {
		lo[i], hi[i] = -3, 3
	}
	rng := rand.New(rand.NewPCG(4, 4))
	m := randomMLP(inference.Scaler{Lo: lo, Hi: hi, Clip: true}, d, h, k, rng)
	xs, hid, x := make([]float32, d), make([]float32, h), make([]float32, d)
	same := 0
	for range 200 {
		for i := range x {
			x[i] = float32(rng.NormFloat64() * 2)
		}
		a, _ := m.predict(xs, hid, x)
		b, _ := m.predictUnrolled(xs, hid, x)
		if a == b {
			same++
		}
	}
	if same < 198 {
		t.Errorf("the unrolled pass agrees on %d of 200 inputs", same)
	}
	if allocs := testing.AllocsPerRun(100, func() { m.predictUnrolled(xs, hid, x) }); allocs != 0 {
		t.Errorf("%g allocations per prediction", allocs)
	}
}

// BenchmarkPredictBundleVsMLP times a real bundle — the one `tritctl train`
// wrote at the default budget, e.g. for usps — against the int8 MLP that
// fills the same budget for its shape. TRIT_BENCH_BUNDLE names the bundle
// file (signed or not); without it the benchmark is skipped.
//
//	tritctl train --standard usps -o usps.trit
//	TRIT_BENCH_BUNDLE=$PWD/usps.trit go test -run '^$' -bench PredictBundleVsMLP -benchmem ./benchmark
func BenchmarkPredictBundleVsMLP(b *testing.B) {
	path := os.Getenv("TRIT_BENCH_BUNDLE")
	if path == "" {
		b.Skip("TRIT_BENCH_BUNDLE is not set")
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	bd, err := bundle.Decode(raw, &bundle.DecodeOptions{AllowUnsigned: true, MaxSize: len(raw)})
	if err != nil {
		b.Fatalf("%s: %v", path, err)
	}
	m, err := inference.New(bd.Spec)
	if err != nil {
		b.Fatal(err)
	}
	d, k := bd.Spec.NumFeatures(), len(m.Classes())
	rng := rand.New(rand.NewPCG(3, 3))
	x := make([]float32, d)
	for i := range x {
		lo, hi := bd.Spec.Scaler.Lo[i], bd.Spec.Scaler.Hi[i]
		x[i] = lo + (hi-lo)*float32(rng.Float64())
	}
	h := MLPWidth(d, k, len(raw), 1024)
	mlp := randomMLP(bd.Spec.Scaler, d, h, k, rng)
	b.Run("trit", func(b *testing.B) {
		scores := make([]float32, k)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := m.Predict(scores, x); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(m.Spec().Transform.P), "p")
		b.ReportMetric(float64(m.Spec().Trees.Count()), "trees")
		b.ReportMetric(float64(len(m.Spec().Kept)), "kept")
		b.ReportMetric(float64(len(raw)), "model-bytes")
	})
	b.Run("mlp-int8", func(b *testing.B) {
		xs, hid := make([]float32, d), make([]float32, h)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := mlp.predict(xs, hid, x); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(h), "hidden")
		b.ReportMetric(float64(MLPBytes(d, k, h)), "model-bytes")
	})
	ratioBenchmarks(b, m, k, mlp, d, h, x)
}
