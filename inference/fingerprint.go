package inference

import (
	"errors"
	"fmt"
	"math"
	"sort"
)

// Fingerprint is how often a sample of the model's embedding bits fired on
// the training data: a gateway that counts the same bits on its own inputs
// can tell when they drift away from what the model was trained on, with
// no labels and a few hundred bytes in the bundle. Threshold bits make the
// drift readable: their rates are points of each feature's training
// distribution, so the most drifted bits name the features that moved.
//
// Columns index the model's kept columns (ModelSpec.Kept), not embedding
// columns, strictly ascending. Rates[i] is round(255·f) for the fraction f
// of training rows whose bit Columns[i] was 1.
type Fingerprint struct {
	Columns []int32
	Rates   []uint8
}

// MaxFingerprint bounds the columns of a fingerprint.
const MaxFingerprint = 1024

// ErrFingerprint reports a fingerprint that cannot be used.
var ErrFingerprint = errors.New("inference: invalid fingerprint")

// Validate checks f against a model with kept columns.
func (f *Fingerprint) Validate(kept int) error {
	switch {
	case len(f.Columns) != len(f.Rates):
		return fmt.Errorf("%w: %d columns and %d rates", ErrFingerprint, len(f.Columns), len(f.Rates))
	case len(f.Columns) > MaxFingerprint:
		return fmt.Errorf("%w: %d columns, at most %d", ErrFingerprint, len(f.Columns), MaxFingerprint)
	}
	for i, c := range f.Columns {
		if c < 0 || int(c) >= kept || (i > 0 && c <= f.Columns[i-1]) {
			return fmt.Errorf("%w: column %d (%d) out of order or past the %d kept columns", ErrFingerprint, i, c, kept)
		}
	}
	return nil
}

// Count adds the bits of one input's kept embedding z (as PredictEmbed
// returns it) at the fingerprint's columns to counts (len(Columns)):
//
//	for i, c := range f.Columns {
//		counts[i] += uint32(z[c/64] >> (c % 64) & 1)
//	}
func (f *Fingerprint) Count(counts []uint32, z []uint64) {
	counts = counts[:len(f.Columns)]
	for i, c := range f.Columns {
		counts[i] += uint32(z[c>>6] >> (c & 63) & 1)
	}
}

// Drift compares firing counts of n inputs (from Count) with the training
// rates: for each column the Jensen–Shannon divergence, in bits, between
// a coin that fires with the training rate and one that fires with the
// observed rate,
//
//	JS(p, q) = H((p+q)/2) − (H(p) + H(q))/2,  H the binary entropy,
//
// which is 0 for equal rates and 1 for a bit that always fired in training
// and never now. It returns the mean over columns (0 … 1) and writes each
// column's divergence into per (len(Columns)) if per is not nil. With n =
// 0 the drift is 0.
func (f *Fingerprint) Drift(per []float64, counts []uint32, n int) float64 {
	if n == 0 || len(f.Columns) == 0 {
		return 0
	}
	var sum float64
	for i, r := range f.Rates {
		p := float64(r) / 255
		q := float64(counts[i]) / float64(n)
		js := binaryEntropy((p+q)/2) - (binaryEntropy(p)+binaryEntropy(q))/2
		js = max(js, 0) // rounding
		if per != nil {
			per[i] = js
		}
		sum += js
	}
	return sum / float64(len(f.Columns))
}

// MostDrifted returns the indexes (into Columns) of the k columns with the
// largest divergence in per, largest first (ties: lower index first).
func MostDrifted(per []float64, k int) []int {
	idx := make([]int, len(per))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return per[idx[a]] > per[idx[b]] })
	return idx[:min(k, len(idx))]
}

func binaryEntropy(p float64) float64 {
	if p <= 0 || p >= 1 {
		return 0
	}
	return -p*math.Log2(p) - (1-p)*math.Log2(1-p)
}
