package inference

import (
	"errors"
	"fmt"
)

// Threshold bits are the embedding's axis-aligned part: for input feature i
// and each of its thresholds θ_ik (on the scaled value x'_i, ascending), one
// bit
//
//	z = 1 (meaning +1) if x'_i > θ_ik, else 0 (meaning −1)
//
// A weighted sum of a feature's bits is a step function of that feature (a
// linear function of its quantile rank when the weights are equal), which is
// what a Gaussian kernel over all inputs cannot express well: decisions that
// are thresholds on single sensors, and near-linear data. They come before
// the random transform's bits in the embedding: column c < NT (the total
// number of thresholds) is threshold c in feature order, then threshold
// order; column NT + j is transform column j.
//
// A NaN input compares false, so it sets none of its feature's bits.

// MaxThresholds bounds the thresholds of one model (all features together).
const MaxThresholds = 1 << 16

// ErrThresholds reports thresholds that cannot be used.
var ErrThresholds = errors.New("inference: invalid thresholds")

// validateThresholds checks th (nil, or one ascending list per feature).
func validateThresholds(th [][]float32, d int) (total int, err error) {
	if th == nil {
		return 0, nil
	}
	if len(th) != d {
		return 0, fmt.Errorf("%w: %d threshold lists for %d features", ErrThresholds, len(th), d)
	}
	for i, list := range th {
		for k, v := range list {
			if !finite32(v) || (k > 0 && !(v > list[k-1])) {
				return 0, fmt.Errorf("%w: feature %d threshold %d (%g) is not finite or not above the previous one", ErrThresholds, i, k, v)
			}
		}
		total += len(list)
		if total > MaxThresholds {
			return 0, fmt.Errorf("%w: more than %d thresholds", ErrThresholds, MaxThresholds)
		}
	}
	return total, nil
}

// thresholdColumns is the kept threshold columns of a model, flattened for
// Predict: bit i of the output is feature[i] > value[i].
type thresholdColumns struct {
	feature []int32
	value   []float32
}

func newThresholdColumns(th [][]float32, kept []int32) thresholdColumns {
	var all thresholdColumns
	for i, list := range th {
		for _, v := range list {
			all.feature = append(all.feature, int32(i))
			all.value = append(all.value, v)
		}
	}
	var tc thresholdColumns
	for _, c := range kept {
		if int(c) >= len(all.value) {
			break
		}
		tc.feature = append(tc.feature, all.feature[c])
		tc.value = append(tc.value, all.value[c])
	}
	return tc
}

// embed writes the threshold bits of the scaled input xs into dst from bit
// 0 on, ORing into words the caller has cleared. Reference loop:
//
//	for i := range feature {
//		if xs[feature[i]] > value[i] {
//			dst[i/64] |= 1 << (i % 64)
//		}
//	}
//
// With a fast path (AVX2; k's) whole words of 64 are compared eight at a
// time.
func (tc *thresholdColumns) embed(k *kernels, dst []uint64, xs []float32) {
	feature, value := tc.feature, tc.value[:len(tc.feature)]
	var acc uint64
	for i := k.threshSIMD(dst, xs, feature, value); i < len(feature); i++ {
		f := feature[i]
		var b uint64
		if xs[f] > value[i] {
			b = 1
		}
		acc |= b << (i & 63)
		if i&63 == 63 {
			dst[i>>6] |= acc
			acc = 0
		}
	}
	if n := len(feature); n&63 != 0 {
		dst[n>>6] |= acc
	}
}

// ThresholdBits writes all threshold bits of the scaled input xs (len D) for
// th into dst ((total+63)/64 words, cleared first), in column order. It is
// what training embeds; Predict computes only the kept columns.
func ThresholdBits(dst []uint64, th [][]float32, xs []float32) {
	clear(dst)
	c := 0
	for i, list := range th {
		for _, v := range list {
			if xs[i] > v {
				dst[c>>6] |= 1 << (c & 63)
			}
			c++
		}
	}
}
