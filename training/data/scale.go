package data

import (
	"math"

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
