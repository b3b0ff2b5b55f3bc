package data

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// naiveScaler is the reference loop from FitScaler's doc comment, column by
// column, skipping NaN.
func naiveScaler(d *Dataset) (lo, hi []float32) {
	lo, hi = make([]float32, d.D), make([]float32, d.D)
	for j := range d.D {
		l, h := math.Inf(1), math.Inf(-1)
		for i := range d.N {
			v := float64(d.X[i*d.D+j])
			if math.IsNaN(v) {
				continue
			}
			l, h = math.Min(l, v), math.Max(h, v)
		}
		if l > h {
			l, h = 0, 0
		}
		lo[j], hi[j] = float32(l), float32(h)
	}
	return lo, hi
}

func randomDataset(rng *rand.Rand, n, d int) *Dataset {
	ds := &Dataset{N: n, D: d, X: make([]float32, n*d), Y: make([]int32, n), Classes: []string{"0"}}
	for i := range ds.X {
		ds.X[i] = float32(rng.NormFloat64() * 100)
	}
	return ds
}

func TestFitScaler(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, shape := range [][2]int{{1, 1}, {7, 5}, {100, 33}, {0, 4}} {
		d := randomDataset(rng, shape[0], shape[1])
		if d.N > 1 {
			for i := range d.N { // a constant column and some NaNs
				d.X[i*d.D] = 3
			}
			d.X[d.D-1] = float32(math.NaN())
		}
		s := FitScaler(d)
		lo, hi := naiveScaler(d)
		if !slices.Equal(s.Lo, lo) || !slices.Equal(s.Hi, hi) {
			t.Fatalf("%v: got %v %v, want %v %v", shape, s.Lo, s.Hi, lo, hi)
		}
		dst := make([]float32, d.D)
		for i := range d.N {
			if err := s.Apply(dst, d.Row(i)); err != nil {
				t.Fatal(err)
			}
			for j, v := range dst {
				// The scaler's float32 multiplier can put the maximum a
				// rounding step above 1.
				if v < -1 || v > 1+1e-6 {
					t.Fatalf("row %d feature %d scaled to %v", i, j, v)
				}
			}
		}
	}
	// All-NaN column.
	d := &Dataset{N: 2, D: 1, X: []float32{float32(math.NaN()), float32(math.NaN())}}
	if s := FitScaler(d); s.Lo[0] != 0 || s.Hi[0] != 0 {
		t.Fatalf("all-NaN column: %v %v", s.Lo, s.Hi)
	}
}

func benchmarkScaler(b *testing.B, fit func(*Dataset)) {
	d := randomDataset(rand.New(rand.NewPCG(1, 2)), 10000, 256)
	b.SetBytes(int64(4 * len(d.X)))
	for b.Loop() {
		fit(d)
	}
}

func BenchmarkFitScaler(b *testing.B) {
	benchmarkScaler(b, func(d *Dataset) { FitScaler(d) })
}

func BenchmarkFitScalerNaive(b *testing.B) {
	benchmarkScaler(b, func(d *Dataset) { naiveScaler(d) })
}
