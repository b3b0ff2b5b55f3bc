package training

import (
	"fmt"
	"slices"

	"github.com/trit-iot/trit/inference"
	"github.com/trit-iot/trit/inference/bundle"
	"github.com/trit-iot/trit/training/data"
)

// The byte budget. A signed bundle holds, besides a fixed header, the
// feature and class names, the scaler (4 bytes per feature), the threshold
// bits' thresholds (2 bytes each), the projection (D/5 bytes per
// direction), the kept-column list and the weights: about 1.6 bits per
// coefficient per weight vector, base-3 packed. Training picks the number
// of random features P as the largest that fits the budget in the worst
// case — every column kept, weights with zeros — so the bundle fits
// whatever the solver returns; columns it drops only make it smaller.

// fitScaler fits the input scaling on ds as configured, snapped to the
// bundle's float16 form.
func (c *Config) fitScaler(ds *data.Dataset) inference.Scaler {
	if c.Scaling == "minmax" {
		return bundle.CompactScaler(data.FitScaler(ds))
	}
	sc := bundle.CompactScaler(robustScaler(ds))
	sc.Clip = true
	return sc
}

// robustScaler fits each feature's range to its 0.1% and 99.9% quantiles,
// or its extremes when those coincide while the feature is not constant.
// TODO(lead): replace with data.FitRobustScaler.
func robustScaler(ds *data.Dataset) inference.Scaler {
	mm := data.FitScaler(ds)
	col := make([]float32, 0, ds.N)
	for j := range ds.D {
		col = col[:0]
		for i := range ds.N {
			if v := ds.X[i*ds.D+j]; v == v {
				col = append(col, v)
			}
		}
		if len(col) == 0 {
			continue
		}
		slices.Sort(col)
		lo := col[int(0.001*float64(len(col)-1))]
		hi := col[len(col)-1-int(0.001*float64(len(col)-1))]
		if hi > lo {
			mm.Lo[j], mm.Hi[j] = lo, hi
		}
	}
	return mm
}

// structures returns the embedding structures to consider, each with the
// largest P that fits the budget (or the fixed P).
func (c *Config) structures(p *prepared) ([]Structure, error) {
	if c.P > 0 {
		return []Structure{{Thresholds: c.Thresholds, Projection: c.Projection, P: c.P}}, nil
	}
	d := p.ds.D
	var cands []Structure
	add := func(t, r int) {
		cands = append(cands, Structure{Thresholds: t, Projection: r})
	}
	if c.Thresholds > 0 || c.Projection > 0 {
		add(c.Thresholds, c.Projection)
	} else {
		add(0, 0)
		if d <= 64 {
			add(16, 0)
		}
		if d >= 64 {
			add(0, 48)
		}
	}
	var out []Structure
	for _, s := range cands {
		pmax, err := c.maxP(p, s)
		if err != nil {
			return nil, err
		}
		if pmax < 64 {
			continue
		}
		s.P = pmax
		out = append(out, s)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: a %d-byte budget cannot hold even 64 random features for %d features and %d classes", ErrConfig, c.Budget, d, len(p.ds.Classes))
	}
	return out, nil
}

// maxP returns the largest P (a multiple of 64) for which a bundle of
// structure s fits the budget in the worst case.
func (c *Config) maxP(p *prepared, s Structure) (int, error) {
	base, err := p.learned(s, c.Seed)
	if err != nil {
		return 0, err
	}
	limit := c.Budget - c.Reserve
	fixed := estimateBytes(base, len(p.ds.Classes), 0)
	if fixed > limit {
		return 0, nil
	}
	lo, hi := 0, inference.MaxP/64
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if estimateBytes(base, len(p.ds.Classes), mid*64) <= limit {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo * 64, nil
}

// estimateBytes is the worst-case signed bundle size of base with P random
// features. TODO(lead): replace with the encoded size of a worst-case spec
// once bundle format 2 lands.
func estimateBytes(base *inference.ModelSpec, classes, p int) int {
	d := base.NumFeatures()
	n := 5 + 80 // magic, version, header with a model ID
	n += 16     // compat counts, version, hardware
	for _, f := range base.Features {
		n += 1 + len(f)
	}
	n += 2
	for _, c := range base.Classes {
		n += 1 + len(c)
	}
	n += 2 + 4*d // scaler
	nt := base.NumThresholds()
	n += 1 + d + 2*nt
	if base.Projection != nil && p > 0 {
		n += 2 + base.Projection.Out()*((d+4)/5+9)
	}
	n += 30 // transform
	cols := nt + p
	n += 1 + (cols+7)/8
	nv := inference.Vectors(classes)
	n += nv * (1 + (cols+4)/5)
	n += 4*nv + 1 + 3*nv
	n += 2 + 72
	return n
}
