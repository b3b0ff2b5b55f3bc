package inference

import (
	"errors"
	"fmt"
)

// Scaler maps raw features into [-1, 1] with per-feature range scaling,
// fitted on training data only and shipped with the model:
//
//	x'[i] = 0                                         if x[i] is NaN (missing)
//	x'[i] = (x[i] - Lo[i]) * 2/(Hi[i]-Lo[i]) - 1    if Hi[i] > Lo[i]
//	x'[i] = 0                                         otherwise
//
// A missing value thus takes the middle of its feature's training range,
// the same in training and on every gateway (an agent never classifies a
// window with a failed reading, so there it does not arise).
// With Clip, x'[i] is then clamped to [-1, 1]: training
// fits Lo and Hi robustly (quantiles, not extremes), so a glitch that reads
// 100× the usual range saturates one feature instead of squashing every
// ordinary reading into a sliver of the range. Without Clip (format-1
// bundles) values outside the fitted range map beyond [-1, 1].
type Scaler struct {
	Lo, Hi []float32
	Clip   bool
}

// ErrScaler reports a scaler whose parameters cannot be used.
var ErrScaler = errors.New("inference: invalid scaler")

// scaling is a Scaler prepared for use: the multiplier is computed once, in
// float64 and rounded once, so every architecture derives the same float32.
type scaling struct {
	lo, k []float32
	clip  bool
}

func (s *Scaler) prepare(d int) (scaling, error) {
	if len(s.Lo) != d || len(s.Hi) != d {
		return scaling{}, fmt.Errorf("%w: %d lo and %d hi values for %d features", ErrScaler, len(s.Lo), len(s.Hi), d)
	}
	sc := scaling{lo: make([]float32, d), k: make([]float32, d), clip: s.Clip}
	for i := range d {
		lo, hi := s.Lo[i], s.Hi[i]
		if !finite32(lo) || !finite32(hi) || hi < lo {
			return scaling{}, fmt.Errorf("%w: feature %d has range [%g, %g]", ErrScaler, i, lo, hi)
		}
		sc.lo[i] = lo
		if hi > lo {
			sc.k[i] = float32(2 / (float64(hi) - float64(lo)))
		}
	}
	return sc, nil
}

// apply writes the scaled x into dst. The explicit float32 conversion keeps
// the compiler from fusing the multiply and subtract into an FMA, which would
// round differently on arm64 than on amd64.
func (sc *scaling) apply(dst, x []float32) {
	lo, k := sc.lo[:len(x)], sc.k[:len(x)]
	dst = dst[:len(x)]
	for i, v := range x {
		if k[i] == 0 || v != v {
			dst[i] = 0
			continue
		}
		dst[i] = float32((v-lo[i])*k[i]) - 1
	}
	if sc.clip {
		for i, v := range dst {
			if v > 1 {
				dst[i] = 1
			} else if v < -1 {
				dst[i] = -1
			}
		}
	}
}

// Apply scales x into dst (len(dst) >= len(x) == len(s.Lo)). It is meant for
// tools and tests; models prepare their scaler once at load time.
func (s *Scaler) Apply(dst, x []float32) error {
	sc, err := s.prepare(len(x))
	if err != nil {
		return err
	}
	sc.apply(dst, x)
	return nil
}

func finite32(v float32) bool { return v == v && v-v == 0 }
