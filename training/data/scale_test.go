package data

import (
	"math"
	"math/rand/v2"
	"os"
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

func BenchmarkFitRobustScaler(b *testing.B) {
	benchmarkScaler(b, func(d *Dataset) { FitRobustScaler(d) })
}

// BenchmarkFitRobustScalerStandard fits the robust and the min-max scaler
// on the largest shared training sets (TRIT_DATA).
func BenchmarkFitRobustScalerStandard(b *testing.B) {
	dir := os.Getenv("TRIT_DATA")
	if dir == "" {
		b.Skip("TRIT_DATA not set")
	}
	for _, name := range []string{"mnist", "covtype"} {
		train, _, err := LoadStandard(dir, name)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name+"/robust", func(b *testing.B) {
			for b.Loop() {
				FitRobustScaler(train)
			}
		})
		b.Run(name+"/min-max", func(b *testing.B) {
			for b.Loop() {
				FitScaler(train)
			}
		})
	}
}

// naiveRobust is FitRobustScaler's reference loop, column by column.
func naiveRobust(d *Dataset) (lo, hi []float32) {
	lo, hi = make([]float32, d.D), make([]float32, d.D)
	for j := range d.D {
		var v []float32
		for i := range d.N {
			if x := d.X[i*d.D+j]; !math.IsNaN(float64(x)) {
				v = append(v, x)
			}
		}
		if len(v) == 0 {
			continue
		}
		slices.Sort(v)
		k := (len(v) - 1) / 1000
		lo[j], hi[j] = v[k], v[len(v)-1-k]
		if lo[j] == hi[j] {
			lo[j], hi[j] = v[0], v[len(v)-1]
		}
	}
	return lo, hi
}

func TestFitRobustScaler(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	// Up to 1,000 rows it is min-max scaling.
	for _, n := range []int{0, 1, 999, 1000} {
		d := randomDataset(rng, n, 3)
		got, want := FitRobustScaler(d), FitScaler(d)
		if !slices.Equal(got.Lo, want.Lo) || !slices.Equal(got.Hi, want.Hi) {
			t.Fatalf("%d rows: robust %v %v, min-max %v %v", n, got.Lo, got.Hi, want.Lo, want.Hi)
		}
	}

	// Against the reference loop: ties, NaNs, sizes around the trim steps.
	for _, n := range []int{1001, 2002, 3500, 4001} {
		d := &Dataset{N: n, D: 3, X: make([]float32, n*3), Y: make([]int32, n), Classes: []string{"0"}}
		for i := range d.X {
			d.X[i] = float32(rng.IntN(7) - 3)
			if rng.IntN(50) == 0 {
				d.X[i] = float32(math.NaN())
			}
		}
		s := FitRobustScaler(d)
		lo, hi := naiveRobust(d)
		if !slices.Equal(s.Lo, lo) || !slices.Equal(s.Hi, hi) {
			t.Fatalf("%d rows: got %v %v, reference loop %v %v", n, s.Lo, s.Hi, lo, hi)
		}
	}

	// 10,000 readings of N(4300, 50) per channel, with glitches like
	// eeg-eye-state's: 3 rows of huge spikes in channel 0, 5 of tiny ones
	// in channel 1; channel 2 is a rare binary input (1 in 4 of 10,000
	// rows); channel 3 is constant; channel 4 has NaNs.
	const n = 10000
	d := &Dataset{N: n, D: 5, X: make([]float32, n*5), Y: make([]int32, n), Classes: []string{"0"}}
	for i := range n {
		row := d.Row(i)
		row[0] = float32(4300 + 50*rng.NormFloat64())
		row[1] = float32(4300 + 50*rng.NormFloat64())
		row[3] = 7
		row[4] = float32(rng.Float64())
		if i%7 == 0 {
			row[4] = float32(math.NaN())
		}
	}
	for _, i := range []int{10, 5000, 9999} {
		d.X[i*5] = 715897
	}
	for _, i := range []int{1, 2, 3, 4, 5} {
		d.X[i*5+1] = 86.67
	}
	for _, i := range []int{100, 2000, 3000, 4000} {
		d.X[i*5+2] = 1
	}
	s := FitRobustScaler(d)
	lo, hi := naiveRobust(d)
	if !slices.Equal(s.Lo, lo) || !slices.Equal(s.Hi, hi) {
		t.Fatalf("got %v %v, reference loop %v %v", s.Lo, s.Hi, lo, hi)
	}
	mm := FitScaler(d)
	t.Logf("robust lo %v hi %v; min-max lo %v hi %v", s.Lo, s.Hi, mm.Lo, mm.Hi)
	for j := range 2 {
		// The spikes do not set the range: it is about ±3.3 SD (the
		// 0.1% / 99.9% quantiles of a normal distribution).
		if s.Lo[j] < 4300-4*50 || s.Lo[j] > 4300-2.5*50 || s.Hi[j] < 4300+2.5*50 || s.Hi[j] > 4300+4*50 {
			t.Errorf("channel %d: robust range [%g, %g]", j, s.Lo[j], s.Hi[j])
		}
	}
	if mm.Hi[0] != 715897 || mm.Lo[1] != 86.67 {
		t.Errorf("min-max range should show the glitches: %v %v", mm.Lo, mm.Hi)
	}
	if s.Lo[2] != 0 || s.Hi[2] != 1 {
		t.Errorf("rare binary input: range [%g, %g], want the min-max fallback [0, 1]", s.Lo[2], s.Hi[2])
	}
	if s.Lo[3] != 7 || s.Hi[3] != 7 {
		t.Errorf("constant feature: [%g, %g]", s.Lo[3], s.Hi[3])
	}
	if !(s.Lo[4] >= 0 && s.Lo[4] < 0.01 && s.Hi[4] > 0.99 && s.Hi[4] <= 1) {
		t.Errorf("NaN-holding feature: [%g, %g]", s.Lo[4], s.Hi[4])
	}
	// An ordinary reading keeps most of [-1, 1] with robust scaling, and
	// is squashed by min-max scaling.
	dst := make([]float32, 5)
	x := []float32{4350, 4350, 0, 7, 0.5}
	if err := s.Apply(dst, x); err != nil || dst[0] < 0.2 || dst[0] > 0.5 {
		t.Errorf("robust: 4350 scales to %v (%v)", dst[0], err)
	}
	if err := mm.Apply(dst, x); err != nil || dst[0] > -0.98 {
		t.Errorf("min-max: 4350 scales to %v (%v)", dst[0], err)
	}
}
