package inference

import (
	"errors"
	"fmt"
)

// Trees are the embedding's tree part: oblivious decision trees on the
// scaled features, each leaf an embedding column. An oblivious tree tests
// one (feature, threshold) pair per level, the same at every node of the
// level, so its leaf is the number whose bit l is level l's test:
//
//	leaf(t) = Σ_l [x'[Feature[t·Depth+l]] > Value[t·Depth+l]] << l
//
// and its column is NT + t·2^Depth + leaf(t) (after the NT threshold
// columns, before the transform's). Exactly one leaf bit of each tree is
// 1 (meaning +1); a weighted sum over a tree's leaf bits is a lookup table
// indexed by the conjunction of Depth threshold tests — the interactions of
// sensors that threshold bits alone (additive) cannot express, scored by
// the same XOR-and-popcount kernel. Training learns the trees by gradient
// boosting and then the ternary weights of every leaf (see package
// training). Reference loop:
//
//	for t := range trees {
//		leaf := 0
//		for l := range Depth {
//			if x[Feature[t*Depth+l]] > Value[t*Depth+l] {
//				leaf |= 1 << l
//			}
//		}
//		z[NT + t<<Depth + leaf] = 1
//	}
//
// A NaN input compares false. Tree columns count as threshold columns for
// the threshold weight ρ (ModelSpec.ThresholdWeight): both are the
// embedding's axis-aligned part.
type Trees struct {
	Depth   int       // levels of every tree, 1..MaxTreeDepth
	Feature []uint16  // per tree and level (tree-major): the scaled input feature tested
	Value   []float32 // per tree and level: the threshold (finite)
}

// Tree limits.
const (
	MaxTreeDepth = 8
	MaxTrees     = 1 << 13 // trees of one model
)

// ErrTrees reports trees that cannot be used.
var ErrTrees = errors.New("inference: invalid trees")

// Count returns the number of trees.
func (t *Trees) Count() int {
	if t == nil || t.Depth == 0 {
		return 0
	}
	return len(t.Feature) / t.Depth
}

// Leaves returns the number of tree columns, Count()·2^Depth.
func (t *Trees) Leaves() int { return t.Count() << t.depth() }

func (t *Trees) depth() int {
	if t == nil {
		return 0
	}
	return t.Depth
}

// Validate checks t for d input features.
func (t *Trees) Validate(d int) error {
	switch {
	case t.Depth < 1 || t.Depth > MaxTreeDepth:
		return fmt.Errorf("%w: depth %d, want 1..%d", ErrTrees, t.Depth, MaxTreeDepth)
	case len(t.Feature) != len(t.Value):
		return fmt.Errorf("%w: %d features and %d thresholds", ErrTrees, len(t.Feature), len(t.Value))
	case len(t.Feature) == 0 || len(t.Feature)%t.Depth != 0:
		return fmt.Errorf("%w: %d tests for depth %d (want a positive multiple)", ErrTrees, len(t.Feature), t.Depth)
	case len(t.Feature)/t.Depth > MaxTrees:
		return fmt.Errorf("%w: %d trees, at most %d", ErrTrees, len(t.Feature)/t.Depth, MaxTrees)
	}
	for i, f := range t.Feature {
		if int(f) >= d {
			return fmt.Errorf("%w: tree %d level %d tests feature %d of %d", ErrTrees, i/t.Depth, i%t.Depth, f, d)
		}
		if !finite32(t.Value[i]) {
			return fmt.Errorf("%w: tree %d level %d threshold %g is not finite", ErrTrees, i/t.Depth, i%t.Depth, t.Value[i])
		}
	}
	return nil
}

// Leaf returns the leaf tree tr reaches for the scaled input xs (the
// reference definition above, for one tree).
func (t *Trees) Leaf(tr int, xs []float32) int {
	leaf := 0
	for l := range t.Depth {
		if xs[t.Feature[tr*t.Depth+l]] > t.Value[tr*t.Depth+l] {
			leaf |= 1 << l
		}
	}
	return leaf
}

// treeColumns is the kept tree columns of a model, prepared for Predict:
// the trees with at least one kept leaf, their tests copied together, and
// per tree a table from leaf to the output bit of that leaf's column (−1:
// not kept). Predict then does Depth comparisons and one lookup per tree,
// whatever the number of leaves, and allocates nothing.
type treeColumns struct {
	depth   int
	feature []uint16  // per tree and level, as Trees.Feature
	value   []float32 // per tree and level, as Trees.Value
	pos     []int32   // per tree, 2^depth entries: output bit of the leaf, or −1
}

// newTreeColumns prepares the kept tree columns of t: kept are embedding
// columns in [nt, nt+Leaves()), ascending, and the bit of kept[i] is output
// bit at+i.
func newTreeColumns(t *Trees, nt, at int, kept []int32) treeColumns {
	tc := treeColumns{depth: t.depth()}
	leaves := 1 << tc.depth
	for i := 0; i < len(kept); {
		tr := (int(kept[i]) - nt) >> tc.depth
		tc.feature = append(tc.feature, t.Feature[tr*tc.depth:][:tc.depth]...)
		tc.value = append(tc.value, t.Value[tr*tc.depth:][:tc.depth]...)
		table := make([]int32, leaves)
		for l := range table {
			table[l] = -1
		}
		for ; i < len(kept) && (int(kept[i])-nt)>>tc.depth == tr; i++ {
			table[(int(kept[i])-nt)&(leaves-1)] = int32(at + i)
		}
		tc.pos = append(tc.pos, table...)
	}
	return tc
}

// embed ORs the kept tree bits of the scaled input xs into dst (cleared by
// the caller): Trees' reference loop, over the trees with a kept leaf, with
// the column's output bit looked up.
func (tc *treeColumns) embed(dst []uint64, xs []float32) {
	d := tc.depth
	if d == 0 {
		return
	}
	n := len(tc.pos) >> d
	for t := range n {
		feature, value := tc.feature[t*d:][:d], tc.value[t*d:][:d]
		leaf := 0
		for l, f := range feature {
			b := 0
			if xs[f] > value[l] {
				b = 1
			}
			leaf |= b << (l & (MaxTreeDepth - 1)) // l < MaxTreeDepth: the mask drops the shift's range check
		}
		if p := tc.pos[t<<d|leaf]; p >= 0 {
			dst[p>>6] |= 1 << (p & 63)
		}
	}
}
