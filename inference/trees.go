package inference

import (
	"errors"
	"fmt"
	"slices"
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
//
// With Planes = B > 1, every leaf is B columns, one per plane, plane-major:
// leaf l of plane b is column NT + b·Leaves() + l, and plane b's columns
// count 2^b times (times ρ). A leaf's weight in a score is then the
// integer Σ_b 2^b·w_b with ternary w_b, anything in [−(2^B−1), 2^B−1]: a
// boosted tree's leaf values keep their magnitudes, which one ternary
// weight per leaf cannot (wall-following: 99.1% with one plane, 99.6% with
// two, as the boosting's own float leaves). The reference loop then sets
//
//	for b := range B {
//		z[NT + b*Leaves() + t<<Depth + leaf] = 1
//	}
type Trees struct {
	Depth   int       // levels of every tree, 1..MaxTreeDepth
	Feature []uint16  // per tree and level (tree-major): the scaled input feature tested
	Value   []float32 // per tree and level: the threshold (finite)
	Planes  int       // columns per leaf, weighing 1, 2, …, 2^(Planes−1); 0 means 1
}

// Tree limits.
const (
	MaxTreeDepth  = 8
	MaxTrees      = 1 << 13 // trees of one model
	MaxTreePlanes = 4       // leaf weights up to ±15
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

// Leaves returns the number of leaves, Count()·2^Depth: the columns of
// one plane.
func (t *Trees) Leaves() int { return t.Count() << t.depth() }

// NumPlanes returns the columns per leaf (Planes, 1 when unset).
func (t *Trees) NumPlanes() int {
	if t == nil || t.Planes == 0 {
		return 1
	}
	return t.Planes
}

// Columns returns the number of tree columns, Leaves()·NumPlanes().
func (t *Trees) Columns() int { return t.Leaves() * t.NumPlanes() }

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
	case t.Planes < 0 || t.Planes > MaxTreePlanes:
		return fmt.Errorf("%w: %d planes, want 0..%d", ErrTrees, t.Planes, MaxTreePlanes)
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
// the trees with at least one kept leaf column, their tests copied
// together, and per tree, plane and leaf the output bit of that leaf's
// column (−1: not kept). Predict then does Depth comparisons per tree and
// one lookup per plane, whatever the number of leaves, and allocates
// nothing.
type treeColumns struct {
	depth   int
	planes  int
	feature []uint16  // per tree and level, as Trees.Feature
	value   []float32 // per tree and level, as Trees.Value
	pos     []int32   // per tree and plane, 2^depth entries: output bit of the leaf, or −1
	// The fast path's copy of the tests of whole groups of eight trees,
	// level by level: tree 8g + k's level l at (g·depth + l)·8 + k.
	gfeat  []int32
	gvalue []float32
}

// newTreeColumns prepares the kept tree columns of t: kept are embedding
// columns in [nt, nt+Columns()), ascending, and the bit of kept[i] is
// output bit at+i.
func newTreeColumns(k *kernels, t *Trees, nt, at int, kept []int32) treeColumns {
	tc := treeColumns{depth: t.depth(), planes: t.NumPlanes()}
	leaves, nl := 1<<tc.depth, t.Leaves()
	index := map[int]int{} // tree → its place among the kept trees
	var order []int
	for _, c := range kept {
		tr := (int(c) - nt) % max(nl, 1) >> tc.depth
		if _, ok := index[tr]; !ok {
			index[tr] = -1
			order = append(order, tr)
		}
	}
	slices.Sort(order)
	for k, tr := range order {
		index[tr] = k
		tc.feature = append(tc.feature, t.Feature[tr*tc.depth:][:tc.depth]...)
		tc.value = append(tc.value, t.Value[tr*tc.depth:][:tc.depth]...)
	}
	tc.pos = make([]int32, len(order)*tc.planes*leaves)
	for i := range tc.pos {
		tc.pos[i] = -1
	}
	for i, c := range kept {
		col := int(c) - nt
		plane, leaf := col/nl, col%nl
		k := index[leaf>>tc.depth]
		tc.pos[(k*tc.planes+plane)<<tc.depth|leaf&(leaves-1)] = int32(at + i)
	}
	if d := tc.depth; k.embedSIMD() && d > 0 {
		g := len(order) / 8
		tc.gfeat, tc.gvalue = make([]int32, g*8*d), make([]float32, g*8*d)
		for t := range g * 8 {
			for l := range d {
				tc.gfeat[(t/8*d+l)*8+t%8] = int32(tc.feature[t*d+l])
				tc.gvalue[(t/8*d+l)*8+t%8] = tc.value[t*d+l]
			}
		}
	}
	return tc
}

// trees returns the number of trees with a kept leaf.
func (tc *treeColumns) trees() int {
	if tc.depth == 0 {
		return 0
	}
	return len(tc.feature) / tc.depth
}

// embed ORs the kept tree bits of the scaled input xs into dst (cleared by
// the caller): Trees' reference loop, over the trees with a kept leaf, with
// the column's output bit looked up. Within a plane the output bits grow
// with the tree, so each plane's current word is built in a register and
// written once (an OR into memory per tree would chain every tree's store
// to the next one's load).
func (tc *treeColumns) embed(k *kernels, dst []uint64, xs []float32, leaves []int32) {
	d := tc.depth
	if d == 0 {
		return
	}
	n := tc.trees()
	leaves = leaves[:n]
	// Every tree's leaf first (eight trees at a time with the fast path),
	// then its bits.
	for t := k.treeLeavesSIMD(leaves, xs, tc.gfeat, tc.gvalue, d); t < n; t++ {
		feature, value := tc.feature[t*d:][:d], tc.value[t*d:][:d]
		leaf := int32(0)
		for l, f := range feature {
			var b int32
			if xs[f] > value[l] {
				b = 1
			}
			leaf |= b << (l & (MaxTreeDepth - 1)) // l < MaxTreeDepth: the mask drops the shift's range check
		}
		leaves[t] = leaf
	}
	var word [MaxTreePlanes]int32 // per plane: the word acc holds, −1 none
	var acc [MaxTreePlanes]uint64
	for b := range word {
		word[b] = -1
	}
	planes := min(tc.planes, MaxTreePlanes)
	for t, leaf := range leaves {
		for b := range planes {
			p := tc.pos[(t*tc.planes+b)<<d|int(leaf)]
			if p < 0 {
				continue
			}
			if w := p >> 6; w != word[b] {
				if word[b] >= 0 {
					dst[word[b]] |= acc[b]
				}
				word[b], acc[b] = w, 0
			}
			acc[b] |= 1 << (p & 63)
		}
	}
	for b, w := range word {
		if w >= 0 {
			dst[w] |= acc[b]
		}
	}
}
