package bundle

import (
	"bytes"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trit-iot/trit/inference"
)

// tinyTreeSpec: 2 clipped features, no thresholds, two oblivious trees of
// depth 2 — tree 0 tests x'_0 > −0.5 then x'_1 > 0.25, tree 1 x'_1 > 0
// then x'_1 > 0.5 — weighted ρ = 3, no random features (8 columns), two
// classes; columns 1, 4, 6 and 7 have weight 0, so 4 of 8 are kept.
func tinyTreeSpec(t testing.TB) *inference.ModelSpec {
	t.Helper()
	base := &inference.ModelSpec{
		Classes:         []string{"ok", "fault"},
		Scaler:          inference.Scaler{Lo: []float32{0, -10}, Hi: []float32{40, 10}, Clip: true},
		Trees:           &inference.Trees{Depth: 2, Feature: []uint16{0, 1, 1, 1}, Value: []float32{-0.5, 0.25, 0, 0.5}},
		ThresholdWeight: 3,
	}
	return mustSpec(t, base, [][]int8{{1, 0, -1, 1, 0, -1, 0, 0}}, []float32{0.5})
}

// tinyTreeThresholdSpec: tinySpec (thresholds, p = 8, 3 classes) with
// one tree of depth 1 on x'_1 > −0.25: columns 0–2 thresholds, 3–4 the
// tree, 5–12 the transform.
func tinyTreeThresholdSpec(t testing.TB) *inference.ModelSpec {
	t.Helper()
	base := &inference.ModelSpec{
		Classes:    []string{"a", "b", "c"},
		Scaler:     inference.Scaler{Lo: []float32{0, -10}, Hi: []float32{40, 10}, Clip: true},
		Thresholds: [][]float32{{-0.5, 0.25}, {0}},
		Trees:      &inference.Trees{Depth: 1, Feature: []uint16{1}, Value: []float32{-0.25}},
		Transform:  inference.TransformSpec{Generator: inference.GeneratorV1, Seed: 5, Sigma: 1, D: 2, P: 8},
	}
	return mustSpec(t, base, [][]int8{
		{1, -1, 0, 1, -1, 0, 1, 0, -1, -1, 1, 0, 0},
		{1, 1, -1, -1, 1, -1, 1, 1, -1, 1, -1, 1, 1},
		{0, 1, 0, -1, 0, 0, 0, 0, 0, 1, 0, 0, 1},
	}, []float32{0.5, 1, 2})
}

func encodeTiny(t testing.TB, spec *inference.ModelSpec) []byte {
	t.Helper()
	raw, err := Encode(testBundle(spec))
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// TestFormat3Sections pins the trees section byte for byte, and that only
// a model with trees is written as format 3.
func TestFormat3Sections(t *testing.T) {
	trees := encodeTiny(t, tinyTreeSpec(t))
	both := encodeTiny(t, tinyTreeThresholdSpec(t))
	checkSections(t, []sectionCase{
		{trees, "trees", "thresholds", "00"},
		// 2 trees of depth 2; no thresholds, so ρ = 3 here; then per
		// test the feature (1 byte: D ≤ 256) and the float16 threshold:
		// 0 > −0.5 (b800), 1 > 0.25 (3400), 1 > 0, 1 > 0.5 (3800).
		{trees, "trees", "trees", "02 02 03  00 00b8  01 0034  01 0000  01 0038"},
		{trees, "trees", "projection", "00"},
		{trees, "trees", "transform", "00 0000000000000000 0000000000000000 00 00"},
		// Columns 0, 2, 3, 5 of 8: bitmap 0b00101101.
		{trees, "trees", "kept", "00 2d"},
		{both, "both", "thresholds", "01 01  02 00b8 0034  01 0000"},
		// 1 tree of depth 1, ρ in the thresholds section: 1 > −0.25 (b400).
		{both, "both", "trees", "01 01  01 00b4"},
		// 13 of 13 columns: the all-columns form.
		{both, "both", "kept", "02"},
	})
	if trees[4] != 3 || both[4] != 3 {
		t.Errorf("format versions %d, %d, want 3", trees[4], both[4])
	}
	// Without trees: format 2, the same bytes as before format 3 existed.
	for name, data := range tinyBundles(t) {
		if data[4] != 2 {
			t.Errorf("%s: format %d, want 2", name, data[4])
		}
	}
	// Asked for format 3, a model without trees gets an empty trees
	// section and otherwise the format-2 bytes.
	b := testBundle(tinySpec(t))
	b.Info = tinyInfo
	v3, err := Encode(&Bundle{Format: 3, Header: b.Header, Compat: b.Compat, Spec: b.Spec, Info: b.Info})
	if err != nil {
		t.Fatal(err)
	}
	v2 := tinyBundles(t)["tiny"]
	if got := section(t, v3, "trees"); !bytes.Equal(got, []byte{0}) {
		t.Errorf("empty trees section % x", got)
	}
	bd, err := Inspect(v3)
	if err != nil {
		t.Fatal(err)
	}
	var trimmed []byte
	for _, s := range bd.Sections {
		if s.Name != "trees" {
			trimmed = append(trimmed, v3[s.Offset:s.Offset+s.Size]...)
		}
	}
	trimmed[4] = 2
	if !bytes.Equal(trimmed, v2) {
		t.Error("format 3 without trees is not format 2 plus an empty trees section")
	}
}

// TestFormat3Predicts: the decoded tiny tree model computes the leaves the
// trees' definition gives, by hand.
func TestFormat3Predicts(t *testing.T) {
	lax := &DecodeOptions{AllowUnsigned: true, Now: func() time.Time { return testCreated }}
	b, err := Decode(encodeTiny(t, tinyTreeSpec(t)), lax)
	if err != nil {
		t.Fatal(err)
	}
	m, err := inference.New(b.Spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := SelfTest(m, b); err != nil {
		t.Fatal(err)
	}
	// Kept columns 0, 2, 3 (tree 0, leaves 0, 2, 3) and 5 (tree 1, leaf
	// 1), weights +1, −1, +1, −1, all weighted ρ = 3.
	for _, c := range []struct {
		x    []float32
		raw  int32
		bits uint64
	}{
		// x' = (−1, −1): tree 0 leaf 0, tree 1 leaf 0. z = (+1, −1, −1, −1).
		{[]float32{0, -10}, 3 * (1 + 1 - 1 + 1), 0b0001},
		// x' = (0, 0.4): tree 0 leaf 3, tree 1 leaf 1. z = (−1, −1, +1, +1).
		{[]float32{20, 4}, 3 * (-1 + 1 + 1 - 1), 0b1100},
		// x' = (−1, 0.3): tree 0 leaf 2, tree 1 leaf 1.
		{[]float32{0, 3}, 3 * (-1 - 1 - 1 - 1), 0b1010},
		// x' = (1, 1): tree 0 leaf 3, tree 1 leaf 3 (not kept).
		{[]float32{40, 10}, 3 * (-1 + 1 + 1 + 1), 0b0100},
	} {
		raw := make([]int32, 1)
		if _, err := m.PredictRaw(raw, c.x); err != nil {
			t.Fatal(err)
		}
		z := make([]uint64, 1)
		m.EmbedKept(z, c.x)
		if raw[0] != c.raw || z[0] != c.bits {
			t.Errorf("x = %v: raw %d, bits %04b; want %d, %04b", c.x, raw[0], z[0], c.raw, c.bits)
		}
	}
}

// TestRoundTripFormat3: models with trees decode to the same spec and
// predict exactly what the in-memory model predicts.
func TestRoundTripFormat3(t *testing.T) {
	for _, c := range []struct {
		name string
		s    shape
		info map[string]string
	}{
		{name: "trees only", s: shape{d: 6, classes: 2, trees: 12, depth: 3, zeroFrac: 0.5, clip: true}},
		{name: "trees only, ρ", s: shape{d: 5, classes: 3, trees: 4, depth: 8, rho: 9, zeroFrac: 0.8}},
		{name: "thresholds and trees, ρ", s: shape{d: 8, classes: 4, thresholds: 3, trees: 20, depth: 4, rho: 4, zeroFrac: 0.3, clip: true}},
		{name: "everything", s: shape{d: 40, p: 256, classes: 5, thresholds: 2, trees: 30, depth: 5, proj: 6, rho: 2, zeroFrac: 0.4, projZeroFrac: 0.5, clip: true, named: true},
			info: map[string]string{"train.trees": "30"}},
		{name: "trees and transform, no thresholds", s: shape{d: 10, p: 128, classes: 2, trees: 16, depth: 2, rho: 5, zeroFrac: 0.2}},
		{name: "wide features (2-byte index)", s: shape{d: 300, p: 64, classes: 2, trees: 25, depth: 3, zeroFrac: 0.5, clip: true}},
		{name: "depth 1, all kept", s: shape{d: 3, classes: 2, trees: 50, depth: 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			spec := shapedSpec(uint64(c.s.d*31+c.s.trees), c.s)
			_, bd := roundTrip(t, spec, c.info, 3, 5)
			if bd.TreeDepth != c.s.depth || len(bd.TreeFeatures) != c.s.d {
				t.Errorf("breakdown: depth %d, %d feature counts", bd.TreeDepth, len(bd.TreeFeatures))
			}
			sum := 0
			for _, n := range bd.TreeFeatures {
				sum += n
			}
			if sum != c.s.trees*c.s.depth {
				t.Errorf("breakdown: %d tests per feature in all, want %d", sum, c.s.trees*c.s.depth)
			}
		})
	}
}

// TestFormat3Refusals replaces the trees section of a valid bundle with
// bytes that break one rule.
func TestFormat3Refusals(t *testing.T) {
	lax := &DecodeOptions{AllowUnsigned: true, Now: func() time.Time { return testCreated }}
	trees, both := encodeTiny(t, tinyTreeSpec(t)), encodeTiny(t, tinyTreeThresholdSpec(t))
	wide := encodeTiny(t, shapedSpec(9, shape{d: 300, classes: 2, trees: 2, depth: 1, zeroFrac: 0.1}))
	fixtures := map[string][]byte{"trees": trees, "both": both, "wide": wide}
	for _, c := range []struct {
		name, bundle, repl string
		want               error
		msg                string
	}{
		{"depth 0", "trees", "02 00 03 00 00b8 01 0034 01 0000 01 0038", ErrInvalid, "tree depth 0"},
		{"depth 9", "trees", "02 09 03 00 00b8 01 0034 01 0000 01 0038", ErrInvalid, "tree depth 9"},
		{"feature index = D", "trees", "02 02 03 00 00b8 02 0034 01 0000 01 0038", ErrInvalid, "tree 0 level 1 tests feature 2 of 2"},
		{"feature index 255", "both", "01 01 ff 00b4", ErrInvalid, "tests feature 255 of 2"},
		{"wide feature index = D", "wide", "02 01 01 2c01 0000 0000 0000", ErrInvalid, "tests feature 300 of 300"},
		{"threshold -0", "trees", "02 02 03 00 00b8 01 0034 01 0080 01 0038", ErrInvalid, "-0"},
		{"threshold +Inf", "trees", "02 02 03 00 007c 01 0034 01 0000 01 0038", ErrInvalid, "not finite"},
		{"threshold NaN", "trees", "02 02 03 00 00b8 01 007e 01 0000 01 0038", ErrInvalid, "not finite"},
		{"weight 0", "trees", "02 02 00 00 00b8 01 0034 01 0000 01 0038", ErrInvalid, "threshold weight 0"},
		{"weight 65", "trees", "02 02 41 00 00b8 01 0034 01 0000 01 0038", ErrInvalid, "threshold weight 65"},
		{"count above MaxTrees", "trees", "81 40 02 03", ErrInvalid, "8193 trees"},
		{"count the bytes cannot hold", "trees", "80 40 08 03 00 00b8", ErrTruncated, "8192 trees of depth 8"},
		{"count not minimal", "trees", "82 00 02 03 00 00b8 01 0034 01 0000 01 0038", ErrInvalid, "not minimally encoded"},
		{"no trees, no features", "trees", "00", ErrInvalid, "p = 0 and no thresholds or trees"},
	} {
		t.Run(c.name, func(t *testing.T) {
			data := replaceSection(t, fixtures[c.bundle], "trees", unhex(t, c.repl))
			_, err := Decode(data, lax)
			var fe *FormatError
			section := "trees" // where the rule is, not the model's Validate
			if c.repl == "00" {
				section = "transform"
			}
			if !errors.Is(err, c.want) || !errors.As(err, &fe) || fe.Section != section || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("Decode: %v, want %v in section %s mentioning %q", err, c.want, section, c.msg)
			}
			if _, err := Inspect(data); err == nil {
				t.Fatal("Inspect accepts it")
			}
		})
	}
	// Cut inside the trees section: truncated wherever the cut is.
	bd, err := Inspect(trees)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range bd.Sections {
		if s.Name != "trees" {
			continue
		}
		for cut := s.Offset; cut < s.Offset+s.Size; cut++ {
			data := append(bytes.Clone(trees[:cut]), make([]byte, trailerSize)...)
			if _, err := Decode(data, lax); !errors.Is(err, ErrTruncated) {
				t.Errorf("cut at %d: %v, want ErrTruncated", cut, err)
			}
		}
	}
	// Every column kept of more than the rest of the bundle can weigh:
	// refused before the kept list is allocated (P = 131,072 here).
	huge := replaceSection(t, tinyBundles(t)["tiny"], "transform", unhex(t, "01 0500000000000000 000000000000f03f 02 808008"))
	if _, err := Decode(huge, lax); !errors.Is(err, ErrTruncated) || !strings.Contains(err.Error(), "all 131075 columns kept") {
		t.Errorf("all of 131,075 columns kept in a small bundle: %v, want ErrTruncated", err)
	}
	// Format 2 has no trees section: the same bytes labelled format 2 do
	// not decode (the tree count is read as the projection form).
	v2 := bytes.Clone(trees)
	v2[4] = 2
	if _, err := Decode(v2, lax); err == nil {
		t.Error("a format-3 body decodes as format 2")
	}
	for name, data := range fixtures {
		if _, err := Decode(data, lax); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
}

func TestEncodeRejectsTrees(t *testing.T) {
	for _, c := range []struct {
		name    string
		modify  func(b *Bundle)
		section string
		want    string
	}{
		{"format 2", func(b *Bundle) { b.Format = 2 }, "trees", "format 2 has no trees; write format 3"},
		{"format 1", func(b *Bundle) { b.Format = 1 }, "trees", "format 1 has no trees"},
		{"unsnapped", func(b *Bundle) { b.Spec.Trees.Value[1] = 0.1 }, "trees", "not a float16 value; snap trees with CompactTrees"},
		{"-0", func(b *Bundle) { b.Spec.Trees.Value[2] = float32(math.Copysign(0, -1)) }, "trees", "-0"},
		{"beyond float16", func(b *Bundle) { b.Spec.Trees.Value[0] = 1e6 }, "trees", "not a float16 value"},
		{"NaN", func(b *Bundle) { b.Spec.Trees.Value[0] = float32(math.NaN()) }, "model", "not finite"},
		{"feature index", func(b *Bundle) { b.Spec.Trees.Feature[0] = 2 }, "model", "feature 2 of 2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			spec := tinyTreeSpec(t)
			tr := *spec.Trees
			tr.Feature, tr.Value = slices.Clone(tr.Feature), slices.Clone(tr.Value)
			spec.Trees = &tr
			b := testBundle(spec)
			c.modify(b)
			_, err := Encode(b)
			var fe *FormatError
			if !errors.Is(err, ErrInvalid) || !errors.As(err, &fe) || fe.Section != c.section || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Encode: %v, want ErrInvalid in section %s mentioning %q", err, c.section, c.want)
			}
		})
	}
}

func TestCompactTrees(t *testing.T) {
	if CompactTrees(nil) != nil {
		t.Fatal("nil trees compact to non-nil")
	}
	nan := float32(math.NaN())
	in := &inference.Trees{Depth: 2, Feature: []uint16{0, 3, 1, 1, 2, 0},
		Value: []float32{0.1, -1e6, 1e9, float32(math.Copysign(0, -1)), 65519, nan}}
	orig := slices.Clone(in.Value)
	out := CompactTrees(in)
	want := []float32{halfToFloat32(float32ToHalf(0.1)), -MaxHalf, MaxHalf, 0, MaxHalf}
	for i, w := range want {
		if math.Float32bits(out.Value[i]) != math.Float32bits(w) {
			t.Errorf("value %d: %g compacts to %g, want %g", i, in.Value[i], out.Value[i], w)
		}
		if err := checkTreeValue(out.Value[i]); err != nil {
			t.Errorf("value %d: %v", i, err)
		}
	}
	if !math.IsNaN(float64(out.Value[5])) {
		t.Errorf("NaN compacts to %g", out.Value[5])
	}
	if out.Depth != 2 || !slices.Equal(out.Feature, in.Feature) || &out.Feature[0] == &in.Feature[0] {
		t.Error("depth or features not copied")
	}
	for i := range orig {
		if math.Float32bits(in.Value[i]) != math.Float32bits(orig[i]) {
			t.Fatal("CompactTrees modified its input")
		}
	}
	// Snapped values are a fixed point.
	again := CompactTrees(out)
	for i := range 5 {
		if again.Value[i] != out.Value[i] {
			t.Errorf("value %d: %g compacts again to %g", i, out.Value[i], again.Value[i])
		}
	}
}
