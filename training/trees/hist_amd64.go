package trees

import "golang.org/x/sys/cpu"

// useAVX2 selects histAVX2 for histograms of byte bins and splitScores
// for the cuts' scores, once at start (nothing assigns it;
// Options.goLoops turns both off for a test).
var useAVX2 = cpu.X86.HasAVX2

// histAVX2 is the row loop of histogram for byte bins, in AVX2 (four
// float64 additions at a time): for each row i of rows, in order,
//
//	o := (int(col[i])*stride + int(leaf[i]|slot)) * k2
//	h[o+j] += gh[i*k2+j]   for j in [0, k2)
//
// The same IEEE additions of the same operands in the same order as the
// Go loop, so the same bits (TestHistAVX2 compares them). The row loop is
// unrolled for k2 = 2, 4, 6, 8, 12 and 20 (2, 3, 4, 6 and 10 classes):
// a loop over a row's vectors costs more than their additions. It does no
// bounds checks: the caller guarantees every row is below len(col) and
// len(leaf), every cell index in h and every gradient index in gh, and
// that k2 is even.
//
//go:noescape
func histAVX2(h, gh []float64, rows []int32, col, leaf []uint8, slot, stride, k2 int)

// splitScores is splitScoresGo in AVX2, the four lanes at once: each
// lane's sum takes the same IEEE operations on the same operands in the
// same order as the Go loop (max against +0 gives +0 for either zero, as
// Go's max does; the sums are finite, so no NaN reaches it), so the same
// bits (TestSplitScores). It scores all four lanes; the caller reads the
// first used. len(tot) must be even and len(batch) at least
// lanes·len(tot).
//
//go:noescape
func splitScores(s *[lanes]float64, batch, tot []float64, used int, lambda float64)

// cumLanes is the scan of four cuts at once (see bestSplit), in AVX2:
// lane l's cells are h[off[l] : off[l]+width], and for each j in [0,
// width), in order of the lanes,
//
//	s := cum[j]; for l := range lanes { s += h[off[l]+j]; batch[j·lanes+l] = s }; cum[j] = s
//
// The same IEEE additions in the same order as cumLanesGo, so the same
// bits (TestCumLanes). width must be even; the caller guarantees every
// index. No bounds checks.
//
//go:noescape
func cumLanes(batch, cum, h []float64, off *[lanes]int, width int)

// subTotal is subTotalGo in AVX2: the same operations on the same
// operands in the same order, so the same bits (TestSubTotal). half must
// be even; the caller guarantees every index. No bounds checks.
//
//go:noescape
func subTotal(h, tot []float64, bins, pitch, half int, right bool)

// clearCells zeroes width cells at h[bn·pitch+off:] for each of bins bins,
// in AVX2 stores: a level's slots of every bin (see histogram), without a
// call per bin. width must be even; the caller guarantees every index. No
// bounds checks.
//
//go:noescape
func clearCells(h []float64, bins, pitch, off, width int)

// histAVX2x4 is histAVX2 for four features at once, one pass over the
// rows: for each row i of rows, in order, and each feature j in 0..3,
//
//	o := (int(cols[j][i])*stride + int(leaf[i]|slot)) * k2
//	hs[j][o+c] += gh[i*k2+c]   for c in [0, k2)
//
// Each histogram gets the same IEEE additions in the same order as
// histAVX2 gives it alone, so the same bits (TestHistAVX2x4); the four
// features' additions interleave, so a run of rows in one cell (sorted or
// slowly varying inputs), a chain of dependent additions, overlaps the
// other features' chains, and each row's gradients are loaded once. Only
// for k2 = 2, 4, 6, 8, 12 and 20 (booster.blocked); no bounds checks: as
// histAVX2, for every histogram and column.
//
//go:noescape
func histAVX2x4(hs *[4][]float64, gh []float64, rows []int32, cols *[4][]uint8, leaf []uint8, slot, stride, k2 int)
