//go:build ignore

// Does a standard set's test period depart from its training period in
// its inputs? A model-free check for docs/BENCHMARKS.md "Confidence and
// unknown", per tenth of the test rows (in time order) against the
// validation period (the training rows' latest 30%, where the unknown
// thresholds are set):
//
//   - past range: the share of windows with a raw feature outside its
//     training range (the robust scaler a bundle carries, fitted on every
//     training row, float16-widened as in the bundle);
//   - nearest neighbour: the share of windows whose distance to the
//     nearest of ≤ 4,000 rows of the first 70% of the training rows (each
//     feature scaled by that part's 0.1–99.9% range) exceeds the 98th
//     percentile of the validation rows' distances — a reference a
//     gateway could not afford;
//   - feature bits: the share of windows whose surprisal under per-feature
//     threshold bits exceeds the 98th percentile of the validation rows'.
//     Every input gets 8 thresholds at its 1/9 … 8/9 quantiles over the
//     first 70% of the training rows, and each bit counts as a coin firing
//     at its rate there (the fingerprint's arithmetic, inference.Surprisal,
//     in float64), whatever the model looks at. The fingerprint a bundle
//     carries counts the model's own kept bits instead (tree leaves, random
//     features): this asks whether bits of every input would see more.
//
// Each measure is judged against the validation period: on a recording
// whose validation period lacks a state, windows of that state count as
// departures (occupancy's is an empty room, so occupied windows are
// flagged, in training as in the test period: docs/BENCHMARKS.md "Bits of
// every input against the model's own bits").
//
// Usage: go run scripts/departure/main.go [--data-dir DIR] NAME...
package main

import (
	"flag"
	"fmt"
	"log"
	"math"
	"slices"
	"sort"

	"github.com/trit-iot/trit/inference/bundle"
	"github.com/trit-iot/trit/training/data"
)

func main() {
	dir := flag.String("data-dir", "../shared/data", "the standard datasets")
	flag.Parse()
	for _, name := range flag.Args() {
		tr, te, err := data.LoadStandard(*dir, name)
		if err != nil {
			log.Fatal(err)
		}
		nv := tr.N * 3 / 10
		val := seq(tr.N-nv, tr.N)
		sc := bundle.CompactScaler(data.FitRobustScaler(tr))
		past := func(x []float32) bool {
			for i, v := range x {
				if v == v && (v < sc.Lo[i] || v > sc.Hi[i]) {
					return true
				}
			}
			return false
		}
		nn := newNeighbours(tr.Subset(seq(0, tr.N-nv)))
		var vd []float64
		for _, i := range val {
			vd = append(vd, nn.distance(tr.Row(i)))
		}
		slices.Sort(vd)
		th := vd[int(0.98*float64(len(vd)))]
		share := func(ds *data.Dataset, rows []int, f func([]float32) bool) float64 {
			k := 0
			for _, i := range rows {
				if f(ds.Row(i)) {
					k++
				}
			}
			return 100 * float64(k) / float64(len(rows))
		}
		far := func(x []float32) bool { return nn.distance(x) > th }
		fb := newFeatureBits(tr.Subset(seq(0, tr.N-nv)), 8)
		var vs []float64
		for _, i := range val {
			vs = append(vs, fb.surprisal(tr.Row(i)))
		}
		slices.Sort(vs)
		ths := vs[int(0.98*float64(len(vs)))]
		odd := func(x []float32) bool { return fb.surprisal(x) > ths }
		fmt.Printf("%s: validation period (%d rows) · test period by tenth (%d rows)\n", name, nv, te.N)
		for _, c := range []struct {
			what string
			f    func([]float32) bool
		}{{"past range", past}, {"nearest neighbour", far}, {"feature bits", odd}} {
			fmt.Printf("  %-18s %5.2f%% ·", c.what, share(tr, val, c.f))
			for k := range 10 {
				fmt.Printf(" %5.2f", share(te, seq(k*te.N/10, (k+1)*te.N/10), c.f))
			}
			fmt.Println()
		}
	}
}

// neighbours finds the nearest of a sample of reference rows, features
// scaled by the reference's 0.1–99.9% quantile range.
type neighbours struct {
	lo, w []float64
	rows  [][]float64
}

func newNeighbours(ref *data.Dataset) *neighbours {
	n := &neighbours{lo: make([]float64, ref.D), w: make([]float64, ref.D)}
	col := make([]float64, ref.N)
	for j := range ref.D {
		for i := range ref.N {
			col[i] = float64(ref.X[i*ref.D+j])
		}
		slices.Sort(col)
		n.lo[j] = col[int(0.001*float64(ref.N))]
		n.w[j] = col[int(0.999*float64(ref.N))] - n.lo[j]
	}
	for i := 0; i < ref.N; i += max(1, ref.N/4000) {
		n.rows = append(n.rows, n.scale(ref.Row(i)))
	}
	return n
}

func (n *neighbours) scale(x []float32) []float64 {
	s := make([]float64, len(x))
	for j, v := range x {
		if n.w[j] > 0 && v == v {
			s[j] = (float64(v) - n.lo[j]) / n.w[j]
		}
	}
	return s
}

func (n *neighbours) distance(x []float32) float64 {
	s := n.scale(x)
	best := math.Inf(1)
	for _, r := range n.rows {
		d := 0.0
		for j := range s {
			d += (s[j] - r[j]) * (s[j] - r[j])
		}
		best = min(best, d)
	}
	return math.Sqrt(best)
}

// featureBits holds per-feature thresholds and their bits' firing rates.
type featureBits struct {
	cut  [][]float32 // per feature, ascending
	rate [][]float64 // per feature and threshold: the share of rows above it, Laplace-smoothed
}

func newFeatureBits(ref *data.Dataset, per int) *featureBits {
	f := &featureBits{cut: make([][]float32, ref.D), rate: make([][]float64, ref.D)}
	col := make([]float32, 0, ref.N)
	for j := range ref.D {
		col = col[:0]
		for i := range ref.N {
			if v := ref.X[i*ref.D+j]; v == v {
				col = append(col, v)
			}
		}
		if len(col) == 0 {
			continue
		}
		slices.Sort(col)
		for k := 1; k <= per; k++ {
			t := col[min(len(col)-1, k*len(col)/(per+1))]
			above := len(col) - sort.Search(len(col), func(i int) bool { return col[i] > t })
			f.cut[j] = append(f.cut[j], t)
			f.rate[j] = append(f.rate[j], (float64(above)+1)/(float64(len(col))+2))
		}
	}
	return f
}

// surprisal is −Σ log2 of each bit's chance of firing as it did (a
// missing value sets no bit).
func (f *featureBits) surprisal(x []float32) float64 {
	s := 0.0
	for j, v := range x {
		for k, t := range f.cut[j] {
			if v == v && v > t {
				s -= math.Log2(f.rate[j][k])
			} else {
				s -= math.Log2(1 - f.rate[j][k])
			}
		}
	}
	return s
}

func seq(a, b int) []int {
	s := make([]int, b-a)
	for i := range s {
		s[i] = a + i
	}
	return s
}
