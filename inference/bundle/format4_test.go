package bundle

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/trit-iot/trit/inference"
)

// tinyPlanesSpec is tinyTreeSpec with two leaf planes: the same two trees
// of depth 2 on 2 clipped features, ρ = 3, no thresholds or random
// features, so 16 columns — plane 0's leaves are columns 0–7, plane 1's
// 8–15, weighing 3 and 6. Plane 0 has tinyTreeSpec's weights, plane 1
// (0, 1, 1, 0, −1, 0, 0, −1): 8 of 16 columns kept (0, 2, 3, 5, 9, 10, 12,
// 15), and the leaves' combined weights w₀ + 2w₁ are tree 0: 1, 2, 1, 1
// and tree 1: −2, −1, 0, −2.
func tinyPlanesSpec(t testing.TB) *inference.ModelSpec {
	t.Helper()
	base := &inference.ModelSpec{
		Classes:         []string{"ok", "fault"},
		Scaler:          inference.Scaler{Lo: []float32{0, -10}, Hi: []float32{40, 10}, Clip: true},
		Trees:           &inference.Trees{Depth: 2, Feature: []uint16{0, 1, 1, 1}, Value: []float32{-0.5, 0.25, 0, 0.5}, Planes: 2},
		ThresholdWeight: 3,
	}
	return mustSpec(t, base, [][]int8{{1, 0, -1, 1, 0, -1, 0, 0, 0, 1, 1, 0, -1, 0, 0, -1}}, []float32{0.5})
}

// tinyPlanesThresholdSpec is tinyTreeThresholdSpec with four leaf planes:
// columns 0–2 thresholds, 3–10 the tree (leaf l of plane b is column 3 +
// 2b + l), 11–18 the transform; ρ (1) in the thresholds section.
func tinyPlanesThresholdSpec(t testing.TB) *inference.ModelSpec {
	t.Helper()
	base := &inference.ModelSpec{
		Classes:    []string{"a", "b", "c"},
		Scaler:     inference.Scaler{Lo: []float32{0, -10}, Hi: []float32{40, 10}, Clip: true},
		Thresholds: [][]float32{{-0.5, 0.25}, {0}},
		Trees:      &inference.Trees{Depth: 1, Feature: []uint16{1}, Value: []float32{-0.25}, Planes: 4},
		Transform:  inference.TransformSpec{Generator: inference.GeneratorV1, Seed: 5, Sigma: 1, D: 2, P: 8},
	}
	return mustSpec(t, base, [][]int8{
		{1, -1, 0, 1, -1, 0, 1, 0, -1, -1, 1, 0, 0, 1, 0, -1, 1, 0, 1},
		{1, 1, -1, -1, 1, -1, 1, 1, -1, 1, -1, 1, 1, -1, 1, 1, -1, 1, 1},
		{0, 1, 0, -1, 0, 0, 0, 0, 1, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1},
	}, []float32{0.5, 1, 2})
}

// TestFormat4Sections pins the trees section of format 4 byte for byte,
// and that only a model with leaf planes is written as format 4.
func TestFormat4Sections(t *testing.T) {
	planes := encodeTiny(t, tinyPlanesSpec(t))
	both := encodeTiny(t, tinyPlanesThresholdSpec(t))
	checkSections(t, []sectionCase{
		{planes, "planes", "thresholds", "00"},
		// 2 trees of depth 2, 2 planes, then (no thresholds) ρ = 3, then
		// the tests as in format 3.
		{planes, "planes", "trees", "02 02 02 03  00 00b8  01 0034  01 0000  01 0038"},
		{planes, "planes", "transform", "00 0000000000000000 0000000000000000 00 00"},
		// Columns 0, 2, 3, 5 | 9, 10, 12, 15 of 16: bitmap 0b00101101,
		// 0b10010110.
		{planes, "planes", "kept", "00 2d 96"},
		// One sign plane over the 8 kept columns: +1 −1 +1 −1 | +1 +1 −1 −1.
		{planes, "planes", "weights", "01 35"},
		{both, "both", "thresholds", "01 01  02 00b8 0034  01 0000"},
		// 1 tree of depth 1, 4 planes; ρ is in the thresholds section.
		{both, "both", "trees", "01 01 04  01 00b4"},
		// 19 of 19 columns (3 thresholds + 2·4 tree + 8 transform).
		{both, "both", "kept", "02"},
	})
	if planes[4] != 4 || both[4] != 4 {
		t.Errorf("format versions %d, %d, want 4", planes[4], both[4])
	}
	// One plane, as Planes 0 or 1: format 3, the same bytes as before
	// format 4 existed, and it decodes with Planes 0.
	lax := &DecodeOptions{AllowUnsigned: true, Now: func() time.Time { return testCreated }}
	for name, spec := range map[string]*inference.ModelSpec{"trees": tinyTreeSpec(t), "both": tinyTreeThresholdSpec(t)} {
		v3 := encodeTiny(t, spec)
		one := *spec.Trees
		one.Planes = 1
		spec.Trees = &one
		if again := encodeTiny(t, spec); v3[4] != 3 || !bytes.Equal(again, v3) {
			t.Errorf("%s: Planes 1 encodes as format %d, Planes 0 as format %d, the same bytes: %v", name, again[4], v3[4], bytes.Equal(again, v3))
		}
		b, err := Decode(v3, lax)
		if err != nil {
			t.Fatal(err)
		}
		if b.Format != 3 || b.Spec.Trees.Planes != 0 {
			t.Errorf("%s: decodes as format %d with Planes %d, want 3 and 0", name, b.Format, b.Spec.Trees.Planes)
		}
	}
	for name, data := range tinyBundles(t) {
		if data[4] != 2 {
			t.Errorf("%s: format %d, want 2", name, data[4])
		}
	}
	spec := tinyPlanesSpec(t)
	bd, err := Inspect(planes)
	if err != nil {
		t.Fatal(err)
	}
	if bd.FormatVersion != 4 || bd.TreePlanes != 2 || bd.TreeColumns != 16 || bd.Columns != 16 {
		t.Errorf("breakdown: format %d, %d planes, %d tree columns, %d columns", bd.FormatVersion, bd.TreePlanes, bd.TreeColumns, bd.Columns)
	}
	checkBreakdown(t, bd, planes, spec)
}

// TestFormat4Predicts: the decoded tiny planes model weighs plane 1 twice
// plane 0, by hand.
func TestFormat4Predicts(t *testing.T) {
	lax := &DecodeOptions{AllowUnsigned: true, Now: func() time.Time { return testCreated }}
	b, err := Decode(encodeTiny(t, tinyPlanesSpec(t)), lax)
	if err != nil {
		t.Fatal(err)
	}
	if b.Format != 4 || b.Spec.Trees.Planes != 2 {
		t.Fatalf("format %d, %d planes", b.Format, b.Spec.Trees.Planes)
	}
	m, err := inference.New(b.Spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := SelfTest(m, b); err != nil {
		t.Fatal(err)
	}
	// With z = ±1 and Σ_kept multiplier·w = 3·(1−1+1−1) + 6·(1+1−1−1) = 0,
	// the score is 2·ρ·(combined weight of tree 0's leaf + tree 1's leaf).
	// Kept bits: 0, 2, 3, 5 (plane 0), 9, 10, 12, 15 (plane 1).
	for _, c := range []struct {
		x     []float32
		raw   int32
		bits  uint64
		class int
	}{
		// x' = (−1, −1): tree 0 leaf 0 (1), tree 1 leaf 0 (−2); columns
		// 0, 8, 4, 12 hit.
		{[]float32{0, -10}, 6 * (1 - 2), 0b01000001, 0},
		// x' = (1, 0.1): tree 0 leaf 1 (2), tree 1 leaf 1 (−1); columns
		// 1, 9, 5, 13.
		{[]float32{40, 1}, 6 * (2 - 1), 0b00011000, 1},
		// x' = (1, 1): tree 0 leaf 3 (1), tree 1 leaf 3 (−2); columns 3,
		// 11, 7, 15.
		{[]float32{40, 10}, 6 * (1 - 2), 0b10000100, 0},
		// x' = (1, −1): tree 0 leaf 1 (2), tree 1 leaf 0 (−2); columns
		// 1, 9, 4, 12.
		{[]float32{40, -10}, 0, 0b01010000, 1},
	} {
		raw := make([]int32, 1)
		class, err := m.PredictRaw(raw, c.x)
		if err != nil {
			t.Fatal(err)
		}
		z := make([]uint64, 1)
		m.EmbedKept(z, c.x)
		if raw[0] != c.raw || z[0] != c.bits || class != c.class {
			t.Errorf("x = %v: raw %d, bits %08b, class %d; want %d, %08b, %d", c.x, raw[0], z[0], class, c.raw, c.bits, c.class)
		}
	}
}

// TestRoundTripFormat4: models with leaf planes decode to the same spec
// and predict exactly what the in-memory model predicts; re-encoding gives
// the same bytes.
func TestRoundTripFormat4(t *testing.T) {
	for _, c := range []struct {
		name string
		s    shape
		info map[string]string
	}{
		{name: "trees only, 2 planes", s: shape{d: 6, classes: 2, trees: 12, depth: 3, planes: 2, zeroFrac: 0.5, clip: true}},
		{name: "trees only, 3 planes, ρ", s: shape{d: 5, classes: 3, trees: 4, depth: 6, planes: 3, rho: 9, zeroFrac: 0.8}},
		{name: "thresholds and trees, 4 planes, ρ", s: shape{d: 8, classes: 4, thresholds: 3, trees: 10, depth: 4, planes: 4, rho: 4, zeroFrac: 0.3, clip: true}},
		{name: "everything, 2 planes", s: shape{d: 40, p: 256, classes: 5, thresholds: 2, trees: 20, depth: 4, planes: 2, proj: 6, rho: 2, zeroFrac: 0.4, projZeroFrac: 0.5, clip: true, named: true},
			info: map[string]string{"train.trees": "20", "train.planes": "2"}},
		{name: "trees and transform, 4 planes, ρ 64", s: shape{d: 10, p: 128, classes: 2, trees: 8, depth: 2, planes: 4, rho: 64, zeroFrac: 0.2}},
		{name: "wide features (2-byte index), 3 planes", s: shape{d: 300, p: 64, classes: 2, trees: 12, depth: 3, planes: 3, zeroFrac: 0.5, clip: true}},
		{name: "depth 1, all kept, 2 planes", s: shape{d: 3, classes: 2, trees: 30, depth: 1, planes: 2}},
	} {
		t.Run(c.name, func(t *testing.T) {
			spec := shapedSpec(uint64(c.s.d*37+c.s.trees), c.s)
			_, bd := roundTrip(t, spec, c.info, 4, 7)
			if bd.TreePlanes != c.s.planes || bd.TreeColumns != c.s.trees<<c.s.depth*c.s.planes || bd.TreeDepth != c.s.depth {
				t.Errorf("breakdown: %d planes, %d tree columns, depth %d", bd.TreePlanes, bd.TreeColumns, bd.TreeDepth)
			}
		})
	}
}

// TestFormat4Refusals replaces the trees section (or the self-test) of a
// valid format-4 bundle with bytes that break one rule.
func TestFormat4Refusals(t *testing.T) {
	lax := &DecodeOptions{AllowUnsigned: true, Now: func() time.Time { return testCreated }}
	planes, both := encodeTiny(t, tinyPlanesSpec(t)), encodeTiny(t, tinyPlanesThresholdSpec(t))
	fixtures := map[string][]byte{"planes": planes, "both": both}
	for _, c := range []struct {
		name, bundle, sec, repl string
		want                    error
		msg                     string
	}{
		{"planes 0", "planes", "trees", "02 02 00 03 00 00b8 01 0034 01 0000 01 0038", ErrInvalid, "0 tree planes, want 2..4 in format 4 (one plane is format 3)"},
		{"planes 1", "planes", "trees", "02 02 01 03 00 00b8 01 0034 01 0000 01 0038", ErrInvalid, "1 tree planes, want 2..4"},
		{"planes 5", "planes", "trees", "02 02 05 03 00 00b8 01 0034 01 0000 01 0038", ErrInvalid, "5 tree planes, want 2..4"},
		{"planes 255", "both", "trees", "01 01 ff 01 00b4", ErrInvalid, "255 tree planes"},
		{"planes 1 with thresholds", "both", "trees", "01 01 01 01 00b4", ErrInvalid, "1 tree planes"},
		{"no trees in format 4", "both", "trees", "00", ErrInvalid, "no trees in format 4"},
		{"depth 0", "planes", "trees", "02 00 02 03 00 00b8 01 0034 01 0000 01 0038", ErrInvalid, "tree depth 0"},
		{"weight 0 after the planes", "planes", "trees", "02 02 02 00 00 00b8 01 0034 01 0000 01 0038", ErrInvalid, "threshold weight 0"},
		{"feature index = D", "both", "trees", "01 01 04 02 00b4", ErrInvalid, "tree 0 level 0 tests feature 2 of 2"},
		// Σ over the kept columns of ρ·2^plane = 4·3 + 4·6 = 36.
		{"self-test score 37", "planes", "selftest", "00 4a", ErrInvalid, "score 37 outside ±36"},
		{"self-test score −37", "planes", "selftest", "00 49", ErrInvalid, "score -37 outside ±36"},
	} {
		t.Run(c.name, func(t *testing.T) {
			data := replaceSection(t, fixtures[c.bundle], c.sec, unhex(t, c.repl))
			_, err := Decode(data, lax)
			var fe *FormatError
			if !errors.Is(err, c.want) || !errors.As(err, &fe) || fe.Section != c.sec || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("Decode: %v, want %v in section %s mentioning %q", err, c.want, c.sec, c.msg)
			}
			if fe.Offset < 0 {
				t.Errorf("no position: %v", err)
			}
			if _, err := Inspect(data); err == nil {
				t.Fatal("Inspect accepts it")
			}
		})
	}
	// The bound itself is allowed (Decode does not run the self-test).
	for _, st := range []string{"00 48", "01 47"} {
		if _, err := Decode(replaceSection(t, planes, "selftest", unhex(t, st)), lax); err != nil {
			t.Errorf("self-test %s: %v", st, err)
		}
	}
	// Positions: the planes byte is right after the count and the depth.
	bd, err := Inspect(planes)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range bd.Sections {
		if s.Name != "trees" {
			continue
		}
		data := replaceSection(t, planes, "trees", unhex(t, "02 02 07 03 00 00b8 01 0034 01 0000 01 0038"))
		_, err := Decode(data, lax)
		var fe *FormatError
		if !errors.As(err, &fe) || fe.Offset != s.Offset+2 {
			t.Errorf("planes 7: %v, want byte %d", err, s.Offset+2)
		}
		data = replaceSection(t, both, "trees", unhex(t, "00"))
		_, err = Decode(data, lax)
		bdb, _ := Inspect(both)
		for _, sb := range bdb.Sections {
			if sb.Name == "trees" && (!errors.As(err, &fe) || fe.Offset != sb.Offset) {
				t.Errorf("no trees: %v, want byte %d", err, sb.Offset)
			}
		}
		// Cut inside the trees section: truncated wherever the cut is.
		for cut := s.Offset; cut < s.Offset+s.Size; cut++ {
			data := append(bytes.Clone(planes[:cut]), make([]byte, trailerSize)...)
			if _, err := Decode(data, lax); !errors.Is(err, ErrTruncated) {
				t.Errorf("cut at %d: %v, want ErrTruncated", cut, err)
			}
		}
	}
	// Cut anywhere in the body: refused, never a panic.
	for cut := 5; cut < len(planes)-trailerSize; cut++ {
		data := append(bytes.Clone(planes[:cut]), make([]byte, trailerSize)...)
		if _, err := Decode(data, lax); err == nil {
			t.Errorf("cut at %d decodes", cut)
		}
	}
	// Formats 3 and 4 differ by the planes byte: neither body decodes as
	// the other (here the planes byte read as ρ, then as a test; the depth
	// byte's successor read as planes 1).
	for name, data := range fixtures {
		v3 := bytes.Clone(data)
		v3[4] = 3
		if _, err := Decode(v3, lax); err == nil {
			t.Errorf("%s: a format-4 body decodes as format 3", name)
		}
	}
	v4 := encodeTiny(t, tinyTreeThresholdSpec(t))
	v4[4] = 4
	if _, err := Decode(v4, lax); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "1 tree planes") {
		t.Errorf("a format-3 body as format 4: %v", err)
	}
	// A version past 4 is refused at the version byte, before anything is
	// parsed: what an agent of a release before format 4 does with one.
	v5 := bytes.Clone(planes)
	v5[4] = FormatVersion + 1
	var fe *FormatError
	if _, err := Decode(v5, lax); !errors.Is(err, ErrVersion) || !errors.As(err, &fe) || fe.Offset != 4 {
		t.Errorf("format %d: %v, want ErrVersion at byte 4", FormatVersion+1, err)
	}
	for name, data := range fixtures {
		if _, err := Decode(data, lax); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
}

func TestEncodeRejectsPlanes(t *testing.T) {
	for _, c := range []struct {
		name    string
		spec    func(t testing.TB) *inference.ModelSpec
		modify  func(b *Bundle)
		section string
		want    string
	}{
		{"format 3", tinyPlanesSpec, func(b *Bundle) { b.Format = 3 }, "trees", "format 3 has no tree leaf planes (the trees have 2); write format 4"},
		{"format 2", tinyPlanesSpec, func(b *Bundle) { b.Format = 2 }, "trees", "format 2 has no trees; write format 4"},
		{"format 1", tinyPlanesSpec, func(b *Bundle) { b.Format = 1 }, "trees", "format 1 has no trees; write format 4"},
		{"format 4, one plane", tinyTreeSpec, func(b *Bundle) { b.Format = 4 }, "trees", "format 4 is for tree leaf planes, and this model has one plane; write format 3"},
		{"format 4, Planes 1", tinyTreeSpec, func(b *Bundle) { b.Format = 4; b.Spec.Trees.Planes = 1 }, "trees", "has one plane; write format 3"},
		{"format 4, no trees", tinySpec, func(b *Bundle) { b.Format = 4 }, "trees", "has no trees; write format 2"},
		{"planes 5", tinyPlanesSpec, func(b *Bundle) { b.Spec.Trees.Planes = 5 }, "model", "5 planes, want 0..4"},
		{"planes −1", tinyPlanesSpec, func(b *Bundle) { b.Spec.Trees.Planes = -1 }, "model", "-1 planes"},
		{"format 6", tinyPlanesSpec, func(b *Bundle) { b.Format = 6 }, "magic", "format version 6, this encoder writes 1..5"},
		{"format 5 uncalibrated", tinyPlanesSpec, func(b *Bundle) { b.Format = 5 }, "calibration", "format 5 is for calibrated models"},
	} {
		t.Run(c.name, func(t *testing.T) {
			spec := c.spec(t)
			if spec.Trees != nil {
				tr := *spec.Trees
				spec.Trees = &tr
			}
			b := testBundle(spec)
			c.modify(b)
			_, err := Encode(b)
			var fe *FormatError
			if !errors.Is(err, ErrInvalid) || !errors.As(err, &fe) || fe.Section != c.section || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Encode: %v, want ErrInvalid in section %s mentioning %q", err, c.section, c.want)
			}
		})
	}
	// Asked for format 4, a model with planes gets what format 0 gives.
	b := testBundle(tinyPlanesSpec(t))
	auto := encodeTiny(t, b.Spec)
	b.Format = 4
	if raw, err := Encode(b); err != nil || !bytes.Equal(raw, auto) {
		t.Errorf("Format 4: %v, same bytes as Format 0: %v", err, bytes.Equal(raw, auto))
	}
}

func TestCompactTreesKeepsPlanes(t *testing.T) {
	for _, p := range []int{0, 1, 2, 4} {
		in := &inference.Trees{Depth: 1, Feature: []uint16{0}, Value: []float32{0.1}, Planes: p}
		if out := CompactTrees(in); out.Planes != p {
			t.Errorf("Planes %d compacts to %d", p, out.Planes)
		}
	}
}
