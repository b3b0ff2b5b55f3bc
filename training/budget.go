package training

import (
	"fmt"
	"strings"
	"time"

	"github.com/trit-iot/trit/inference"
	"github.com/trit-iot/trit/inference/bundle"
	"github.com/trit-iot/trit/training/data"
)

// The byte budget. A signed bundle holds, besides a fixed header, the
// feature and class names, the scaler (4 bytes per feature), the threshold
// bits' thresholds (2 bytes each), the projection (D/5 bytes per
// direction), the kept-column list and the weights: 1.6 bits per
// coefficient per weight vector, base-3 packed (1 bit with binary
// weights). Training picks the number of random features P as the largest
// that fits the budget in the worst case — every column kept, weights with
// zeros, measured by encoding such a bundle — so the bundle fits whatever
// the solver returns; columns it drops only make it smaller.

// fitScaler fits the input scaling on ds as configured, snapped to the
// bundle's float16 form.
func (c *Config) fitScaler(ds *data.Dataset) inference.Scaler {
	if c.Scaling == "minmax" {
		return bundle.CompactScaler(data.FitScaler(ds))
	}
	sc := bundle.CompactScaler(data.FitRobustScaler(ds))
	sc.Clip = true
	return sc
}

// size sizes structure s to the budget as by says (see kinds), and
// reports whether it fits at all.
func (c *Config) size(p *prepared, s *Structure, by sizing) (bool, error) {
	switch by {
	case halveThreshold:
		// Threshold bits alone: as many per feature as fit, halving from
		// the preferred count.
		for ; s.Thresholds >= 4; s.Thresholds /= 2 {
			base, err := p.learned(*s, c.Seed)
			if err != nil {
				return false, err
			}
			n, err := c.worstCaseBytes(base, 0, s.Binary)
			if err != nil {
				return false, err
			}
			if base.NumThresholds() > 0 && n <= c.Budget-c.Reserve {
				return true, nil
			}
		}
		return false, nil
	case fillTrees:
		n, err := c.maxTrees(p, *s)
		s.Trees = n
		return n > 0, err
	default: // fillP
		pmax, err := c.maxP(p, *s)
		s.P = pmax
		return pmax >= 64, err
	}
}

// maxRandomFeatures caps P for d input features and n training rows:
// max(4096, 256·d, n/4). A Gaussian kernel on a few sensors is approximated
// well by a few thousand random features; the tens of thousands a 30 KiB
// budget would allow for five inputs only cost training time and overfit a
// small noisy set (a search may choose fewer anyway). Many rows support
// more features (ijcnn1's 50,000 rows of 22 features stopped at 5,632
// features, 2.6 KB of 30 KiB, 2.6 points behind a same-size MLP), so the
// cap grows with them. Image-like data are not capped in practice.
func maxRandomFeatures(d, n int) int {
	return min(inference.MaxP, max(4096, 256*d, n/4))
}

// memoryCap is the largest P whose embedding of n rows (thresholds nt
// included, one bit per row and column) fits MaxEmbeddingBytes.
func (c *Config) memoryCap(n, nt int) int {
	return int(min(int64(inference.MaxP), 8*c.MaxEmbeddingBytes/int64(max(n, 1))-int64(nt)))
}

// maxP returns the largest P (a multiple of 64, at most
// maxRandomFeatures and memoryCap) for which a bundle of structure s fits the budget in
// the worst case.
func (c *Config) maxP(p *prepared, s Structure) (int, error) {
	base, err := p.learned(s, c.Seed)
	if err != nil {
		return 0, err
	}
	limit := c.Budget - c.Reserve
	fits := func(units int) (bool, error) {
		n, err := c.worstCaseBytes(base, units*64, s.Binary)
		return n <= limit, err
	}
	// The size grows with P; find the largest multiple of 64 that fits,
	// up to the cap for this many features.
	units, err := largest(min(maxRandomFeatures(p.ds.D, p.ds.N), c.memoryCap(p.ds.N, base.NumThresholds()))/64, fits)
	return units * 64, err
}

// largest returns the largest n in 1..hi for which fits(n), or 0 if there
// is none, by bisection: fits must hold up to some n and fail above it
// (a bundle's size grows with its columns).
func largest(hi int, fits func(int) (bool, error)) (int, error) {
	if hi < 1 {
		return 0, nil
	}
	if ok, err := fits(1); err != nil || !ok {
		return 0, err
	}
	lo := 1
	for lo < hi {
		mid := (lo + hi + 1) / 2
		ok, err := fits(mid)
		if err != nil {
			return 0, err
		}
		if ok {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo, nil
}

// maxTrees returns the largest number of trees of s.Depth levels (at most
// maxTreeCount, and as many leaves as memoryCap allows: a leaf's planes
// share one stored column, see sharedPlanes) for which a
// bundle of boosted trees alone fits the budget in the worst case; 0 if
// not even one does. The bundle's size does not depend on the trees'
// tests, so none are fitted here.
func (c *Config) maxTrees(p *prepared, s Structure) (int, error) {
	base, err := p.learned(Structure{}, c.Seed)
	if err != nil {
		return 0, err
	}
	limit := c.Budget - c.Reserve
	fits := func(n int) (bool, error) {
		spec := *base
		spec.Trees = &inference.Trees{Depth: s.Depth, Feature: make([]uint16, n*s.Depth), Value: make([]float32, n*s.Depth), Planes: s.Planes}
		b, err := c.worstCaseBytes(&spec, 0, s.Binary)
		return b <= limit, err
	}
	return largest(min(maxTreeCount, inference.MaxTrees, c.memoryCap(p.ds.N, 0)>>s.Depth), fits)
}

// worstCaseBytes is the size of the unsigned bundle (the same size as the
// signed one) of learned parts base with p random features, with its drift
// fingerprint, when every column is kept and every weight vector has zeros (base-3 packed; sign
// planes with binary weights), the self-test's scores at their longest —
// with trees, when one column is not kept,
// since leaves no training row reaches are dropped whatever the kept
// columns then cost — with a model ID of the longest allowed length: an
// upper bound on what training produces, since it ships a model that
// drops other columns only when that makes the bundle smaller (see
// smallerKept).
func (c *Config) worstCaseBytes(base *inference.ModelSpec, p int, binary bool) (int, error) {
	spec := *base
	in := spec.NumFeatures()
	if spec.Projection != nil {
		in = spec.Projection.Out()
	}
	if p > 0 {
		spec.Transform = inference.TransformSpec{Generator: inference.GeneratorV1, Seed: c.Seed, Sigma: 1, D: in, P: p}
	} else {
		spec.Projection = nil
	}
	nv := inference.Vectors(len(spec.Classes))
	cols := spec.Columns()
	weights := make([][]int8, nv)
	alpha := make([]float32, nv)
	pattern := []int8{1, -1, 0}
	if binary {
		pattern = []int8{1, -1}
	}
	for v := range weights {
		weights[v] = make([]int8, cols)
		for j := range cols {
			weights[v][j] = pattern[(j+v)%len(pattern)]
		}
		// Leaves no training row reaches are not kept: then the kept
		// columns ship as a bitmap of every column (cols/8 bytes; 2.5 KB
		// for 20,000 leaf columns), more than the weights they save.
		// Dropping one column is the worst case.
		if nl := spec.NumTreeColumns(); nl > 0 {
			weights[v][spec.NumThresholds()] = 0
		}
		alpha[v] = 1
	}
	full, err := inference.NewSpec(&spec, weights, alpha)
	if err != nil {
		return 0, err
	}
	if idx := fingerprintIndexes(full); len(idx) > 0 {
		full.Fingerprint = &inference.Fingerprint{Columns: idx, Rates: make([]uint8, len(idx))}
	}
	raw, err := sizingBundle(full)
	if err != nil {
		return 0, fmt.Errorf("training: sizing the bundle: %w", err)
	}
	// The self-test's integer scores are varints whose length depends on
	// the weights: count each at its longest.
	return len(raw) + nv*(5-1), nil // a zigzag varint of an int32 takes 1 to 5 bytes
}

// sizingBundle encodes spec as worstCaseBytes sizes it: unsigned (as long
// as signed), with a model ID of the longest allowed length.
func sizingBundle(spec *inference.ModelSpec) ([]byte, error) {
	return bundle.Encode(&bundle.Bundle{
		Header: bundle.Header{ModelID: strings.Repeat("m", bundle.MaxModelID), Release: 1, CreatedAt: time.Unix(1, 0)},
		Compat: bundle.Compat{MinAgentVersion: "0.0.0"},
		Spec:   spec,
	})
}

// smallerKept returns whichever of spec and its all-columns form (see
// inference.ModelSpec.AllColumns) makes the smaller bundle: dropping a
// column saves its weights but costs a kept list, a bitmap of one bit per
// column, which is more than a few dropped columns save.
func smallerKept(spec *inference.ModelSpec) (*inference.ModelSpec, error) {
	if len(spec.Kept) == spec.Columns() {
		return spec, nil
	}
	all := spec.AllColumns()
	size := func(s *inference.ModelSpec) (int, error) {
		raw, err := bundle.Encode(&bundle.Bundle{
			Header: bundle.Header{ModelID: "m", Release: 1, CreatedAt: time.Unix(1, 0)},
			Compat: bundle.Compat{MinAgentVersion: "0.0.0"},
			Spec:   s,
		})
		return len(raw), err
	}
	a, err := size(spec)
	if err != nil {
		return nil, err
	}
	b, err := size(all)
	if err != nil {
		return nil, err
	}
	if b < a {
		return all, nil
	}
	return spec, nil
}
