package data

import (
	"math"
	"slices"

	"github.com/trit-iot/trit/inference"
)

// FitScaler fits min-max scaling to [-1,1] on d (training data only): for
// each feature j, the reference loop is
//
//	Lo[j] = min over i of d.X[i*d.D+j]
//	Hi[j] = max over i of d.X[i*d.D+j]
//
// NaN values are ignored; a feature with no other values (or a dataset with
// no rows) gets Lo = Hi = 0, which the Scaler maps to 0. Rows are walked in
// memory order and the bounds compared against the whole row at once,
// which is what makes this faster than the column-wise reference loop.
func FitScaler(d *Dataset) inference.Scaler {
	lo := make([]float32, d.D)
	hi := make([]float32, d.D)
	for j := range lo {
		lo[j] = float32(math.Inf(1))
		hi[j] = float32(math.Inf(-1))
	}
	for i := range d.N {
		row := d.Row(i)
		for j, v := range row {
			if v < lo[j] {
				lo[j] = v
			}
			if v > hi[j] {
				hi[j] = v
			}
		}
	}
	for j := range lo {
		if lo[j] > hi[j] { // no value seen
			lo[j], hi[j] = 0, 0
		}
	}
	return inference.Scaler{Lo: lo, Hi: hi}
}

// RobustTrim is the share of a feature's values at each end that
// FitRobustScaler leaves outside [Lo, Hi]: 1 in 1,000.
const RobustTrim = 1000

// FitRobustScaler fits scaling to [-1,1] on d (training data only) that a
// few glitches cannot set: for each feature j, with the n non-NaN values of
// column j sorted ascending into v and k = ⌊(n−1)/RobustTrim⌋,
//
//	Lo[j] = v[k]        (the 0.1% quantile, lower nearest rank)
//	Hi[j] = v[n−1−k]    (the 99.9% quantile, upper nearest rank)
//
// so the k lowest and k highest values fall outside [Lo, Hi] (and are
// clipped to ±1 by whoever applies the scaler with clipping). With fewer
// than 1,001 values k is 0 and this is FitScaler. If the trimmed range is
// empty (Lo = Hi) but the feature is not constant — a rare binary input
// such as a PIR sensor that is 1 in 0.05% of the rows — it falls back to
// the minimum and maximum, so the feature is not lost. A feature with no
// values gets Lo = Hi = 0, as in FitScaler.
//
// Why 0.1%: a sensor glitch is a handful of samples (eeg-eye-state has 2
// spiking rows in 10,486 training rows, up to 715,897 against a usual
// 4,000–4,700), well under 1 in 1,000; trimming more (1%, 5%) would clip
// the genuine extremes that often mark a rare class (light and CO2 when a
// room is occupied), while trimming 0.1% clips at most 0.2% of ordinary
// readings, and only slightly.
//
// It walks the rows once, keeping for each feature the ⌊(N−1)/RobustTrim⌋+1
// lowest and highest values in two small heaps, instead of sorting every
// column.
func FitRobustScaler(d *Dataset) inference.Scaler {
	lo := make([]float32, d.D)
	hi := make([]float32, d.D)
	keep := max(d.N-1, 0)/RobustTrim + 1 // ≥ k+1 for every column's k
	low := make([]boundedHeap, d.D)      // the keep lowest values: a max-heap
	high := make([]boundedHeap, d.D)     // the keep highest: a min-heap of negated values
	count := make([]int, d.D)
	for j := range low {
		low[j] = make(boundedHeap, 0, keep)
		high[j] = make(boundedHeap, 0, keep)
	}
	for i := range d.N {
		for j, v := range d.Row(i) {
			if v != v { // NaN
				continue
			}
			count[j]++
			low[j].offer(v)
			high[j].offer(-v)
		}
	}
	for j, n := range count {
		if n == 0 {
			continue
		}
		k := (n - 1) / RobustTrim
		slices.Sort(low[j])  // ascending: low[j][k] is the k-th lowest
		slices.Sort(high[j]) // ascending negated: -high[j][k] is the k-th highest
		lo[j], hi[j] = low[j][k], -high[j][k]
		if lo[j] == hi[j] {
			lo[j], hi[j] = low[j][0], -high[j][0]
		}
	}
	return inference.Scaler{Lo: lo, Hi: hi}
}

// boundedHeap keeps the cap(h) smallest values offered, as a max-heap.
type boundedHeap []float32

func (h *boundedHeap) offer(v float32) {
	a := *h
	if len(a) < cap(a) {
		a = append(a, v)
		for i := len(a) - 1; i > 0; { // sift up
			p := (i - 1) / 2
			if a[p] >= a[i] {
				break
			}
			a[p], a[i] = a[i], a[p]
			i = p
		}
		*h = a
		return
	}
	if v >= a[0] {
		return
	}
	a[0] = v
	for i := 0; ; { // sift down
		c := 2*i + 1
		if c >= len(a) {
			break
		}
		if c+1 < len(a) && a[c+1] > a[c] {
			c++
		}
		if a[i] >= a[c] {
			break
		}
		a[i], a[c] = a[c], a[i]
		i = c
	}
}
