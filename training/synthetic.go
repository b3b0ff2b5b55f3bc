package training

import (
	"math"

	"github.com/trit-iot/trit/training/data"
)

// TwoCircles returns the paper's synthetic "circle" dataset: n points in the
// plane, half on a circle of radius 1 (class "outer") and half on a circle of
// radius factor (class "inner"), each with Gaussian noise of standard
// deviation noise in both coordinates. No linear classifier separates them;
// a Gaussian-kernel one does. Deterministic for a seed.
func TwoCircles(n int, factor, noise float64, seed uint64) *data.Dataset {
	r := newSplitMix(seed)
	uniform := func() float64 { return float64(r.next()>>11) / (1 << 53) }
	gauss := func() float64 {
		// Box–Muller; this generator feeds tests and demos, not models, so
		// the platform's math functions are fine here.
		u1, u2 := uniform(), uniform()
		return math.Sqrt(-2*math.Log(1-u1)) * math.Cos(2*math.Pi*u2)
	}
	ds := &data.Dataset{
		Name:     "two-circles",
		N:        n,
		D:        2,
		X:        make([]float32, 0, 2*n),
		Y:        make([]int32, n),
		Classes:  []string{"inner", "outer"},
		Features: []string{"x", "y"},
	}
	for i := range n {
		radius, class := factor, int32(0)
		if i%2 == 1 {
			radius, class = 1, 1
		}
		angle := 2 * math.Pi * uniform()
		ds.X = append(ds.X,
			float32(radius*math.Cos(angle)+noise*gauss()),
			float32(radius*math.Sin(angle)+noise*gauss()))
		ds.Y[i] = class
	}
	return ds
}
