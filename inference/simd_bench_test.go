package inference

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkPredictFastPath times Predict of random-feature models shaped
// like the default kernel models (d inputs, p columns, all kept, k
// classes) with the fast path and with the pure-Go loops, in one run.
//
//	go test -run '^$' -bench PredictFastPath -benchmem -count 5 ./inference
func BenchmarkPredictFastPath(b *testing.B) {
	for _, c := range []struct{ d, p, k int }{{8, 2048, 2}, {16, 4096, 4}, {24, 2048, 4}, {54, 13824, 7}, {256, 22656, 10}, {48, 20288, 10}} {
		spec := testSpec(b, 5, c.d, c.p, c.k, 0)
		m, err := New(spec)
		if err != nil {
			b.Fatal(err)
		}
		goModel, err := newModel(spec, goKernels)
		if err != nil {
			b.Fatal(err)
		}
		x := make([]float32, c.d)
		for i := range x {
			x[i] = float32(i%5) - 2
		}
		scores := make([]float32, c.k)
		run := func(m *Model) func(*testing.B) {
			return func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					m.Predict(scores, x)
				}
			}
		}
		name := fmt.Sprintf("d=%d/p=%d/k=%d", c.d, c.p, c.k)
		b.Run(name+"/"+simdName, run(m))
		b.Run(name+"/go", run(goModel))
	}
}

// BenchmarkTernaryDotFastPath times one score (22,656 columns: usps'
// kernel model) with the fast path and the Go loop.
func BenchmarkTernaryDotFastPath(b *testing.B) {
	const words = 354
	z, s, nz := make([]uint64, words), make([]uint64, words), make([]uint64, words)
	for i := range z {
		z[i], s[i], nz[i] = uint64(i)*0x9e3779b97f4a7c15, uint64(i)*0xbf58476d1ce4e5b9, ^uint64(0)
	}
	b.Run(simdName, func(b *testing.B) {
		for b.Loop() {
			TernaryDot(z, s, nz)
		}
	})
	b.Run("go", func(b *testing.B) {
		for b.Loop() {
			ternaryDot(&goKernels, z, s, nz)
		}
	})
}

// BenchmarkIntervalBits times the interval test (bitsSIMD, whole words)
// of p columns in chunks of chunkColumns, as embedColumnsSIMD runs it, on
// ordinary phases (|p| < 1 turn, as the default models' are).
//
//	go test -run '^$' -bench IntervalBits -count 5 ./inference
func BenchmarkIntervalBits(b *testing.B) {
	if !cpu.embedSIMD() {
		b.Skip("no fast interval test on " + simdName)
	}
	for _, p := range []int{2048, 22656} {
		tr, err := NewTransform(TransformSpec{Generator: GeneratorV1, Seed: 7, Sigma: 1, D: 64, P: p})
		if err != nil {
			b.Fatal(err)
		}
		plan := tr.columnPlan(allColumns(p))
		rnd := rand.New(rand.NewPCG(1, 2))
		u := make([]float32, p)
		for i := range u {
			u[i] = float32(rnd.NormFloat64() * 2 / float64(plan.scale[i]))
		}
		out := make([]uint64, (p+63)/64)
		b.Run(fmt.Sprintf("p=%d", p), func(b *testing.B) {
			for b.Loop() {
				for c0 := 0; c0 < p; c0 += chunkColumns {
					c1 := min(p, c0+chunkColumns)
					tr.intervalBits(out[c0/64:], u[c0:c1], plan, c0, c1)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(p), "ns/column")
		})
	}
}
