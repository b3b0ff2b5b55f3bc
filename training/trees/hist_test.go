package trees

import (
	"math"
	"testing"

	"github.com/trit-iot/trit/training/internal/splitmix"
)

// histAVX2 adds exactly what histogram's Go loop adds: the same bits in
// every cell, for every even k2 (one score for two classes, one per class
// otherwise) and both halves of a delta level.
func TestHistAVX2(t *testing.T) {
	if !useAVX2 {
		t.Skip("no AVX2 on this CPU: histogram's Go loop is the only one")
	}
	r := splitmix.New(9)
	const n, nb, stride = 3000, 40, 8
	for _, k2 := range []int{2, 4, 6, 8, 12, 14, 22} {
		for _, slot := range []int{0, 4} {
			gh := make([]float64, n*k2)
			for i := range gh {
				gh[i] = (2*r.Float64() - 1) * math.Pow(10, float64(r.Intn(12)-6))
			}
			col, leaf := make([]uint8, n), make([]uint8, n)
			var rows []int32
			for i := range n {
				col[i], leaf[i] = uint8(r.Intn(nb)), uint8(r.Intn(4))
				if r.Float64() < 0.7 {
					rows = append(rows, int32(i))
				}
			}
			want, got := make([]float64, nb*stride*k2), make([]float64, nb*stride*k2)
			for i := range want {
				want[i] = r.Float64()
				got[i] = want[i]
			}
			for _, i := range rows {
				o := (int(col[i])*stride + int(leaf[i]|uint8(slot))) * k2
				for j := range k2 {
					want[o+j] += gh[int(i)*k2+j]
				}
			}
			histAVX2(got, gh, rows, col, leaf, slot, stride, k2)
			for i := range want {
				if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
					t.Fatalf("k2 %d, slot %d: cell %d is %v, the Go loop's %v", k2, slot, i, got[i], want[i])
				}
			}
		}
	}
}

// The trees grown with histAVX2 are the Go loop's, bit for bit.
func TestHistAVX2Trees(t *testing.T) {
	if !useAVX2 {
		t.Skip("no AVX2 on this CPU")
	}
	for _, c := range []struct{ d, classes, depth int }{{30, 6, 2}, {12, 2, 6}, {9, 5, 3}} {
		const n = 2000
		xs, y := checkerboard(n, c.d, c.classes, 0.05, 40, func(x []float32) int { return xor4(x) % c.classes })
		cuts := grid(c.d, 128)
		opt := &Options{Trees: 15, Depth: c.depth, Subsample: 0.8, Seed: 2}
		fast, err := fit(xs, n, c.d, y, c.classes, cuts, opt)
		if err != nil {
			t.Fatal(err)
		}
		goOpt := *opt
		goOpt.goLoops = true
		slow, err := fit(xs, n, c.d, y, c.classes, cuts, &goOpt)
		if err != nil {
			t.Fatal(err)
		}
		for i := range slow.values {
			if math.Float64bits(fast.values[i]) != math.Float64bits(slow.values[i]) {
				t.Fatalf("%d features, %d classes, depth %d: leaf value %d is %v with AVX2, %v without", c.d, c.classes, c.depth, i, fast.values[i], slow.values[i])
			}
		}
		for i := range slow.train {
			if math.Float64bits(fast.train[i]) != math.Float64bits(slow.train[i]) {
				t.Fatalf("%d features, %d classes, depth %d: row %d's score is %v with AVX2, %v without", c.d, c.classes, c.depth, i, fast.train[i], slow.train[i])
			}
		}
	}
}
