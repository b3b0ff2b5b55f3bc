package bundle

import (
	"fmt"
	"math"
	"slices"
)

// Thresholds (format 2) ship as float16: every threshold is a float16 value
// strictly inside (−1, 1) — the clipped scaled range; a threshold outside it
// gives a constant bit — and not −0 (which compares like +0, so it would be
// a second encoding of the same model). Each feature's list is strictly
// ascending.

// Forms of the thresholds section.
const (
	thresholdsNone = 0
	thresholdsHalf = 1
)

// CompactThresholds returns the thresholds that ship in a bundle: every
// value rounded to the nearest float16 (−0 becoming +0), values that are not
// strictly inside (−1, 1) after rounding (or NaN) dropped, each feature's
// list sorted with the duplicates rounding creates removed. Training snaps
// its thresholds with CompactThresholds before it trains, as it does the
// scaler with CompactScaler, so the model trained is the model shipped. Nil
// stays nil, and a feature without thresholds gets a nil list; the input is
// never modified.
func CompactThresholds(th [][]float32) [][]float32 {
	if th == nil {
		return nil
	}
	out := make([][]float32, len(th))
	for i, list := range th {
		var vs []float32
		for _, v := range list {
			h := halfToFloat32(float32ToHalf(v))
			if h == 0 {
				h = 0 // −0 → +0
			}
			if h > -1 && h < 1 {
				vs = append(vs, h)
			}
		}
		slices.Sort(vs)
		out[i] = slices.Compact(vs)
	}
	return out
}

// checkThresholdValue reports why v cannot ship as a threshold.
func checkThresholdValue(v float32) error {
	switch {
	case !(v > -1 && v < 1):
		return fmt.Errorf("%g is not strictly inside (-1, 1)", v)
	case math.Float32bits(v) == 0x80000000:
		return fmt.Errorf("-0 (use +0)")
	case !isHalf(v):
		return fmt.Errorf("%g is not a float16 value", v)
	}
	return nil
}

// checkThresholds checks every threshold of th as Encode requires (order and
// count are ModelSpec.Validate's).
func checkThresholds(th [][]float32) error {
	for i, list := range th {
		for k, v := range list {
			if err := checkThresholdValue(v); err != nil {
				return fmt.Errorf("feature %d threshold %d: %v; snap thresholds with CompactThresholds before training", i, k, err)
			}
		}
	}
	return nil
}
