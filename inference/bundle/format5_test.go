package bundle

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trit-iot/trit/inference"
)

// tinyCalibration is 3 bins over margins [0, 0.5), [0.5, 2), [2, ∞), of
// confidence 100, 180 and 250 (/255), unknown below 180 or above novelty
// 300 (tinySpec has no fingerprint: it gets one below).
func tinyCalibration() *inference.Calibration {
	return &inference.Calibration{Edges: []float32{0.5, 2}, Confidence: []uint8{100, 180, 250}, MinConfidence: 180, MaxNovelty: 300}
}

// calibrated returns spec with tinyCalibration and a fingerprint of its
// first kept columns.
func calibrated(spec *inference.ModelSpec) *inference.ModelSpec {
	s := *spec
	s.Fingerprint = &inference.Fingerprint{Columns: []int32{0, 1}, Rates: []uint8{10, 240}}
	s.Calibration = tinyCalibration()
	return &s
}

// TestFormat5Sections pins the calibration section and format 5's trees
// section (its planes byte always there, 1 for one plane), and that only a
// calibrated model is written as format 5 while every other model keeps
// its old format and bytes.
func TestFormat5Sections(t *testing.T) {
	plain := encodeTiny(t, calibrated(tinySpec(t)))
	trees := encodeTiny(t, calibrated(tinyTreeSpec(t)))
	planes := encodeTiny(t, calibrated(tinyPlanesSpec(t)))
	checkSections(t, []sectionCase{
		// 3 bins, edges 0.5 and 2 as f32, confidences, minimum 180 (b4),
		// maximum novelty 300 (ac 02).
		{plain, "plain", "calibration", "03 0000003f 00000040 64 b4 fa b4 ac02"},
		{plain, "plain", "trees", "00"},
		// One plane: the planes byte is 01, then ρ = 3 and the tests.
		{trees, "trees", "trees", "02 02 01 03  00 00b8  01 0034  01 0000  01 0038"},
		{planes, "planes", "trees", "02 02 02 03  00 00b8  01 0034  01 0000  01 0038"},
	})
	for name, raw := range map[string][]byte{"plain": plain, "trees": trees, "planes": planes} {
		if raw[4] != 5 {
			t.Errorf("%s: format %d, want 5", name, raw[4])
		}
		b, err := Decode(raw, &DecodeOptions{AllowUnsigned: true, Now: func() time.Time { return testCreated }})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(b.Spec.Calibration, tinyCalibration()) {
			t.Errorf("%s: calibration %+v", name, b.Spec.Calibration)
		}
		if b.Spec.Trees != nil && b.Spec.Trees.Planes == 1 {
			t.Errorf("%s: one plane decoded as Planes 1, want 0", name)
		}
		again, err := Encode(b)
		if err != nil || !bytes.Equal(again, raw) {
			t.Errorf("%s: re-encoding: %v, same bytes %v", name, err, bytes.Equal(again, raw))
		}
	}
	// Without the calibration the same models keep formats 2, 3, 4.
	for spec, want := range map[*inference.ModelSpec]byte{tinySpec(t): 2, tinyTreeSpec(t): 3, tinyPlanesSpec(t): 4} {
		if raw := encodeTiny(t, spec); raw[4] != want {
			t.Errorf("uncalibrated model: format %d, want %d", raw[4], want)
		}
	}
	if got := MinAgentVersionFor(calibrated(tinySpec(t))); got != "0.5.0" {
		t.Errorf("MinAgentVersionFor a calibrated model = %q, want 0.5.0", got)
	}
	// Asked for format 4, a calibrated model is refused.
	b := testBundle(calibrated(tinyPlanesSpec(t)))
	b.Format = 4
	if _, err := Encode(b); err == nil || !strings.Contains(err.Error(), "format 4 has no calibration; write format 5") {
		t.Errorf("format 4 with a calibration: %v", err)
	}
}

// TestFormat5Refused: every field of the calibration section is checked at
// its byte, and an agent that reads formats 1..4 names the version.
func TestFormat5Refused(t *testing.T) {
	good := encodeTiny(t, calibrated(tinySpec(t)))
	noPrint := calibrated(tinySpec(t))
	noPrint.Fingerprint, noPrint.Calibration.MaxNovelty = nil, 0
	for _, c := range []struct {
		name, section, want string
	}{
		{"00", "calibration", "0 calibration bins"},
		{"11", "calibration", "17 calibration bins"},
		{"03 00000040 0000003f 64 b4 fa b4 ac02", "calibration", "edge 1 is 0.5"},
		{"03 00000080 00000040 64 b4 fa b4 ac02", "calibration", "edge 0 is -0"},
		{"03 0000c07f 00000040 64 b4 fa b4 ac02", "calibration", "edge 0 is NaN"},
		{"03 0000003f 0000807f 64 b4 fa b4 ac02", "calibration", "edge 1 is +Inf"},
		{"03 0000003f 00000040 64 fa fa b4 ac02", "calibration", "bin 2's confidence 250 is not above"},
		{"03 0000003f 00000040 64 b4 fa b4 fdf710", "calibration", "maximum novelty 277501, at most 277500"}, // 255·1,024 + 2·4,095·2 features
		{"23 0000003f 00000040 64 b4 fa b4 ac02", "calibration", "sets bit 5"},
		{"a3 0000003f 00000040 64 b4 fa b4 ac02", "calibration", "sets bit 5"},
		{"80 0000003f 00000040 64 b4 fa b4 ac02", "calibration", "0 calibration bins"},
		{"83 0000003f 00000040 64 b4 fa b4 ac02 00", "calibration", "out-of-range weight 0, want 1..4095"},
		{"83 0000003f 00000040 64 b4 fa b4 ac02 8020", "calibration", "out-of-range weight 4096, want 1..4095"},
		{"83 0000003f 00000040 64 b4 fa b4 ac02", "calibration", "out-of-range weight"}, // runs into the info,
	} {
		bad := replaceSection(t, good, "calibration", unhex(t, c.name))
		_, err := Decode(bad, &DecodeOptions{AllowUnsigned: true, Now: func() time.Time { return testCreated }})
		var fe *FormatError
		if err == nil || !errors.As(err, &fe) || fe.Section != c.section || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want a %s error mentioning %q", c.name, err, c.section, c.want)
		}
	}
	// Offsets (bit 6): one zigzag varint per weight vector (tinySpec has
	// three classes: three vectors), not all zero, at most MaxOffset.
	withOffsets := calibrated(tinySpec(t))
	withOffsets.Calibration.Offsets = []int32{-3, 0, 2}
	raw := encodeTiny(t, withOffsets)
	checkSections(t, []sectionCase{{raw, "offsets", "calibration", "43 0000003f 00000040 64 b4 fa b4 ac02 05 00 04"}})
	ob, err := Decode(raw, &DecodeOptions{AllowUnsigned: true, Now: func() time.Time { return testCreated }})
	if err != nil || !reflect.DeepEqual(ob.Spec.Calibration.Offsets, []int32{-3, 0, 2}) {
		t.Fatalf("offsets round trip: %v %+v", err, ob.Spec.Calibration)
	}
	if again, err := Encode(ob); err != nil || !bytes.Equal(again, raw) {
		t.Errorf("re-encoding the offsets: %v, same bytes %v", err, bytes.Equal(again, raw))
	}
	// The self-test scores include the offsets, so an offset larger than
	// the kept columns (11 here) takes a score past ±11: the score's
	// limit grows by its vector's offset (a fuzzer's find: such a bundle
	// was refused by the decoder it was encoded for).
	far := calibrated(tinySpec(t))
	far.Calibration.Offsets = []int32{-1000, 0, 500}
	fb, err := Decode(encodeTiny(t, far), &DecodeOptions{AllowUnsigned: true, Now: func() time.Time { return testCreated }})
	if err != nil {
		t.Fatalf("offsets past the kept columns: %v", err)
	}
	if s := fb.SelfTest.Scores; s[0] > -1000+11 || s[0] < -1000-11 || s[2] < 500-11 {
		t.Fatalf("self-test scores %v do not include the offsets -1000, 0, 500", s)
	}
	for c, score := range map[int]int64{0: -1012, 1: 12, 2: 512} {
		scores := slices.Clone(fb.SelfTest.Scores)
		scores[c] = int32(score)
		st := binary.AppendUvarint(nil, uint64(fb.SelfTest.Class))
		for _, s := range scores {
			st = binary.AppendVarint(st, int64(s))
		}
		bad := replaceSection(t, encodeTiny(t, far), "selftest", st)
		_, err := Decode(bad, &DecodeOptions{AllowUnsigned: true, Now: func() time.Time { return testCreated }})
		var fe *FormatError
		want := fmt.Sprintf("vector %d: score %d outside ±%d", c, score, 11+[]int{1000, 0, 500}[c])
		if !errors.As(err, &fe) || fe.Section != "selftest" || !strings.Contains(err.Error(), want) {
			t.Errorf("score %d for vector %d: %v, want a selftest error %q", score, c, err, want)
		}
	}
	for _, c := range []struct{ section, want string }{
		{"43 0000003f 00000040 64 b4 fa b4 ac02 00 00 00", "offsets flagged but all zero"},
		{"43 0000003f 00000040 64 b4 fa b4 ac02 00 82808010 00", "offset 1 is 16777217"},
		{"43 0000003f 00000040 64 b4 fa b4 ac02 05 00", "truncated"}, // the third offset eats the info section
	} {
		bad := replaceSection(t, good, "calibration", unhex(t, c.section))
		if _, err := Decode(bad, &DecodeOptions{AllowUnsigned: true, Now: func() time.Time { return testCreated }}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.section, err, c.want)
		}
	}
	zero := calibrated(tinySpec(t))
	zero.Calibration.Offsets = []int32{0, 0, 0}
	if _, err := Encode(testBundle(zero)); err == nil || !strings.Contains(err.Error(), "offsets all zero") {
		t.Errorf("all-zero offsets encoded: %v", err)
	}
	// A novelty threshold needs a fingerprint.
	np := encodeTiny(t, noPrint)
	bad := replaceSection(t, np, "calibration", unhex(t, "03 0000003f 00000040 64 b4 fa b4 05"))
	if _, err := Decode(bad, &DecodeOptions{AllowUnsigned: true, Now: func() time.Time { return testCreated }}); err == nil || !strings.Contains(err.Error(), "without a fingerprint") {
		t.Errorf("novelty without a fingerprint: %v", err)
	}
	// With the out-of-range bit (0x80) it needs none: the features' own
	// training ranges measure novelty.
	ok := replaceSection(t, np, "calibration", unhex(t, "83 0000003f 00000040 64 b4 fa b4 05 a001"))
	b, err := Decode(ok, &DecodeOptions{AllowUnsigned: true, Now: func() time.Time { return testCreated }})
	if err != nil {
		t.Fatalf("novelty without a fingerprint, out-of-range bit set: %v", err)
	}
	if c := b.Spec.Calibration; c.Outside != 160 || c.MaxNovelty != 5 || len(c.Confidence) != 3 {
		t.Errorf("decoded %+v, want out-of-range weight 160, 3 bins, maximum novelty 5", c)
	}
	if again, err := Encode(b); err != nil || !bytes.Equal(again, ok) {
		t.Errorf("re-encoding the out-of-range calibration: %v, same bytes %v", err, bytes.Equal(again, ok))
	}
	// Format 5's planes byte: 0 and 5 are refused.
	trees := encodeTiny(t, calibrated(tinyTreeSpec(t)))
	for _, p := range []string{"00", "05"} {
		bad := replaceSection(t, trees, "trees", unhex(t, "02 02 "+p+" 03  00 00b8  01 0034  01 0000  01 0038"))
		if _, err := Decode(bad, &DecodeOptions{AllowUnsigned: true, Now: func() time.Time { return testCreated }}); err == nil || !strings.Contains(err.Error(), "tree planes, want 1..4") {
			t.Errorf("planes byte %s: %v", p, err)
		}
	}
	// What an agent of the previous release (formats 1..4) says: the
	// version check is the same code with FormatVersion 4.
	v6 := bytes.Clone(good)
	v6[4] = 6
	_, err = Decode(v6, &DecodeOptions{AllowUnsigned: true})
	if !errors.Is(err, ErrVersion) || !strings.Contains(err.Error(), "format version 6, this decoder reads 1 to 5") {
		t.Errorf("format 6: %v", err)
	}
}

// goldenV5File is the JSON beside a format-5 golden: inputs and what every
// architecture must compute for them.
type goldenV5File struct {
	Inputs   [][]float32 `json:"inputs"`
	Classes  []int       `json:"classes"`
	Margins  []uint32    `json:"margin_bits"` // float32 bits of the margin
	Bins     []int       `json:"bins"`
	Conf     []uint8     `json:"confidence"`
	Novelty  []uint32    `json:"novelty"`
	Unknown  []bool      `json:"unknown"`
	Embedded []string    `json:"embedding"`
}

// goldenV5Cases: sensor-v5 is sensor-v2 (5 features, thresholds only, 3
// classes) and machine-v5 a two-class model with one-plane trees,
// thresholds and random features, each with a 6-bin calibration whose
// edges are the margins' quantiles on the golden inputs and a fingerprint
// of every third kept column; generated on amd64 by `go test
// ./inference/bundle -run GoldenV5 -update`, checked on every
// architecture (make test-arm).
var goldenV5Cases = []struct {
	name  string
	seed  uint64
	shape shape
}{
	{"sensor-v5", 12, shape{d: 5, classes: 3, thresholds: 32, zeroFrac: 0.3, clip: true}},
	{"machine-v5", 15, shape{d: 12, p: 128, classes: 2, thresholds: 2, trees: 16, depth: 3, rho: 2, zeroFrac: 0.3, clip: true}},
	// Outside: the novelty adds the out-of-range term (the inputs reach
	// half a range past either end).
	{"sensor-v5-outside", 12, shape{d: 5, classes: 3, thresholds: 32, zeroFrac: 0.3, clip: true}},
	// Offsets: each class's raw score moved by an integer (calibration
	// bit 6), which changes some answers.
	{"sensor-v5-offsets", 12, shape{d: 5, classes: 3, thresholds: 32, zeroFrac: 0.3, clip: true}},
	{"machine-v5-offsets", 15, shape{d: 12, p: 128, classes: 2, thresholds: 2, trees: 16, depth: 3, rho: 2, zeroFrac: 0.3, clip: true}},
}

func goldenV5Bundle(t *testing.T, seed uint64, s shape, name string) *Bundle {
	spec := shapedSpec(seed, s)
	fp := &inference.Fingerprint{}
	for i := 0; i < len(spec.Kept); i += 3 {
		fp.Columns = append(fp.Columns, int32(i))
		fp.Rates = append(fp.Rates, uint8(i*37))
	}
	spec.Fingerprint = fp
	var offsets []int32
	if strings.HasSuffix(name, "-offsets") {
		// Offsets of about a quarter of the raw scores' spread, alternating
		// in sign, set before the margins' quantiles are taken.
		m, err := inference.New(spec)
		if err != nil {
			t.Fatal(err)
		}
		raw := make([]int32, len(spec.Sign))
		lo, hi := int32(math.MaxInt32), int32(math.MinInt32)
		for _, x := range goldenV2Inputs(spec.Scaler, 64) {
			m.PredictRaw(raw, x)
			lo, hi = min(lo, raw[0]), max(hi, raw[0])
		}
		for c := range spec.Sign {
			offsets = append(offsets, (hi-lo)/4*int32(1-2*(c%2)))
		}
		spec.Calibration = &inference.Calibration{Confidence: []uint8{1}, Offsets: offsets}
	}
	m, err := inference.New(spec)
	if err != nil {
		t.Fatal(err)
	}
	var margins []float32
	var novelty []uint32
	for _, x := range goldenV2Inputs(spec.Scaler, 64) {
		o, err := m.PredictOutcome(nil, nil, x, inference.Thresholds{})
		if err != nil {
			t.Fatal(err)
		}
		margins, novelty = append(margins, o.Margin), append(novelty, o.Novelty)
	}
	slices.Sort(margins)
	slices.Sort(novelty)
	cal := &inference.Calibration{MinConfidence: 120, MaxNovelty: novelty[len(novelty)*3/4]}
	if strings.HasSuffix(name, "-outside") {
		// The threshold from the novelty with the out-of-range term.
		cal.Outside = 300
		spec.Calibration = &inference.Calibration{Confidence: []uint8{1}, Outside: cal.Outside}
		m, err := inference.New(spec)
		if err != nil {
			t.Fatal(err)
		}
		novelty = novelty[:0]
		for _, x := range goldenV2Inputs(spec.Scaler, 64) {
			o, _ := m.PredictOutcome(nil, nil, x, inference.Thresholds{})
			novelty = append(novelty, o.Novelty)
		}
		slices.Sort(novelty)
		cal.MaxNovelty = novelty[len(novelty)*3/4]
	}
	for k := 1; k < 6; k++ {
		if e := margins[k*len(margins)/6]; len(cal.Edges) == 0 || e > cal.Edges[len(cal.Edges)-1] {
			cal.Edges = append(cal.Edges, e)
		}
	}
	for k := range len(cal.Edges) + 1 {
		cal.Confidence = append(cal.Confidence, uint8(90+30*k))
	}
	cal.Offsets = offsets
	spec.Calibration = cal
	b := testBundle(spec)
	b.Compat.MinAgentVersion = "0.5.0"
	b.Header.ModelID = name
	b.Header.ExpiresAt = time.Time{}
	return b
}

// TestGoldenV5 checks on this machine the margins, bins, confidences,
// novelty and unknown decisions amd64 computed for the format-5 goldens,
// bit for bit, and that they re-encode to their bytes.
func TestGoldenV5(t *testing.T) {
	pub, priv := testKey(t)
	for _, c := range goldenV5Cases {
		t.Run(c.name, func(t *testing.T) {
			if *update {
				b := goldenV5Bundle(t, c.seed, c.shape, c.name)
				data := signed(t, b, priv)
				m, err := inference.New(b.Spec)
				if err != nil {
					t.Fatal(err)
				}
				g := goldenV5File{Inputs: goldenV2Inputs(b.Spec.Scaler, 24)}
				for _, x := range g.Inputs {
					o, err := m.PredictOutcome(nil, nil, x, m.Thresholds())
					if err != nil {
						t.Fatal(err)
					}
					h, _ := embedHex(t, m, x)
					g.Classes, g.Margins, g.Bins = append(g.Classes, o.Class), append(g.Margins, math.Float32bits(o.Margin)), append(g.Bins, o.Bin)
					g.Conf, g.Novelty, g.Unknown = append(g.Conf, o.Confidence), append(g.Novelty, o.Novelty), append(g.Unknown, o.Unknown)
					g.Embedded = append(g.Embedded, h)
				}
				js, err := json.MarshalIndent(g, "", "\t")
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(goldenPath(c.name+".trit"), data, 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(goldenPath(c.name+".json"), append(js, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			data, err := os.ReadFile(goldenPath(c.name + ".trit"))
			if err != nil {
				t.Fatalf("%v (run with -update to create)", err)
			}
			js, err := os.ReadFile(goldenPath(c.name + ".json"))
			if err != nil {
				t.Fatal(err)
			}
			var g goldenV5File
			if err := json.Unmarshal(js, &g); err != nil {
				t.Fatal(err)
			}
			b, err := Decode(data, trusting(t, pub))
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if b.Format != 5 || b.Spec.Calibration == nil {
				t.Fatalf("format %d, calibration %v", b.Format, b.Spec.Calibration)
			}
			m, err := inference.New(b.Spec)
			if err != nil {
				t.Fatal(err)
			}
			if err := SelfTest(m, b); err != nil {
				t.Fatalf("SelfTest: %v", err)
			}
			n := len(g.Inputs)
			if n == 0 || len(g.Classes) != n || len(g.Margins) != n || len(g.Bins) != n || len(g.Conf) != n || len(g.Novelty) != n || len(g.Unknown) != n || len(g.Embedded) != n {
				t.Fatal("golden JSON lists differ in length")
			}
			bins, unknown := map[int]bool{}, 0
			for i, x := range g.Inputs {
				o, err := m.PredictOutcome(nil, nil, x, m.Thresholds())
				if err != nil {
					t.Fatal(err)
				}
				if h, _ := embedHex(t, m, x); h != g.Embedded[i] {
					t.Errorf("input %d: embedding differs from amd64's", i)
				}
				if o.Class != g.Classes[i] || math.Float32bits(o.Margin) != g.Margins[i] || o.Bin != g.Bins[i] || o.Confidence != g.Conf[i] || o.Novelty != g.Novelty[i] || o.Unknown != g.Unknown[i] {
					t.Errorf("input %d: %+v (margin bits %#x), want class %d, margin bits %#x, bin %d, confidence %d, novelty %d, unknown %v",
						i, o, math.Float32bits(o.Margin), g.Classes[i], g.Margins[i], g.Bins[i], g.Conf[i], g.Novelty[i], g.Unknown[i])
				}
				bins[o.Bin] = true
				if o.Unknown {
					unknown++
				}
			}
			// The goldens are meant to reach several bins and both answers.
			if len(bins) < 3 || unknown == 0 || unknown == n {
				t.Errorf("%d bins reached, %d of %d unknown", len(bins), unknown, n)
			}
			if again := signed(t, b, priv); !bytes.Equal(again, data) {
				t.Error("re-encoding the decoded bundle gives different bytes")
			}
		})
	}
}
