package training

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"gonum.org/v1/gonum/mat"

	"github.com/trit-iot/trit/inference"
	"github.com/trit-iot/trit/inference/bundle"
	"github.com/trit-iot/trit/training/internal/splitmix"
	"github.com/trit-iot/trit/training/trees"
)

// Learned parts of the embedding, fitted on training rows only: the
// threshold bits (quantiles of each scaled feature) and the projection
// (leading principal directions, quantised to ternary). Both are shipped in
// the bundle in the exact form trained with.

// fitThresholds returns up to t thresholds per feature at the quantiles
// k/(t+1), k = 1…t, of the scaled values xs (n rows of d), each placed
// halfway between the quantile's value and the next larger distinct value
// so that the bit separates observed values; duplicates are dropped, so a
// binary feature gets one threshold and a constant one none. Thresholds are
// snapped to the bundle's float16 form.
func fitThresholds(xs []float32, n, d, t int) [][]float32 {
	if t <= 0 {
		return nil
	}
	th := make([][]float32, d)
	col := make([]float32, n)
	for j := range d {
		for i := range n {
			col[i] = xs[i*d+j]
		}
		slices.Sort(col)
		// Distinct values with the rank at which each starts.
		var list []float32
		for k := 1; k <= t; k++ {
			r := int(math.Floor(float64(k) * float64(n) / float64(t+1)))
			r = min(max(r, 0), n-1)
			v := col[r]
			// next larger distinct value
			up := sort.Search(n, func(i int) bool { return col[i] > v })
			if up == n {
				// v is the maximum: put the threshold below it instead, if
				// there is a smaller value.
				down := sort.Search(n, func(i int) bool { return col[i] >= v }) - 1
				if down < 0 {
					continue
				}
				list = append(list, midpoint(col[down], v))
				continue
			}
			list = append(list, midpoint(v, col[up]))
		}
		slices.Sort(list)
		th[j] = list
	}
	return bundle.CompactThresholds(th)
}

func midpoint(a, b float32) float32 { return float32((float64(a) + float64(b)) / 2) }

// fitProjection returns the ternary projection onto the r leading principal
// directions of the scaled rows xs (n rows of d), computed on at most
// maxRows of them (a seeded subset). Each direction c (unit length) becomes
// ternary coefficients T with a scale s minimising ‖c − s·T‖: keep the k
// largest |c_i| (the k maximising (Σ|c_i|)²/k) with their signs, s = mean of
// those |c_i|. The bias centres the output on the training mean, so the
// projection of x' is ≈ the principal coordinates of x' − mean.
func fitProjection(xs []float32, n, d, r, maxRows int, seed uint64) (*inference.Projection, error) {
	if r <= 0 {
		return nil, nil
	}
	r = min(r, d)
	rows := make([]int, n)
	for i := range rows {
		rows[i] = i
	}
	if n > maxRows {
		rows = splitmix.New(seed^seedProjection).Sample(n, maxRows)
	}
	m := len(rows)
	mean := make([]float64, d)
	for _, i := range rows {
		for j, v := range xs[i*d : (i+1)*d] {
			mean[j] += float64(v)
		}
	}
	for j := range mean {
		mean[j] /= float64(m)
	}
	a := mat.NewDense(m, d, nil)
	for k, i := range rows {
		for j, v := range xs[i*d : (i+1)*d] {
			a.Set(k, j, float64(v)-mean[j])
		}
	}
	vec, err := principalDirections(a, m, d)
	if err != nil {
		return nil, err
	}
	r = min(r, vec.RawMatrix().Cols)
	// The leading directions are the last columns.
	p := &inference.Projection{}
	words := (d + 63) / 64
	w := make([]int8, d)
	meanX := make([]float32, d)
	for j := range meanX {
		meanX[j] = float32(mean[j])
	}
	cols := vec.RawMatrix().Cols
	for k := range r {
		c := mat.Col(nil, cols-1-k, vec)
		scale := ternarise(w, c)
		if scale == 0 {
			break
		}
		s, nz := make([]uint64, words), make([]uint64, words)
		inference.PackTernary(s, nz, w)
		p.Sign = append(p.Sign, s)
		p.NonZero = append(p.NonZero, nz)
		p.Scale = append(p.Scale, float32(scale))
		p.Bias = append(p.Bias, 0)
	}
	if len(p.Scale) == 0 {
		return nil, nil
	}
	// The bias is the projection of the mean, computed with the same
	// arithmetic as the gateway (bias 0 first), so centring is exact.
	v := make([]float32, len(p.Scale))
	if err := p.Apply(v, meanX); err != nil {
		return nil, err
	}
	copy(p.Bias, v)
	return p, nil
}

// principalDirections returns the unit principal directions of the m
// centred rows a (m×d) as columns, by ascending variance. With at least as
// many rows as features they are the eigenvectors of the d×d covariance
// AᵀA/m. With fewer rows (a wide file: 40 rows of 10,000 features) the
// covariance has rank below m, and its d³ eigen-decomposition would take
// minutes and gigabytes for nothing: the directions are then Aᵀu/‖Aᵀu‖
// for the eigenvectors u of the m×m Gram matrix AAᵀ (the same subspace;
// O(m²d) time, m·d memory), dropping those of (numerically) zero variance.
func principalDirections(a *mat.Dense, m, d int) (*mat.Dense, error) {
	fail := fmt.Errorf("training: principal directions: eigen-decomposition did not converge")
	if m >= d {
		var cov mat.SymDense
		cov.SymOuterK(1/float64(m), a.T())
		var eig mat.EigenSym
		if !eig.Factorize(&cov, true) {
			return nil, fail
		}
		var vec mat.Dense
		eig.VectorsTo(&vec)
		return &vec, nil
	}
	var gram mat.SymDense
	gram.SymOuterK(1, a)
	var eig mat.EigenSym
	if !eig.Factorize(&gram, true) {
		return nil, fail
	}
	var u mat.Dense
	eig.VectorsTo(&u)
	vals := eig.Values(nil)
	top := vals[len(vals)-1]
	var keep []int
	for k, v := range vals {
		if v > top*1e-9 && v > 0 {
			keep = append(keep, k)
		}
	}
	if len(keep) == 0 {
		return mat.NewDense(d, 1, nil), nil
	}
	out := mat.NewDense(d, len(keep), nil)
	col := make([]float64, d)
	for i, k := range keep {
		var v mat.VecDense
		v.MulVec(a.T(), u.ColView(k))
		n := mat.Norm(&v, 2)
		for j := range col {
			col[j] = v.AtVec(j) / n
		}
		out.SetCol(i, col)
	}
	return out, nil
}

// ternarise writes the ternary approximation of c into w and returns its
// scale (0 if c is zero).
func ternarise(w []int8, c []float64) float64 {
	idx := make([]int, len(c))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		x, y := math.Abs(c[a]), math.Abs(c[b])
		switch {
		case x > y:
			return -1
		case x < y:
			return 1
		}
		return 0
	})
	var sum, best float64
	bestK := 0
	for k, i := range idx {
		sum += math.Abs(c[i])
		if v := sum * sum / float64(k+1); v > best {
			best, bestK = v, k+1
		}
	}
	clear(w)
	if bestK == 0 {
		return 0
	}
	sum = 0
	for _, i := range idx[:bestK] {
		sum += math.Abs(c[i])
		if c[i] > 0 {
			w[i] = 1
		} else {
			w[i] = -1
		}
	}
	return sum / float64(bestK)
}

// Boosted trees (package training/trees) are fitted on at most treeRows
// scaled training rows (a seeded subset), splitting only at treeCuts
// quantile thresholds per feature — already in the bundle's float16 form,
// so the trees ship exactly as trained.
const (
	treeRows = 100000
	treeCuts = 128
)

// trees returns the first count boosted trees of the given depth, fitting
// them (or more of them) when not cached. Boosting is sequential and
// deterministic, so the first k trees of a longer run are the trees of a
// run of k: the search's smaller rounds use a prefix, and a larger one
// boosts on from the last tree (trees.Options.From).
func (p *prepared) trees(depth, count int, seed uint64) (*inference.Trees, error) {
	m := p.forest[depth]
	// A fold that stopped early (stopOn) has all the trees worth having.
	stopped := m != nil && m.Trees.Count() < p.asked[depth]
	if m == nil || m.Trees.Count() < count && !stopped {
		ds := p.ds
		// The rows (and the held-out rows below) are scaled again each
		// time boosting goes on, a few milliseconds against the boosting's
		// seconds, rather than kept for the search: on w8a they are about 50 MB
		// a fold, the peak memory's margin.
		rows, xs, err := p.scaledRows(treeRows, seed^seedTreeRows)
		if err != nil {
			return nil, err
		}
		y := make([]int32, len(rows))
		for k, i := range rows {
			y[k] = ds.Y[i]
		}
		if p.treeCuts == nil || p.treeCutsSeed != seed {
			// The same for every depth and every run boosted on from
			// another: fitted once.
			sample, n, err := p.scaledSample(seed)
			if err != nil {
				return nil, err
			}
			p.treeCuts, p.treeCutsSeed = fitThresholds(sample, n, ds.D, treeCuts), seed
		}
		cuts := p.treeCuts
		opt := &trees.Options{Trees: count, Depth: depth, Seed: seed, From: m}
		if v := p.stopOn; v != nil {
			// A validation fold's boosting stops early on the fold's own
			// held-out rows: trees that no longer lower their loss are not
			// worth boosting, and the search's tree counts stop there too.
			vx := make([]float32, v.N*v.D)
			for i := range v.N {
				if err := p.sc.Apply(vx[i*v.D:(i+1)*v.D], v.Row(i)); err != nil {
					return nil, err
				}
			}
			opt.Valid = &trees.Rows{X: vx, N: v.N, Y: v.Y}
		}
		m, err = trees.FitModel(xs, len(rows), ds.D, y, len(ds.Classes), cuts, opt)
		if err != nil {
			return nil, fmt.Errorf("training: boosting trees: %w", err)
		}
		// The cuts are float16 already; snapping only makes −0 +0.
		m.Trees = bundle.CompactTrees(m.Trees)
		p.forest[depth], p.asked[depth] = m, count
	}
	d := m.Trees.Depth
	count = min(count, m.Trees.Count()) // boosting may have stopped early (stopOn)
	return &inference.Trees{Depth: d, Feature: m.Trees.Feature[:count*d], Value: m.Trees.Value[:count*d]}, nil
}

// boosted returns the number of trees of the given depth boosted so far.
func (p *prepared) boosted(depth int) int {
	if m := p.forest[depth]; m != nil {
		return m.Trees.Count()
	}
	return 0
}

// leafStart returns, for the trees of spec (a prefix of this prepared
// set's boosted trees), the boosting's leaf values, from which the solver
// starts: nil when spec has no trees.
func (p *prepared) leafStart(spec *inference.ModelSpec) *trees.Model {
	p.mu.Lock()
	defer p.mu.Unlock()
	if spec.Trees.Count() == 0 {
		return nil
	}
	m := p.forest[spec.Trees.Depth]
	if m == nil {
		return nil
	}
	return &trees.Model{Trees: spec.Trees, K: m.K, Values: m.Values[:spec.Trees.Leaves()*m.K], Base: m.Base}
}
