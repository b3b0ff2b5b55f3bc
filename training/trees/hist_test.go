package trees

import (
	"fmt"
	"math"
	"slices"
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
	for _, k2 := range []int{2, 4, 6, 8, 12, 14, 20, 22, 26} {
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

// histAVX2x4 adds to each of its four histograms exactly what histAVX2
// adds to it alone: the same bits in every cell, for every width it has,
// with runs of rows in one cell (the dependent additions it interleaves)
// and both halves of a delta level.
func TestHistAVX2x4(t *testing.T) {
	if !useAVX2 {
		t.Skip("no AVX2 on this CPU")
	}
	r := splitmix.New(10)
	const n, nb, stride = 3000, 40, 8
	for _, k2 := range []int{2, 4, 6, 8, 12, 20} {
		for _, slot := range []int{0, 4} {
			gh := make([]float64, n*k2)
			for i := range gh {
				gh[i] = (2*r.Float64() - 1) * math.Pow(10, float64(r.Intn(12)-6))
			}
			leaf := make([]uint8, n)
			var cols [4][]uint8
			for j := range cols {
				cols[j] = make([]uint8, n)
			}
			var rows []int32
			for i := range n {
				leaf[i] = uint8(r.Intn(4))
				cols[0][i] = uint8(r.Intn(nb))
				cols[1][i] = uint8(i / 97 % nb) // runs of one bin
				cols[2][i] = cols[0][i]         // the same cells as feature 0
				cols[3][i] = uint8(nb - 1 - i%3)
				if r.Float64() < 0.7 {
					rows = append(rows, int32(i))
				}
			}
			var want, got [4][]float64
			for j := range want {
				want[j], got[j] = make([]float64, nb*stride*k2), make([]float64, nb*stride*k2)
				for i := range want[j] {
					want[j][i] = r.Float64()
					got[j][i] = want[j][i]
				}
				histAVX2(want[j], gh, rows, cols[j], leaf, slot, stride, k2)
			}
			histAVX2x4(&got, gh, rows, &cols, leaf, slot, stride, k2)
			for j := range want {
				for i := range want[j] {
					if math.Float64bits(got[j][i]) != math.Float64bits(want[j][i]) {
						t.Fatalf("k2 %d, slot %d: feature %d's cell %d is %v, histAVX2's %v", k2, slot, j, i, got[j][i], want[j][i])
					}
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
	// Four features at a time (histAVX2x4) and the rest one at a time: 30
	// and 9 features leave 2 and 1; 5 classes have no four-feature kernel.
	for _, c := range []struct{ d, classes, depth int }{{30, 6, 2}, {12, 2, 6}, {9, 5, 3}, {9, 2, 2}, {7, 3, 6}} {
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

// splitScores sums exactly what splitScoresGo sums, lane by lane: the same
// bits for every lane, with left Hessian sums past the totals (rounding:
// hr clamped at 0), signed zeros and gradients of every magnitude.
func TestSplitScores(t *testing.T) {
	if !useAVX2 {
		t.Skip("no AVX2 on this CPU: splitScoresGo is the only loop")
	}
	r := splitmix.New(11)
	for _, width := range []int{2, 4, 12, 24, 384} {
		for range 50 {
			tot := make([]float64, width)
			batch := make([]float64, lanes*width)
			for j := 0; j < width; j += 2 {
				tot[j] = (2*r.Float64() - 1) * math.Pow(10, float64(r.Intn(8)-4))
				tot[j+1] = r.Float64() * math.Pow(10, float64(r.Intn(8)-4))
				for l := range lanes {
					g, h := tot[j]*r.Float64(), tot[j+1]*r.Float64()
					switch r.Intn(6) {
					case 0:
						g, h = 0, math.Copysign(0, -1)
					case 1:
						h = tot[j+1] * (1 + 1e-12) // right side's sum rounds below 0
					case 2:
						g, h = tot[j], tot[j+1]
					}
					batch[j*lanes+l], batch[(j+1)*lanes+l] = g, h
				}
			}
			lambda := []float64{1, 1e-3, 0.5}[r.Intn(3)]
			var want, got [lanes]float64
			splitScoresGo(&want, batch, tot, lanes, lambda)
			splitScores(&got, batch, tot, lanes, lambda)
			for l := range lanes {
				if math.Float64bits(got[l]) != math.Float64bits(want[l]) {
					t.Fatalf("width %d, lane %d: %v, the Go loop's %v", width, l, got[l], want[l])
				}
			}
		}
	}
}

// bestSplit, scoring cuts lanes at a time, finds the cut and score of the
// plain loop over the cuts, one at a time (kept here as the reference),
// with the AVX2 scores and with the Go loop's.
func TestBestSplitBatched(t *testing.T) {
	r := splitmix.New(5)
	const n, d = 700, 6
	for _, k := range []int{1, 3} {
		for _, leaves := range []int{1, 2, 8} {
			for _, goLoops := range []bool{false, true} {
				b := &booster[uint8]{o: &Options{Depth: 4, Lambda: 1, MinLeaf: 20, goLoops: goLoops}, n: n, d: d, k: k, workers: 1}
				b.cuts = make([][]float32, d)
				b.counts = make([][]int32, d)
				for f := range d {
					b.cuts[f] = make([]float32, 1+r.Intn(60))
					b.counts[f] = make([]int32, len(b.cuts[f])+1)
					b.maxBins = max(b.maxBins, len(b.cuts[f])+1)
				}
				b.bins, b.leaf = make([]uint8, n*d), make([]uint8, n)
				b.gh = make([]float64, n*2*k)
				for i := range n {
					b.rows = append(b.rows, int32(i))
					b.leaf[i] = uint8(r.Intn(leaves))
					for c := range k {
						b.gh[i*2*k+2*c] = 2*r.Float64() - 1
						b.gh[i*2*k+2*c+1] = r.Float64() / 4
					}
				}
				for f := range d {
					for i := range n {
						bn := r.Intn(len(b.cuts[f]) + 1)
						if bn%7 == 3 {
							bn-- // some bins empty
						}
						b.bins[f*n+i] = uint8(bn)
						b.counts[f][bn]++
					}
				}
				// Rows with no gradient in feature 0's bins 1, 6, 11, …
				// make those cuts score what the cut before them scores:
				// ties, which the first cut wins.
				for i := range n {
					if b.bins[i]%5 == 1 {
						clear(b.gh[i*2*k : (i+1)*2*k])
					}
				}
				b.hist, b.scratch, b.batch = make([][]float64, 1), make([][]float64, 1), make([][]float64, 1)
				for f := range d {
					got := b.bestSplit(0, f, leaves, side{rows: b.rows})
					want := bestSplitOneByOne(b, f, leaves)
					if got.cut != want.cut || math.Float64bits(got.score) != math.Float64bits(want.score) {
						t.Fatalf("k %d, %d leaves, Go loops %v, feature %d: cut %d score %v, one by one cut %d score %v",
							k, leaves, goLoops, f, got.cut, got.score, want.cut, want.score)
					}
				}
			}
		}
	}
}

// bestSplitOneByOne is bestSplit as it was before cuts were scored lanes
// at a time: each cut's sum over leaves and scores on its own, in order.
func bestSplitOneByOne(b *booster[uint8], f, leaves int) split {
	nb := len(b.cuts[f]) + 1
	k2 := 2 * b.k
	h := make([]float64, nb*leaves*k2)
	stride := b.histogram(f, leaves, side{rows: b.rows}, h, make([]float64, leaves*k2))
	width := leaves * k2
	tot, cum := make([]float64, width), make([]float64, width)
	for bn := range nb {
		for j, v := range h[bn*stride*k2 : bn*stride*k2+width] {
			tot[j] += v
		}
	}
	lambda, minLeaf := b.o.Lambda, int32(b.o.MinLeaf)
	cnt, total, left := b.counts[f], int32(len(b.rows)), int32(0)
	best := split{score: math.Inf(-1), cut: -1}
	for bn := range nb - 1 {
		left += cnt[bn]
		if cnt[bn] == 0 {
			continue
		}
		for j, v := range h[bn*stride*k2 : bn*stride*k2+width] {
			cum[j] += v
		}
		if left < minLeaf || total-left < minLeaf {
			continue
		}
		s := 0.0
		for j := 0; j < width; j += 2 {
			gl, hl := cum[j], max(cum[j+1], 0)+lambda
			gr, hr := tot[j]-gl, max(tot[j+1]-cum[j+1], 0)+lambda
			s += (gl*gl*hr + gr*gr*hl) / (hl * hr)
		}
		if s > best.score {
			best = split{score: s, cut: bn}
		}
	}
	return best
}

// cumLanes and subTotal compute exactly what their Go loops compute: the
// same bits in every cell, for every even width, with cells of any sign
// and magnitude.
func TestCumLanes(t *testing.T) {
	if !useAVX2 {
		t.Skip("no AVX2 on this CPU")
	}
	r := splitmix.New(11)
	val := func() float64 { return (2*r.Float64() - 1) * math.Pow(10, float64(r.Intn(12)-6)) }
	for _, width := range []int{2, 4, 6, 12, 14, 24, 96, 384} {
		h := make([]float64, 7*width+5)
		for i := range h {
			h[i] = val()
		}
		off := [lanes]int{r.Intn(width), width + 3, 3*width + 1, 6 * width}
		cum := make([]float64, width)
		for i := range cum {
			cum[i] = val()
		}
		wantCum, wantBatch := append([]float64(nil), cum...), make([]float64, lanes*width)
		for l := range lanes {
			for j := range width {
				wantCum[j] += h[off[l]+j]
				wantBatch[j*lanes+l] = wantCum[j]
			}
		}
		batch := make([]float64, lanes*width)
		cumLanes(batch, cum, h, &off, width)
		for j := range width {
			if math.Float64bits(cum[j]) != math.Float64bits(wantCum[j]) {
				t.Fatalf("width %d: cum[%d] = %v, want %v", width, j, cum[j], wantCum[j])
			}
		}
		for i := range batch {
			if math.Float64bits(batch[i]) != math.Float64bits(wantBatch[i]) {
				t.Fatalf("width %d: batch[%d] = %v, want %v", width, i, batch[i], wantBatch[i])
			}
		}
	}
}

func TestSubTotal(t *testing.T) {
	if !useAVX2 {
		t.Skip("no AVX2 on this CPU")
	}
	r := splitmix.New(12)
	for _, half := range []int{2, 4, 6, 12, 18, 48, 192} {
		for _, right := range []bool{false, true} {
			const bins = 9
			pitch := 2*half + 2*r.Intn(3)
			want := make([]float64, bins*pitch)
			for i := range want {
				want[i] = (2*r.Float64() - 1) * math.Pow(10, float64(r.Intn(12)-6))
			}
			got := append([]float64(nil), want...)
			wantTot, gotTot := make([]float64, 2*half), make([]float64, 2*half)
			for i := range wantTot {
				wantTot[i] = r.Float64()
				gotTot[i] = wantTot[i]
			}
			subTotalGo(want, wantTot, bins, pitch, half, right)
			subTotal(got, gotTot, bins, pitch, half, right)
			for i := range want {
				if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
					t.Fatalf("half %d, right %v: cell %d is %v, the Go loop's %v", half, right, i, got[i], want[i])
				}
			}
			for i := range wantTot {
				if math.Float64bits(gotTot[i]) != math.Float64bits(wantTot[i]) {
					t.Fatalf("half %d, right %v: tot[%d] is %v, the Go loop's %v", half, right, i, gotTot[i], wantTot[i])
				}
			}
		}
	}
}

// clearCells zeroes exactly the cells a level's histogram clears, and
// nothing else: every width, offset and pitch the histograms use.
func TestClearCells(t *testing.T) {
	if !useAVX2 {
		t.Skip("no AVX2 on this CPU")
	}
	r := splitmix.New(5)
	for _, k2 := range []int{2, 4, 6, 8, 12, 20, 26} {
		for _, stride := range []int{1, 2, 8, 32} {
			for _, lo := range []int{0, stride / 2} {
				for _, hi := range []int{stride / 2, stride} {
					if hi <= lo {
						continue
					}
					const nb = 37
					want := make([]float64, nb*stride*k2+5)
					for i := range want {
						want[i] = r.Float64() + 1
					}
					got := slices.Clone(want)
					for bn := range nb {
						clear(want[(bn*stride+lo)*k2 : (bn*stride+hi)*k2])
					}
					clearCells(got, nb, stride*k2, lo*k2, (hi-lo)*k2)
					if !slices.Equal(got, want) {
						t.Fatalf("k2 %d, stride %d, slots [%d, %d): clearCells differs from clear per bin", k2, stride, lo, hi)
					}
				}
			}
		}
	}
}

// BenchmarkHist: the histogram's row loop, one feature a pass (histAVX2)
// against four (histAVX2x4), on 18,000 rows of 32 features, 128 bins, for
// two classes (k2 = 2) and six (k2 = 12): bins drawn at random, or in runs
// of 150 rows (slowly varying inputs: dependent additions to one cell),
// two leaf slots a bin (depth-2 trees) or 32 (depth 6). ns/rowfeat is the
// time per row and feature.
func BenchmarkHist(b *testing.B) {
	if !useAVX2 {
		b.Skip("no AVX2 on this CPU")
	}
	const n, nb, nf = 18000, 128, 32
	for _, k2 := range []int{2, 12} {
		for _, stride := range []int{2, 32} {
			for _, runs := range []bool{false, true} {
				r := splitmix.New(1)
				gh := make([]float64, n*k2)
				for i := range gh {
					gh[i] = r.Float64()
				}
				rows, leaf := make([]int32, n), make([]uint8, n)
				for i := range rows {
					rows[i], leaf[i] = int32(i), uint8(r.Intn(stride))
				}
				cols, hs := make([][]uint8, nf), make([][]float64, nf)
				for f := range cols {
					cols[f], hs[f] = make([]uint8, n), make([]float64, nb*stride*k2)
					for i := range cols[f] {
						if runs {
							cols[f][i] = uint8((i/150 + f) % nb)
						} else {
							cols[f][i] = uint8(r.Intn(nb))
						}
					}
				}
				for _, four := range []bool{false, true} {
					name := fmt.Sprintf("k2=%d/slots=%d/runs=%v/four=%v", k2, stride, runs, four)
					b.Run(name, func(b *testing.B) {
						for b.Loop() {
							for f := 0; f < nf; f += 4 {
								if four {
									histAVX2x4((*[4][]float64)(hs[f:f+4]), gh, rows, (*[4][]uint8)(cols[f:f+4]), leaf, 0, stride, k2)
									continue
								}
								for j := f; j < f+4; j++ {
									histAVX2(hs[j], gh, rows, cols[j], leaf, 0, stride, k2)
								}
							}
						}
						b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/(n*nf), "ns/rowfeat")
					})
				}
			}
		}
	}
}
