package benchmark

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trit-iot/trit/inference"
	"github.com/trit-iot/trit/inference/bundle"
	"github.com/trit-iot/trit/training"
)

// kindShapes are the model kinds the default search can choose, each on
// the shapes of shared datasets it is eligible for (training/selection.go:
// threshold bits and mixtures up to 64 features, projections from 64,
// trees up to 320), at the default budget.
var kindShapes = []struct {
	name      string // kind/dataset
	embedding string // training.Config.Embedding
	d, k      int    // the dataset's features and classes
	depth     int    // trees: 6 or 2 (the search's two tree shapes)
}{
	{name: "kernel/occupancy", embedding: "kernel", d: 16, k: 4},
	{name: "kernel/covtype", embedding: "kernel", d: 54, k: 7},
	{name: "kernel/usps", embedding: "kernel", d: 256, k: 10},
	{name: "mix/wall-following", embedding: "mix", d: 24, k: 4},
	{name: "mix/electricity", embedding: "mix", d: 8, k: 2},
	{name: "thresholds/wall-following", embedding: "thresholds", d: 24, k: 4},
	{name: "thresholds/electricity", embedding: "thresholds", d: 8, k: 2},
	{name: "projection/usps", embedding: "projection", d: 256, k: 10},
	{name: "projection/mnist", embedding: "projection", d: 784, k: 10},
	{name: "trees6/usps", embedding: "trees", d: 256, k: 10, depth: 6},
	{name: "trees6/wall-following", embedding: "trees", d: 24, k: 4, depth: 6},
	{name: "trees2/usps", embedding: "trees", d: 256, k: 10, depth: 2},
	{name: "trees2/wall-following", embedding: "trees", d: 24, k: 4, depth: 2},
}

// kindModels caches BenchmarkPredictKindsVsMLP's models by name.
var kindModels = map[string]struct {
	m   *inference.Model
	raw []byte
	err error
}{}

// BenchmarkPredictKindsVsMLP puts a default-budget model of every kind the
// search can choose beside the int8 MLP of the same bundle bytes on the
// same shape: one prediction from raw features, scaling included, no
// allocation on either side. The models are trained here on generated
// data of each dataset's shape (Gaussian clusters, 1,500 rows, σ and C
// fixed so that only the structure is searched); the kind fixes the
// structure and the budget its size, which is what prediction time
// depends on. The search picks one tree depth per dataset, so the tree
// kinds are built instead (treesModel): as many trees of the search's
// depths (6 and 2, two leaf planes) as the budget holds, every leaf column
// kept — the most a default tree model computes. With TRIT_BENCH_KINDS_DIR
// set, the models are written there as bundles the first time and read
// back afterwards (training them takes minutes).
//
//	go test -run '^$' -bench PredictKindsVsMLP -benchmem -count 5 ./benchmark
func BenchmarkPredictKindsVsMLP(b *testing.B) {
	for _, ks := range kindShapes {
		b.Run(ks.name, func(b *testing.B) {
			ds := blobs(1500, ks.d, ks.k, uint64(ks.d*100+ks.k))
			km, ok := kindModels[ks.name]
			cache := ""
			if dir := os.Getenv("TRIT_BENCH_KINDS_DIR"); dir != "" {
				cache = filepath.Join(dir, strings.ReplaceAll(ks.name, "/", "-")+".trit")
			}
			if raw, err := os.ReadFile(cache); !ok && cache != "" && err == nil {
				var bd *bundle.Bundle
				if bd, km.err = bundle.Decode(raw, &bundle.DecodeOptions{AllowUnsigned: true, MaxSize: len(raw)}); km.err == nil {
					km.m, km.err = inference.New(bd.Spec)
					km.raw, ok = raw, true
					kindModels[ks.name] = km
				}
			}
			if !ok { // trained once per process, whatever -count says
				if ks.depth != 0 {
					km.m, km.raw, km.err = treesModel(ds.D, ds.Classes, ks.depth, training.DefaultBudget-512)
				} else {
					cfg := &training.Config{Budget: training.DefaultBudget, Embedding: ks.embedding, Sigma: 2 * float64(ks.d), C: 1, Seed: 1}
					var res *training.Result
					if res, km.err = training.Train(ds, cfg); km.err == nil {
						km.m = res.Model
						km.raw, km.err = res.Bundle(ds, training.BundleMeta{ModelID: "kinds", Release: 1})
					}
				}
				kindModels[ks.name] = km
				if cache != "" && km.err == nil {
					if err := os.WriteFile(cache, km.raw, 0o644); err != nil {
						b.Fatal(err)
					}
				}
			}
			m, raw := km.m, km.raw
			if km.err != nil {
				b.Fatal(km.err)
			}
			spec := m.Spec()
			h := MLPWidth(ks.d, ks.k, len(raw), 1024)
			mlp := randomMLP(spec.Scaler, ks.d, h, ks.k, rand.New(rand.NewPCG(2, 2)))
			x := ds.Row(7)
			b.Run("trit", func(b *testing.B) {
				scores := make([]float32, ks.k)
				b.ReportAllocs()
				for b.Loop() {
					if _, err := m.Predict(scores, x); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(spec.Transform.P), "p")
				b.ReportMetric(float64(spec.Trees.Count()), "trees")
				b.ReportMetric(float64(len(spec.Kept)), "kept")
				b.ReportMetric(float64(len(raw)), "model-bytes")
			})
			b.Run("mlp-int8", func(b *testing.B) {
				xs, hid := make([]float32, ks.d), make([]float32, h)
				b.ReportAllocs()
				for b.Loop() {
					if _, err := mlp.predict(xs, hid, x); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(h), "hidden")
				b.ReportMetric(float64(MLPBytes(ks.d, ks.k, h)), "model-bytes")
			})
			ratioBenchmarks(b, m, ks.k, mlp, ks.d, h, x)
		})
	}
}

// ratioBenchmarks adds the sub-benchmarks ratio and ratio-unrolled. On a
// shared machine the trit and mlp-int8 sub-benchmarks run seconds apart
// under different loads; these alternate short batches of each and report
// the median of the batches' time ratios (trit/mlp < 1: trit is faster).
// ratio-unrolled does the same against the MLP with four accumulators per
// dot product (predictUnrolled).
func ratioBenchmarks(b *testing.B, m *inference.Model, k int, mlp *mlpInt8, d, h int, x []float32) {
	for _, r := range []struct {
		name    string
		predict func(xs, hid, x []float32) (int, error)
	}{{"ratio", mlp.predict}, {"ratio-unrolled", mlp.predictUnrolled}} {
		b.Run(r.name, func(b *testing.B) {
			scores := make([]float32, k)
			xs, hid := make([]float32, d), make([]float32, h)
			const batch = 64
			var ratios []float64
			for b.Loop() {
				t0 := time.Now()
				for range batch {
					m.Predict(scores, x)
				}
				t1 := time.Now()
				for range batch {
					r.predict(xs, hid, x)
				}
				ratios = append(ratios, float64(t1.Sub(t0))/float64(time.Since(t1)))
			}
			slices.Sort(ratios)
			b.ReportMetric(ratios[len(ratios)/2], "trit/mlp")
		})
	}
}

// treesModel is a model of oblivious trees of the given depth with two
// leaf planes on d features (scaled to the blobs' range), random tests and
// random ternary leaf weights, with as many trees as fit in budget bundle
// bytes; it returns the model and its bundle.
func treesModel(d int, classes []string, depth, budget int) (*inference.Model, []byte, error) {
	rng := rand.New(rand.NewPCG(uint64(d), uint64(depth)))
	lo, hi := make([]float32, d), make([]float32, d)
	for i := range lo {
		lo[i], hi[i] = -5, 5
	}
	build := func(n int) (*inference.ModelSpec, []byte, error) {
		t := &inference.Trees{Depth: depth, Planes: 2, Feature: make([]uint16, n*depth), Value: make([]float32, n*depth)}
		for i := range t.Feature {
			t.Feature[i], t.Value[i] = uint16(rng.IntN(d)), rng.Float32()*1.6-0.8
		}
		base := &inference.ModelSpec{Classes: classes, Scaler: inference.Scaler{Lo: lo, Hi: hi, Clip: true}, Trees: bundle.CompactTrees(t)}
		weights := make([][]int8, inference.Vectors(len(classes)))
		for c := range weights {
			weights[c] = make([]int8, base.Columns())
			for j := range weights[c] {
				weights[c][j] = int8(rng.IntN(3) - 1)
			}
		}
		alpha := make([]float32, len(weights))
		for c := range alpha {
			alpha[c] = 1
		}
		spec, err := inference.NewSpec(base, weights, alpha)
		if err != nil {
			return nil, nil, err
		}
		raw, err := bundle.Encode(&bundle.Bundle{Spec: spec, Header: bundle.Header{ModelID: "trees", Release: 1, CreatedAt: time.Unix(1e9, 0)},
			Compat: bundle.Compat{MinAgentVersion: bundle.MinAgentVersionFor(spec)}})
		return spec, raw, err
	}
	first, last := 1, inference.MaxTrees // the largest count that fits is in [first, last]
	for first < last {
		mid := (first + last + 1) / 2
		_, r, err := build(mid)
		if err != nil {
			return nil, nil, err
		}
		if len(r) <= budget {
			first = mid
		} else {
			last = mid - 1
		}
	}
	spec, raw, err := build(first)
	if err != nil {
		return nil, nil, err
	}
	m, err := inference.New(spec)
	return m, raw, err
}
