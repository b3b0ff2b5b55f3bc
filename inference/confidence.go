package inference

import (
	"errors"
	"fmt"
	"math"
)

// Calibration turns a prediction's margin into a calibrated confidence and
// says when a window is unknown. It is a few dozen bytes of a bundle
// (format 5; docs/BUNDLE.md) chosen by training on validation rows
// (docs/TRAINING.md, "Confidence and unknown").
//
// The margin of a prediction is the best class score less the second
// best, the scores being the float32 α_c·w_cᵀz that Predict computes (two
// classes: scores (−s, s), margin 2|s|). Edges split the margins into
// len(Edges)+1 bins, bin b holding margins in [Edges[b−1], Edges[b]); bin
// b's confidence is Confidence[b]/255, the fraction of validation windows
// in that bin whose prediction was right, made non-decreasing (isotonic
// regression). Only comparisons of float32 values and integer arithmetic
// are involved, so every architecture computes the same bin, confidence
// and unknown decision.
//
// Novelty is the negative log-likelihood, in 1/16 bits, of the window's
// fingerprint bits under the training firing rates taken as independent
// coins (see Novelty), plus, with Outside, the window's out-of-range
// term (see scaling.outside): its raw features that lie past their
// training ranges, which the fingerprint's bits cannot see.
// A window is unknown when its confidence is below MinConfidence (0:
// never) or its novelty is above MaxNovelty (0: never).
type Calibration struct {
	Edges         []float32 // ascending margins, finite, >= 0; at most MaxCalibrationBins−1
	Confidence    []uint8   // per bin, strictly ascending: round(255·accuracy)
	MinConfidence uint8     // unknown when Confidence[bin] < MinConfidence; 0 = never
	MaxNovelty    uint32    // unknown when Novelty > MaxNovelty; 0 = never (needs a fingerprint or Outside)
	Outside       uint16    // W, the weight of a feature past its training range in the novelty; 0 = none; ≤ MaxOutsideWeight
	// Offsets, if not nil, holds one integer per weight vector added to
	// its raw score before the scale α (|offset| ≤ MaxOffset):
	//
	//	score_c = α_c·(raw_c + Offsets[c])
	//
	// so the decision moves toward the classes the held-out rows favoured
	// (a prior that shifted; the majority class when nothing else beats
	// it), and the margin, bin and confidence follow from the moved
	// scores. Integer arithmetic: the same decision on every gateway.
	Offsets []int32
}

// MaxOffset bounds Calibration.Offsets in magnitude: far beyond any raw
// score a budgeted model reaches, and far from overflowing one.
const MaxOffset = 1 << 24

// MaxCalibrationBins bounds a calibration's bins.
const MaxCalibrationBins = 16

// ErrCalibration reports a calibration that cannot be used.
var ErrCalibration = errors.New("inference: invalid calibration")

// Validate checks c for a model with (or without) a fingerprint.
func (c *Calibration) Validate(fingerprint bool) error {
	n := len(c.Confidence)
	switch {
	case n < 1 || n > MaxCalibrationBins:
		return fmt.Errorf("%w: %d bins, want 1..%d", ErrCalibration, n, MaxCalibrationBins)
	case len(c.Edges) != n-1:
		return fmt.Errorf("%w: %d edges for %d bins, want %d", ErrCalibration, len(c.Edges), n, n-1)
	case c.Outside > MaxOutsideWeight:
		return fmt.Errorf("%w: out-of-range weight %d, at most %d", ErrCalibration, c.Outside, MaxOutsideWeight)
	case c.MaxNovelty > 0 && !fingerprint && c.Outside == 0:
		return fmt.Errorf("%w: a novelty threshold without a fingerprint or the out-of-range term", ErrCalibration)
	}
	for i, o := range c.Offsets {
		if o > MaxOffset || o < -MaxOffset {
			return fmt.Errorf("%w: offset %d is %d, at most %d in magnitude", ErrCalibration, i, o, MaxOffset)
		}
	}
	for i, e := range c.Edges {
		if !(e >= 0) || math.IsInf(float64(e), 0) || math.Signbit(float64(e)) || (i > 0 && e <= c.Edges[i-1]) {
			return fmt.Errorf("%w: edge %d (%g) not finite, positive and ascending", ErrCalibration, i, e)
		}
	}
	for i := 1; i < n; i++ {
		if c.Confidence[i] <= c.Confidence[i-1] {
			return fmt.Errorf("%w: bin %d's confidence %d is not above bin %d's %d", ErrCalibration, i, c.Confidence[i], i-1, c.Confidence[i-1])
		}
	}
	return nil
}

// Bin returns the bin of a margin: the number of edges at or below it.
//
//	b := 0
//	for b < len(c.Edges) && margin >= c.Edges[b] {
//		b++
//	}
func (c *Calibration) Bin(margin float32) int {
	b := 0
	for b < len(c.Edges) && margin >= c.Edges[b] {
		b++
	}
	return b
}

// Outcome is a prediction with its confidence and whether it is unknown.
type Outcome struct {
	Class      int     // the predicted class (as Predict), also when Unknown
	Margin     float32 // best score less the second best, >= 0
	Confidence uint8   // calibrated confidence ×255; 0 without a calibration
	Bin        int     // the calibration bin; 0 without a calibration
	Novelty    uint32  // Novelty of the window; 0 without a fingerprint
	Unknown    bool    // confidence below, or novelty above, the thresholds
}

// Thresholds decide when an outcome is unknown; the bundle's
// (Calibration.MinConfidence, MaxNovelty) unless a gateway overrides
// them. A zero field means never on that test.
type Thresholds struct {
	MinConfidence uint8
	MaxNovelty    uint32
}

// Thresholds returns the calibration's own thresholds (zero without one).
func (m *Model) Thresholds() Thresholds {
	c := m.spec.Calibration
	if c == nil {
		return Thresholds{}
	}
	return Thresholds{MinConfidence: c.MinConfidence, MaxNovelty: c.MaxNovelty}
}

// Calibrated reports whether the model carries a calibration.
func (m *Model) Calibrated() bool { return m.spec.Calibration != nil }

// PredictOutcome is PredictEmbed with the prediction's margin, calibrated
// confidence, novelty and unknown decision under th. scores and z, when
// not nil, receive Predict's class scores and the kept embedding bits
// ((len(Kept)+63)/64 words). It allocates nothing in steady state.
func (m *Model) PredictOutcome(scores []float32, z []uint64, x []float32, th Thresholds) (Outcome, error) {
	if len(x) != m.emb.d {
		return Outcome{Class: -1}, ErrInputLen
	}
	w := m.pool.Get().(*workspace)
	defer m.pool.Put(w)
	m.emb.embed(w, x)
	if z != nil {
		copy(z[:m.words], w.z)
	}
	o := Outcome{Class: m.score(scores, w.raw, w.z, m.nnz)}
	o.Margin = m.margin(w.raw)
	if m.spec.Fingerprint != nil {
		o.Novelty = m.nov.novelty(&m.emb.k, w.z)
	}
	if c := m.spec.Calibration; c != nil {
		o.Bin = c.Bin(o.Margin)
		o.Confidence = c.Confidence[o.Bin]
		if c.Outside > 0 {
			o.Novelty += m.emb.sc.outside(&m.emb.k, x, uint32(c.Outside))
		}
	}
	o.Unknown = (th.MinConfidence > 0 && o.Confidence < th.MinConfidence) || (th.MaxNovelty > 0 && o.Novelty > th.MaxNovelty)
	return o, nil
}

// margin is the best score less the second best from the integer scores,
// each rounded to float32 as α_c·raw_c (as score computes them; the
// explicit conversions forbid fused multiply-adds):
//
//	s_c = float32(α_c · float32(raw_c)); margin = float32(s_best − s_second)
//
// With one vector the scores are (−s, s) and the margin is 2|s|.
func (m *Model) margin(raw []int32) float32 {
	if m.nv == 1 {
		s := float32(m.spec.Alpha[0] * float32(raw[0]))
		if s < 0 {
			s = -s
		}
		return float32(s + s)
	}
	b1, b2 := float32(math.Inf(-1)), float32(math.Inf(-1))
	for c := range m.nv {
		s := float32(m.spec.Alpha[c] * float32(raw[c]))
		switch {
		case s > b1:
			b1, b2 = s, b1
		case s > b2:
			b2 = s
		}
	}
	return float32(b1 - b2)
}

// Novelty is the negative log-likelihood, in 1/16 bits, of the kept
// embedding z's bits at the fingerprint's columns, each a coin that fires
// with its training rate r/255:
//
//	for i, c := range f.Columns {
//		p := f.Rates[i] // P(bit = 1)·255
//		if z[c/64]>>(c%64)&1 == 0 {
//			p = 255 - p
//		}
//		n += Surprisal[p]
//	}
//
// Large when the window sets bits the training data rarely set (or clears
// bits it nearly always set): a cheap distance from the training data.
func (f *Fingerprint) Novelty(z []uint64) uint32 {
	rates := f.Rates[:len(f.Columns)]
	var n uint32
	for i, c := range f.Columns {
		// Without a branch (the bits are as good as random to a branch
		// predictor): 255 − p = p ^ 0xff, and the mask is 0xff when the
		// bit is 0.
		mask := uint8(z[c>>6]>>(c&63)&1) - 1
		n += uint32(Surprisal[rates[i]^mask])
	}
	return n
}

// noveltySum is a fingerprint's Novelty prepared once, at New, so that a
// prediction does one shift, AND and add per column instead of a byte
// table lookup indexed by the bit: with s0_i = Surprisal[Rates[i]^0xff]
// (bit 0) and d_i = Surprisal[Rates[i]] − s0_i (bit 1),
//
//	Novelty = Σ s0_i + Σ bit_i·d_i
//
// the same integers summed in another order, so the same uint32. It costs
// 4 bytes per fingerprint column (d; Columns are shared).
type noveltySum struct {
	cols []int32
	d    []int32
	s0   uint32 // Σ s0_i
}

func newNoveltySum(f *Fingerprint) noveltySum {
	n := noveltySum{cols: f.Columns, d: make([]int32, len(f.Columns))}
	for i, r := range f.Rates[:len(f.Columns)] {
		s0 := int32(Surprisal[r^0xff])
		n.s0 += uint32(s0)
		n.d[i] = int32(Surprisal[r]) - s0
	}
	return n
}

// novelty is (*Fingerprint).Novelty of z, the first len(cols)/8·8
// columns with the fast path where there is one.
func (n *noveltySum) novelty(k *kernels, z []uint64) uint32 {
	sum, i := k.noveltySIMD(z, n.cols, n.d)
	d := n.d[:len(n.cols)]
	for ; i < len(n.cols); i++ {
		c := n.cols[i]
		bit := int32(z[c>>6]>>(c&63)) & 1
		sum += -bit & d[i]
	}
	return n.s0 + uint32(sum)
}

// The out-of-range term (Calibration.Outside = W > 0) is what one raw
// feature value v adds to a window's novelty, from its scaled value
// u = float32((v−Lo)·k) − 1 before clipping (k = 2/(Hi−Lo), as the scaler
// computes it), with e = |u| − 1 how far v lies past its training range
// in half-ranges:
//
//	0                              if v is NaN (missing) or −1 ≤ u ≤ 1
//	W + ⌊float32(min(e, 1))·W⌋     if u < −1 or u > 1
//	2·W                            if the feature was constant in training (k = 0) and v ≠ Lo
//
// so a feature past its range adds W to 2·W. The fingerprint's bits
// cannot see it: a clipped feature sets the same bits at its range's end
// as far past it. Training sets W to the spread of the fingerprint
// novelty on the validation rows (docs/TRAINING.md), so one feature
// leaving its range weighs as much as the gap between a typical window's
// bits and an unusual one's. Comparisons, one float32 product below 2^16
// and integer sums: the same on every architecture.
func (sc *scaling) outside(kn *kernels, x []float32, w uint32) uint32 {
	lo, k := sc.lo[:len(x)], sc.k[:len(x)]
	fw := float32(w)
	n, i := kn.outsideSIMD(x, lo, k, w)
	for ; i < len(x); i++ {
		v := x[i]
		if v != v {
			continue
		}
		if k[i] == 0 {
			if v != lo[i] {
				n += 2 * w
			}
			continue
		}
		u := float32((v-lo[i])*k[i]) - 1
		var e float32
		switch {
		case u > 1:
			e = u - 1
		case u < -1:
			e = -1 - u
		default:
			continue
		}
		if !(e < 1) {
			n += 2 * w
			continue
		}
		n += w + uint32(float32(e*fw))
	}
	return n
}

// MaxOutsideWeight bounds Calibration.Outside.
const MaxOutsideWeight = 4095

// Surprisal[p] = round(16·−log2((p + 0.5)/256)): the information, in 1/16
// bits, of an outcome of probability p/255 (TestSurprisalTable derives it
// with math.Log2). A table, so every architecture adds the same integers.
var Surprisal = [256]uint8{
	144, 119, 107, 99, 93, 89, 85, 81, 79, 76, 74, 72, 70, 68, 66, 65,
	63, 62, 61, 59, 58, 57, 56, 55, 54, 53, 52, 51, 51, 50, 49, 48,
	48, 47, 46, 46, 45, 44, 44, 43, 43, 42, 41, 41, 40, 40, 39, 39,
	38, 38, 37, 37, 37, 36, 36, 35, 35, 34, 34, 34, 33, 33, 33, 32,
	32, 31, 31, 31, 30, 30, 30, 29, 29, 29, 28, 28, 28, 28, 27, 27,
	27, 26, 26, 26, 26, 25, 25, 25, 25, 24, 24, 24, 23, 23, 23, 23,
	23, 22, 22, 22, 22, 21, 21, 21, 21, 20, 20, 20, 20, 20, 19, 19,
	19, 19, 19, 18, 18, 18, 18, 18, 17, 17, 17, 17, 17, 16, 16, 16,
	16, 16, 16, 15, 15, 15, 15, 15, 15, 14, 14, 14, 14, 14, 14, 13,
	13, 13, 13, 13, 13, 12, 12, 12, 12, 12, 12, 12, 11, 11, 11, 11,
	11, 11, 10, 10, 10, 10, 10, 10, 10, 10, 9, 9, 9, 9, 9, 9,
	9, 8, 8, 8, 8, 8, 8, 8, 8, 7, 7, 7, 7, 7, 7, 7,
	7, 6, 6, 6, 6, 6, 6, 6, 6, 6, 5, 5, 5, 5, 5, 5,
	5, 5, 5, 4, 4, 4, 4, 4, 4, 4, 4, 4, 3, 3, 3, 3,
	3, 3, 3, 3, 3, 3, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0,
}
