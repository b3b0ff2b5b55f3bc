package linear

import (
	"fmt"
	"math"
	"testing"

	"github.com/trit-iot/trit/training/internal/splitmix"
)

// benchData returns n×p features — random ±1 (sign) or standard Gaussian —
// with labels from a random teacher hyperplane, 10% of them flipped. It
// uses the package PRNG so it is cheap for 14M values.
func benchData(n, p int, gaussian bool) ([]float32, []int8) {
	r := splitmix.New(42)
	unit := func() float64 { return r.Float64() }
	normal := func() float64 { // Box–Muller
		return math.Sqrt(-2*math.Log(1-unit())) * math.Cos(2*math.Pi*unit())
	}
	teacher := make([]float64, p)
	for j := range teacher {
		teacher[j] = normal()
	}
	x := make([]float32, n*p)
	y := make([]int8, n)
	for i := range n {
		row := x[i*p : (i+1)*p]
		for j := range row {
			if gaussian {
				row[j] = float32(normal())
			} else if r.Next()&1 == 0 {
				row[j] = 1
			} else {
				row[j] = -1
			}
		}
		y[i] = 1
		if dot(teacher, row) < 0 {
			y[i] = -1
		}
		if r.Below(10) == 0 {
			y[i] = -y[i]
		}
	}
	return x, y
}

// BenchmarkTrain trains on the USPS-sized initialisation problem (n = 7000,
// p = 2048) with a bias and C = 0.01. (With ‖x‖² = 2048 and 10% flipped
// labels, the default C = 1 is a nearly hard margin: both losses then stop
// at MaxIter = 1000, about 12 s on a 2-core EPYC; iter reports the passes.)
func BenchmarkTrain(b *testing.B) {
	const n, p = 7000, 2048
	for _, data := range []struct {
		name     string
		gaussian bool
	}{{"sign", false}, {"gauss", true}} {
		x, y := benchData(n, p, data.gaussian)
		for _, loss := range []Loss{Hinge, SquaredHinge} {
			b.Run(fmt.Sprintf("%s/%v/n=%d/p=%d", data.name, loss, n, p), func(b *testing.B) {
				opt := &Options{C: 0.01, Loss: loss, Bias: 1}
				var m *Model
				for b.Loop() {
					var err error
					if m, err = Train(x, n, p, y, opt); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(m.Iter), "iter")
				b.ReportMetric(accuracy(m, x, n, p, y), "train-acc")
			})
		}
	}
}

// The kernels against their naive reference loops, at the usual p.
func naiveDot(w []float64, x []float32) float64 {
	var s float64
	for j := range w {
		s += w[j] * float64(x[j])
	}
	return s
}

func naiveAxpy(a float64, x []float32, w []float64) {
	for j := range w {
		w[j] += a * float64(x[j])
	}
}

var sink float64

func BenchmarkDot(b *testing.B) {
	x, _ := benchData(1, 2048, true)
	w := make([]float64, len(x))
	for j := range w {
		w[j] = float64(j)
	}
	b.Run("unrolled", func(b *testing.B) {
		for b.Loop() {
			sink += dot(w, x)
		}
	})
	b.Run("naive", func(b *testing.B) {
		for b.Loop() {
			sink += naiveDot(w, x)
		}
	})
}

func BenchmarkAxpy(b *testing.B) {
	x, _ := benchData(1, 2048, true)
	w := make([]float64, len(x))
	b.Run("unrolled", func(b *testing.B) {
		for b.Loop() {
			axpy(1e-9, x, w)
		}
	})
	b.Run("naive", func(b *testing.B) {
		for b.Loop() {
			naiveAxpy(1e-9, x, w)
		}
	})
}
