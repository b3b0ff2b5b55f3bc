package bundle

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/trit-iot/trit/inference"
)

// Trees (formats 3 and 4) ship as the tests of each tree, level by level: the
// feature index (one byte when D ≤ 256, else two, little-endian) and the
// threshold as float16. A threshold is any finite float16 but −0, which
// compares like +0 (a second encoding of the same model). The trees section
// is a tree count (0: none) and, when there are trees, the depth, then —
// format 4 only — the leaf planes (2..MaxTreePlanes), then — only when the
// bundle has no thresholds, whose section would otherwise carry it — the
// threshold weight ρ, then the tests. See docs/BUNDLE.md.
//
// Format 4 exists for tree leaf planes (inference.Trees.Planes > 1) and
// only for them: a format-4 bundle has trees of 2 or more planes, a model
// with one plane (Planes 0 or 1) is format 3 and decodes with Planes 0, so
// each model has one encoding and every model without planes still reads
// on agents that predate format 4.

// CompactTrees returns the trees that ship in a bundle: every threshold
// clamped to ±MaxHalf and rounded to the nearest float16 (−0 becoming +0),
// so it stays finite. Training snaps its trees with CompactTrees before it
// learns the leaf weights, as it does thresholds with CompactThresholds, so
// the model trained is the model shipped. Nil stays nil; the input is never
// modified. A NaN stays NaN (and the spec will not validate).
func CompactTrees(t *inference.Trees) *inference.Trees {
	if t == nil {
		return nil
	}
	out := &inference.Trees{
		Depth:   t.Depth,
		Feature: append([]uint16(nil), t.Feature...),
		Value:   make([]float32, len(t.Value)),
		Planes:  t.Planes,
	}
	for i, v := range t.Value {
		v = min(max(v, -MaxHalf), MaxHalf) // NaN passes through
		h := halfToFloat32(float32ToHalf(v))
		if h == 0 {
			h = 0 // −0 → +0
		}
		out.Value[i] = h
	}
	return out
}

// checkTreeValue reports why v cannot ship as a tree threshold.
func checkTreeValue(v float32) error {
	switch {
	case v-v != 0:
		return fmt.Errorf("%g is not finite", v)
	case math.Float32bits(v) == 0x80000000:
		return fmt.Errorf("-0 (use +0)")
	case !isHalf(v):
		return fmt.Errorf("%g is not a float16 value", v)
	}
	return nil
}

// checkTrees checks every threshold of t as Encode requires (depth,
// features and shape are ModelSpec.Validate's).
func checkTrees(t *inference.Trees) error {
	if t == nil {
		return nil
	}
	for i, v := range t.Value {
		if err := checkTreeValue(v); err != nil {
			return fmt.Errorf("tree %d level %d threshold: %v; snap trees with CompactTrees before training", i/t.Depth, i%t.Depth, err)
		}
	}
	return nil
}

// treeFeatureBytes is the size of a tree test's feature index for d
// features.
func treeFeatureBytes(d int) int {
	if d <= 256 {
		return 1
	}
	return 2
}

// treeFormat is the format a model's trees need: 4 with leaf planes, 3
// with one plane, 2 (any) without trees.
func treeFormat(t *inference.Trees) int {
	switch {
	case t == nil:
		return 2
	case t.NumPlanes() > 1:
		return 4
	}
	return 3
}

// appendTrees writes the trees section (format 3 or 4) of spec, which has
// d features and nt thresholds; the planes byte is written when the trees
// have more than one plane (Encode writes those as format 4 only).
func appendTrees(out []byte, spec *inference.ModelSpec, d, nt, format int) []byte {
	t := spec.Trees
	if t == nil {
		return append(out, 0)
	}
	out = binary.AppendUvarint(out, uint64(t.Count()))
	out = append(out, byte(t.Depth))
	if b := t.NumPlanes(); b > 1 || format >= calibrationFormat {
		out = append(out, byte(b))
	}
	if nt == 0 {
		rho := uint64(spec.ThresholdWeight)
		if rho == 0 {
			rho = 1
		}
		out = binary.AppendUvarint(out, rho)
	}
	wide := treeFeatureBytes(d) == 2
	for i, f := range t.Feature {
		if wide {
			out = binary.LittleEndian.AppendUint16(out, f)
		} else {
			out = append(out, byte(f))
		}
		out = binary.LittleEndian.AppendUint16(out, float32ToHalf(t.Value[i]))
	}
	return out
}

// trees reads the trees section (format 3 or 4) of a bundle with d
// features and nt thresholds; rho is the threshold weight the thresholds
// section gave (0 for 1). It returns the trees (nil for none) and the
// threshold weight. In format 4 the section must hold trees, and their
// planes byte must be 2..MaxTreePlanes; in format 3 Planes stays 0.
func (r *reader) trees(d, nt int, rho int32, format byte) (*inference.Trees, int32) {
	at := r.pos
	n := r.uvarint("tree count")
	switch {
	case r.err != nil:
		return nil, rho
	case n == 0 && format == 4:
		r.fail(ErrInvalid, at, "no trees in format 4, which is for tree leaf planes: a model without trees is format 2 or 3")
		return nil, rho
	case n == 0:
		return nil, rho
	case n > inference.MaxTrees:
		r.fail(ErrInvalid, at, "%d trees, at most %d", n, inference.MaxTrees)
		return nil, rho
	}
	at = r.pos
	depth := int(r.u8("tree depth"))
	if r.err == nil && (depth < 1 || depth > inference.MaxTreeDepth) {
		r.fail(ErrInvalid, at, "tree depth %d, want 1..%d", depth, inference.MaxTreeDepth)
	}
	planes := 0
	switch {
	case format == 4:
		at := r.pos
		planes = int(r.u8("tree planes"))
		if r.err == nil && (planes < 2 || planes > inference.MaxTreePlanes) {
			r.fail(ErrInvalid, at, "%d tree planes, want 2..%d in format 4 (one plane is format 3)", planes, inference.MaxTreePlanes)
		}
	case format >= calibrationFormat:
		// Format 5 holds any trees: the planes byte is always there, 1
		// for one plane (decoded as Planes 0, as in format 3).
		at := r.pos
		planes = int(r.u8("tree planes"))
		if r.err == nil && (planes < 1 || planes > inference.MaxTreePlanes) {
			r.fail(ErrInvalid, at, "%d tree planes, want 1..%d", planes, inference.MaxTreePlanes)
		}
		if planes == 1 {
			planes = 0
		}
	}
	if nt == 0 {
		at := r.pos
		w := r.uvarint("threshold weight")
		if r.err == nil && (w < 1 || w > inference.MaxThresholdWeight) {
			r.fail(ErrInvalid, at, "threshold weight %d, want 1..%d", w, inference.MaxThresholdWeight)
		}
		if rho = int32(w); rho == 1 {
			rho = 0
		}
	}
	if r.err != nil {
		return nil, 0
	}
	// n ≤ MaxTrees and depth ≤ MaxTreeDepth: no overflow.
	tests, fw := int(n)*depth, treeFeatureBytes(d)
	if tests > r.left()/(fw+2) {
		r.fail(ErrTruncated, r.pos, "%d trees of depth %d need %d bytes, %d left", n, depth, tests*(fw+2), r.left())
		return nil, 0
	}
	t := &inference.Trees{Depth: depth, Feature: make([]uint16, tests), Value: make([]float32, tests), Planes: planes}
	for i := range tests {
		at := r.pos
		var f uint16
		if fw == 1 {
			f = uint16(r.u8("tree feature"))
		} else {
			f = r.u16("tree feature")
		}
		if r.err == nil && int(f) >= d {
			r.fail(ErrInvalid, at, "tree %d level %d tests feature %d of %d", i/depth, i%depth, f, d)
		}
		at = r.pos
		v := halfToFloat32(r.u16("tree threshold"))
		if r.err != nil {
			return nil, 0
		}
		if err := checkTreeValue(v); err != nil {
			r.fail(ErrInvalid, at, "tree %d level %d threshold: %v", i/depth, i%depth, err)
			return nil, 0
		}
		t.Feature[i], t.Value[i] = f, v
	}
	return t, rho
}
