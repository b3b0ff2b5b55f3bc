package bundle

import (
	"bytes"
	"encoding/hex"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trit-iot/trit/inference"
)

// The byte-exact fixtures of format 2: tiny models whose new sections are
// written out by hand in the tests below (docs/BUNDLE.md is the reference).

// tinySpec: 2 clipped features, thresholds {-0.5, 0.25} and {0} (NT = 3),
// p = 8 (11 columns), 3 classes: vector 0 and 2 have zeros (base 3),
// vector 1 none (sign plane only).
func tinySpec(t testing.TB) *inference.ModelSpec {
	t.Helper()
	base := &inference.ModelSpec{
		Classes:    []string{"a", "b", "c"},
		Scaler:     inference.Scaler{Lo: []float32{0, -10}, Hi: []float32{40, 10}, Clip: true},
		Thresholds: [][]float32{{-0.5, 0.25}, {0}},
		Transform:  inference.TransformSpec{Generator: inference.GeneratorV1, Seed: 5, Sigma: 1, D: 2, P: 8},
	}
	return mustSpec(t, base, [][]int8{
		{1, -1, 0, 1, 0, -1, -1, 1, 0, 0, 1},
		{1, 1, -1, -1, 1, -1, 1, 1, -1, 1, -1},
		{0, 1, 0, -1, 0, 0, 0, 0, 0, 1, 0},
	}, []float32{0.5, 1, 2})
}

// tinyThresholdSpec: the same thresholds, no random features (P = 0), two
// classes; column 1 has weight 0, so 2 of 3 columns are kept.
func tinyThresholdSpec(t testing.TB) *inference.ModelSpec {
	t.Helper()
	base := &inference.ModelSpec{
		Classes:    []string{"idle", "busy"},
		Features:   []string{"temp", "hum"},
		Scaler:     inference.Scaler{Lo: []float32{0, -10}, Hi: []float32{40, 10}, Clip: true},
		Thresholds: [][]float32{{-0.5, 0.25}, {0}},
	}
	return mustSpec(t, base, [][]int8{{1, 0, -1}}, []float32{0.25})
}

// tinyProjectionSpec: 2 unclipped features projected to 2 (row 0 = (+1,
// −1), no zero; row 1 = (0, +1)), p = 4, two classes.
func tinyProjectionSpec(t testing.TB) *inference.ModelSpec {
	t.Helper()
	p := &inference.Projection{Scale: []float32{0.5, 2}, Bias: []float32{0, -1}}
	for _, row := range [][]int8{{1, -1}, {0, 1}} {
		s, nz := make([]uint64, 1), make([]uint64, 1)
		inference.PackTernary(s, nz, row)
		p.Sign, p.NonZero = append(p.Sign, s), append(p.NonZero, nz)
	}
	base := &inference.ModelSpec{
		Classes:    []string{"no", "yes"},
		Scaler:     inference.Scaler{Lo: []float32{0, -10}, Hi: []float32{40, 10}},
		Projection: p,
		Transform:  inference.TransformSpec{Generator: inference.GeneratorV1, Seed: 9, Sigma: 2, D: 2, P: 4},
	}
	return mustSpec(t, base, [][]int8{{1, -1, 1, 1}}, []float32{1})
}

func mustSpec(t testing.TB, base *inference.ModelSpec, w [][]int8, alpha []float32) *inference.ModelSpec {
	t.Helper()
	spec, err := inference.NewSpec(base, w, alpha)
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

var tinyInfo = map[string]string{"train.accuracy": "0.97", "read": "header=1"}

// tinyBundles are the fixtures, encoded unsigned.
func tinyBundles(t testing.TB) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for name, spec := range map[string]*inference.ModelSpec{
		"tiny": tinySpec(t), "thresholds": tinyThresholdSpec(t), "projection": tinyProjectionSpec(t),
	} {
		b := testBundle(spec)
		if name == "tiny" {
			b.Info = tinyInfo
		}
		raw, err := Encode(b)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out[name] = raw
	}
	return out
}

// section returns the bytes of the named section of a bundle.
func section(t testing.TB, data []byte, name string) []byte {
	t.Helper()
	bd, err := Inspect(data)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range bd.Sections {
		if s.Name == name {
			return data[s.Offset : s.Offset+s.Size]
		}
	}
	t.Fatalf("no %s section", name)
	return nil
}

// replaceSection returns an unsigned copy of data with the named section's
// bytes replaced by repl.
func replaceSection(t testing.TB, data []byte, name string, repl []byte) []byte {
	t.Helper()
	bd, err := Inspect(data)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range bd.Sections {
		if s.Name == name {
			out := append(bytes.Clone(data[:s.Offset]), repl...)
			out = append(out, data[s.Offset+s.Size:]...)
			clear(out[len(out)-trailerSize:])
			return out
		}
	}
	t.Fatalf("no %s section", name)
	return nil
}

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// asciiHex is the uvarint length and bytes of s, in hex.
func asciiHex(s string) string { return hex.EncodeToString(appendString(nil, s)) }

// TestFormat2Sections pins the new sections of the fixtures byte for byte.
func TestFormat2Sections(t *testing.T) {
	bundles := tinyBundles(t)
	for _, c := range []struct{ bundle, section, want string }{
		// form float16, flags clip; lo 0, −10; hi 40, 10.
		{"tiny", "scaler", "00 01  0000 00c9  0051 0049"},
		// float16; feature 0: 2 thresholds −0.5 (b800), 0.25 (3400);
		// feature 1: 1 threshold, 0.
		// Form 1, weight ρ = 1; feature 0: −0.5, 0.25; feature 1: 0.
		{"tiny", "thresholds", "01 01  02 00b8 0034  01 0000"},
		{"tiny", "projection", "00"},
		// generator 1, seed 5, σ 1.0, D 2, P 8.
		{"tiny", "transform", "01 0500000000000000 000000000000f03f 02 08"},
		// 11 of 11 columns: the all-columns form (1 byte).
		{"tiny", "kept", "02"},
		// Vector 0, base 3: trits (1,2,0,1,0)=34, (2,2,1,0,0)=17, (1)=1.
		// Vector 1, no zero: sign plane 0b011010011, bit 9.
		// Vector 2, base 3: (0,1,0,2,0)=57, (0,0,0,0,1)=81, (0)=0.
		{"tiny", "weights", "02 221101  01 d302  02 395100"},
		{"tiny", "alpha", "0000003f 0000803f 00000040"},
		{"tiny", "info", "02 " + asciiHex("read") + asciiHex("header=1") + asciiHex("train.accuracy") + asciiHex("0.97")},

		{"thresholds", "scaler", "00 01  0000 00c9  0051 0049"},
		// P = 0: every transform field 0.
		{"thresholds", "transform", "00 0000000000000000 0000000000000000 00 00"},
		// Columns 0 and 2 of 3.
		{"thresholds", "kept", "00 05"},
		// One vector (+1, −1) over the kept columns: sign plane only.
		{"thresholds", "weights", "01 01"},
		{"thresholds", "info", "00"},

		{"projection", "scaler", "00 00  0000 00c9  0051 0049"},
		{"projection", "thresholds", "00"},
		// 2 outputs; row 0 (+1, −1) sign plane 01, scale 0.5, bias 0;
		// row 1 (0, +1) base 3 (0,1)=3, scale 2, bias −1.
		{"projection", "projection", "01 02  01 01 0000003f 00000000  02 03 00000040 000080bf"},
		{"projection", "transform", "01 0900000000000000 0000000000000040 02 04"},
		{"projection", "kept", "02"},
		{"projection", "weights", "01 0d"},
	} {
		got := section(t, bundles[c.bundle], c.section)
		if want := unhex(t, c.want); !bytes.Equal(got, want) {
			t.Errorf("%s: %s section = % x, want % x", c.bundle, c.section, got, want)
		}
	}
	for name, data := range bundles {
		if data[4] != 2 {
			t.Errorf("%s: format version %d, want 2", name, data[4])
		}
	}
}

// TestFormat2Refusals replaces one section of a valid fixture with bytes
// that break one rule, and expects Decode to refuse them where the rule
// is.
func TestFormat2Refusals(t *testing.T) {
	bundles := tinyBundles(t)
	lax := &DecodeOptions{AllowUnsigned: true, Now: func() time.Time { return testCreated }}
	info := func(pairs ...string) string {
		s := hex.EncodeToString([]byte{byte(len(pairs) / 2)})
		for _, p := range pairs {
			s += asciiHex(p)
		}
		return s
	}
	for _, c := range []struct {
		name, bundle, section, repl string
		want                        error
		msg                         string
	}{
		{"scaler flag", "tiny", "scaler", "00 03 0000 00c9 0051 0049", ErrInvalid, "unknown scaler flags"},
		{"thresholds form", "tiny", "thresholds", "02 02 00b8 0034 01 0000", ErrInvalid, "thresholds form 2"},
		{"thresholds descending", "tiny", "thresholds", "01 01 02 0034 00b8 01 0000", ErrInvalid, "not above the previous"},
		{"thresholds equal", "tiny", "thresholds", "01 01 02 00b8 00b8 01 0000", ErrInvalid, "not above the previous"},
		{"threshold 1", "tiny", "thresholds", "01 01 02 00b8 003c 01 0000", ErrInvalid, "not strictly inside"},
		{"threshold -1", "tiny", "thresholds", "01 01 02 00bc 0034 01 0000", ErrInvalid, "not strictly inside"},
		{"threshold NaN", "tiny", "thresholds", "01 01 02 00b8 007e 01 0000", ErrInvalid, "not strictly inside"},
		{"threshold -0", "tiny", "thresholds", "01 01 02 00b8 0034 01 0080", ErrInvalid, "-0"},
		{"form 1, no threshold", "thresholds", "thresholds", "01 01 00 00", ErrInvalid, "write form 0"},
		{"threshold count", "tiny", "thresholds", "01 01 7f 00b8", ErrTruncated, "threshold count"},
		{"fingerprint gap 0", "tiny", "fingerprint", "01 00 80", ErrInvalid, "gap 0"},
		{"fingerprint past the kept columns", "tiny", "fingerprint", "02 05 07 80 80", ErrInvalid, "must ascend below the 11 kept"},
		{"fingerprint count", "tiny", "fingerprint", "0c", ErrInvalid, "want 0..11"},
		{"threshold weight 0", "tiny", "thresholds", "01 00 02 00b8 0034 01 0000", ErrInvalid, "threshold weight 0"},
		{"threshold weight 65", "tiny", "thresholds", "01 41 02 00b8 0034 01 0000", ErrInvalid, "threshold weight 65"},
		{"projection form", "projection", "projection", "02", ErrInvalid, "projection form 2"},
		{"projection outputs 0", "projection", "projection", "01 00", ErrInvalid, "projection outputs: 0"},
		{"projection row as planes", "projection", "projection", "01 02 01 01 0000003f 00000000 00 02 02 00000040 000080bf", ErrInvalid, "canonical"},
		{"projection NaN scale", "projection", "projection", "01 02 01 01 0000c07f 00000000 02 03 00000040 000080bf", ErrInvalid, "want finite"},
		{"projection, p = 0", "projection", "transform", "00 0000000000000000 0000000000000000 00 00", ErrInvalid, "p = 0 and no thresholds"},
		{"transform D", "projection", "transform", "01 0900000000000000 0000000000000040 03 04", ErrInvalid, "projection's output count is 2"},
		{"p = 0, seed", "thresholds", "transform", "00 0100000000000000 0000000000000000 00 00", ErrInvalid, "each must be 0"},
		{"p = 0, σ = -0", "thresholds", "transform", "00 0000000000000000 0000000000000080 00 00", ErrInvalid, "each must be 0"},
		{"p = 0, D", "thresholds", "transform", "00 0000000000000000 0000000000000000 02 00", ErrInvalid, "each must be 0"},
		{"p = 0, generator", "thresholds", "transform", "01 0000000000000000 0000000000000000 00 00", ErrInvalid, "each must be 0"},
		{"kept as a gap list", "tiny", "kept", "01 0b 0101010101010101010101", ErrInvalid, "all-columns form is smaller"},
		{"all kept as a bitmap", "tiny", "kept", "00 ff 07", ErrInvalid, "all-columns form is smaller"},
		{"kept form 3", "tiny", "kept", "03", ErrInvalid, "want 0 (bitmap), 1 (deltas) or 2 (all)"},
		{"kept as a gap list, p = 0", "thresholds", "kept", "01 02 01 02", ErrInvalid, "bitmap is smaller"},
		{"base-3 byte 243", "tiny", "weights", "02 f31101 01 d302 02 395100", ErrInvalid, "want < 243"},
		{"base-3 padding", "tiny", "weights", "02 221104 01 d302 02 395100", ErrInvalid, "past the last of 11"},
		{"planes where base 3 is smaller", "tiny", "weights", "00 8904 eb04 01 d302 02 395100", ErrInvalid, "base3 form (3 bytes) is the canonical"},
		{"base 3 where the sign plane is smaller", "tiny", "weights", "02 221101 02 9d9502 02 395100", ErrInvalid, "sign form (2 bytes) is the canonical"},
		{"all-ones non-zero plane", "tiny", "weights", "02 221101 00 d302 ff07 02 395100", ErrInvalid, "sign form (2 bytes) is the canonical"},
		{"sign bit where 0", "tiny", "weights", "00 8d04 eb04 01 d302 02 395100", ErrInvalid, "sign bit set where the weight is 0"},
		{"unknown flags", "tiny", "weights", "04 221101 01 d302 02 395100", ErrInvalid, "flags 0x4"},
		{"flags 3", "tiny", "weights", "03 221101 01 d302 02 395100", ErrInvalid, "flags 0x3"},
		{"info order", "tiny", "info", info("train.accuracy", "0.97", "read", "header=1"), ErrInvalid, "keys must ascend"},
		{"info duplicate", "tiny", "info", info("read", "a", "read", "b"), ErrInvalid, "keys must ascend"},
		{"info upper case", "tiny", "info", info("Read", "a"), ErrInvalid, "not one of a-z"},
		{"info space", "tiny", "info", info("train accuracy", "a"), ErrInvalid, "not one of a-z"},
		{"info empty key", "tiny", "info", info("", "a"), ErrInvalid, "info key: empty"},
		{"info long key", "tiny", "info", info(strings.Repeat("k", 65), "a"), ErrInvalid, "info key length: 65"},
		{"info newline", "tiny", "info", info("read", "a\nb"), ErrInvalid, "control character"},
		{"info tab", "tiny", "info", info("read", "a\tb"), ErrInvalid, "control character"},
		{"info UTF-8", "tiny", "info", info("read", "a\xffb"), ErrInvalid, "UTF-8"},
		{"info long value", "tiny", "info", info("read", strings.Repeat("v", 4097)), ErrInvalid, "info value length: 4097"},
		{"info pairs", "tiny", "info", "41" + strings.Repeat(asciiHex("k")+asciiHex(""), 65), ErrInvalid, "info pairs: 65"},
		{"trailing after info", "tiny", "info", "00 00", ErrTrailing, "info section"},
	} {
		t.Run(c.name, func(t *testing.T) {
			data := replaceSection(t, bundles[c.bundle], c.section, unhex(t, c.repl))
			_, err := Decode(data, lax)
			var fe *FormatError
			if !errors.Is(err, c.want) || !errors.As(err, &fe) || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("Decode: %v, want %v mentioning %q", err, c.want, c.msg)
			}
			if _, err := Inspect(data); err == nil {
				t.Fatal("Inspect accepts it")
			}
		})
	}
	// The untouched fixtures decode.
	for name, data := range bundles {
		if _, err := Decode(data, lax); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	// The edge values the refusals border on decode: a longest key, a
	// longest value, 64 pairs, thresholds next to ±1.
	long := map[string]string{strings.Repeat("k", MaxInfoKey): strings.Repeat("é", MaxInfoValue/2)}
	for i := range MaxInfoPairs - 1 {
		long[string(rune('a'+i%26))+strings.Repeat("x", i/26)] = ""
	}
	edge := testBundle(tinySpec(t))
	edge.Info = long
	edge.Spec.Thresholds = [][]float32{{halfToFloat32(0xbbff), 0.25}, {halfToFloat32(0x3bff)}}
	raw, err := Encode(edge)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Decode(raw, lax)
	if err != nil || !reflect.DeepEqual(got.Info, long) {
		t.Fatalf("edge values: %v", err)
	}
}

// TestFormat1AcceptsWhatFormat2Refuses: the legacy layout's looser rules
// stay (a shipped all-ones non-zero plane, sign bits where the weight is
// 0), so old bundles keep decoding.
func TestFormat1AcceptsWhatFormat2Refuses(t *testing.T) {
	// Dense 3-class model: every vector in the sign-plane form.
	spec := randomSpec(71, 4, 16, 3, 0, false)
	b := testBundle(spec)
	b.Format = 1
	v1, err := Encode(b)
	if err != nil {
		t.Fatal(err)
	}
	if v1[4] != 1 {
		t.Fatalf("format %d, want 1", v1[4])
	}
	w := section(t, v1, "weights")
	if !bytes.Equal(w[:1], []byte{packSign}) || len(w) != 3*3 {
		t.Fatalf("weights section % x: want three sign-plane vectors", w)
	}
	lax := &DecodeOptions{AllowUnsigned: true, Now: func() time.Time { return testCreated }}
	// Vector 0 with its all-ones non-zero plane shipped, and a sign bit
	// where a weight is 0 — after zeroing weight 0 of vector 0 (not of the
	// other vectors, so the column stays kept).
	repl := append([]byte{packPlanes, w[1], w[2], 0xfe, 0xff}, w[3:]...)
	data := replaceSection(t, v1, "weights", repl)
	got, err := Decode(data, lax)
	if err != nil {
		t.Fatalf("format 1: %v", err)
	}
	bd, err := Inspect(data)
	if err != nil {
		t.Fatal(err)
	}
	if v := bd.Vectors[0]; v.Form != "planes" || v.Zero != 1 || v.SignBitsIgnored != int(w[1]&1) {
		t.Fatalf("vector 0: %+v", v)
	}
	// Format 2 of the same model writes canonical forms and masks the sign
	// bit; encoding it as format 1 again gives the same weights back.
	got.Format = 0
	v2, err := Encode(got)
	if err != nil {
		t.Fatal(err)
	}
	if w2 := section(t, v2, "weights"); w2[0] != packBase3 && w2[0] != packPlanes {
		t.Fatalf("format-2 vector 0 form %d", w2[0])
	}
	got.Format = 1
	again, err := Encode(got)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(section(t, again, "weights"), repl) {
		t.Fatal("format 1 does not re-encode to its own weights")
	}
	// The same bytes labelled format 2 are refused (besides having no
	// format-2 sections, the planes are not canonical).
	if _, err := Decode(append(append([]byte(nil), data[:4]...), append([]byte{2}, data[5:]...)...), lax); err == nil {
		t.Fatal("a format-1 body labelled 2 decodes")
	}
}

func TestRoundTripFormat2(t *testing.T) {
	pub, priv := testKey(t)
	for _, c := range []struct {
		name  string
		s     shape
		info  map[string]string
		forms []string // expected form of every weight vector ("" = any)
	}{
		{name: "thresholds only", s: shape{d: 5, classes: 2, thresholds: 12, zeroFrac: 0.2, clip: true, named: true},
			info: map[string]string{"read": "header=1,delimiter=;,label=Occupancy,time=1+2", "train.recall": "0.99,0.93"},
			// One vector keeps only its non-zero columns: never a zero.
			forms: []string{"sign"}},
		{name: "thresholds only, multiclass", s: shape{d: 6, classes: 3, thresholds: 20, zeroFrac: 0.5, clip: true}, forms: []string{"base3", "base3", "base3"}},
		{name: "thresholds only, dense", s: shape{d: 24, classes: 4, thresholds: 6, clip: true}, forms: []string{"sign", "sign", "sign", "sign"}},
		{name: "thresholds, projection, transform", s: shape{d: 64, p: 512, classes: 10, thresholds: 3, proj: 12, zeroFrac: 0.4, projZeroFrac: 0.6, clip: true},
			forms: []string{"base3", "base3", "base3", "base3", "base3", "base3", "base3", "base3", "base3", "base3"}},
		{name: "projection without thresholds", s: shape{d: 30, p: 256, classes: 3, proj: 8, zeroFrac: 0.3, projZeroFrac: 0}},
		{name: "transform only, clipped", s: shape{d: 9, p: 300, classes: 2, zeroFrac: 0.3, clip: true}, forms: []string{"sign"}},
		{name: "sparse gap list", s: shape{d: 20, p: 4096, classes: 2, zeroFrac: 0.97, thresholds: 2}, forms: []string{"sign"}},
		{name: "few columns, planes", s: shape{d: 3, p: 7, classes: 3, zeroFrac: 0.3}},
		{name: "info only", s: shape{d: 4, p: 64, classes: 2, zeroFrac: 0.1}, info: map[string]string{"a": "", "b.c_d-9": "ü ∑ 😀"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			spec := shapedSpec(uint64(c.s.d*7919+c.s.p), c.s)
			in := testBundle(spec)
			in.Info = c.info
			data := signed(t, in, priv)
			out, err := Decode(data, trusting(t, pub))
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if out.Format != 2 || data[4] != 2 {
				t.Fatalf("format %d / byte %d, want 2", out.Format, data[4])
			}
			if !reflect.DeepEqual(out.Spec, spec) {
				t.Fatalf("decoded spec differs:\n got %+v\nwant %+v", out.Spec, spec)
			}
			if !reflect.DeepEqual(out.Header, in.Header) || !reflect.DeepEqual(out.Info, c.info) {
				t.Fatalf("header %+v info %v; want %+v, %v", out.Header, out.Info, in.Header, c.info)
			}
			m1, err := inference.New(spec)
			if err != nil {
				t.Fatal(err)
			}
			m2, err := inference.New(out.Spec)
			if err != nil {
				t.Fatal(err)
			}
			if err := SelfTest(m2, out); err != nil {
				t.Fatalf("SelfTest: %v", err)
			}
			rnd := rand.New(rand.NewPCG(3, 4))
			s1, s2 := make([]float32, c.s.classes), make([]float32, c.s.classes)
			for _, x := range randomInputs(rnd, spec.Scaler, 200) {
				p1, _ := m1.Predict(s1, x)
				p2, _ := m2.Predict(s2, x)
				if p1 != p2 || !reflect.DeepEqual(s1, s2) {
					t.Fatalf("prediction %d %v, after round trip %d %v", p1, s1, p2, s2)
				}
			}
			// One encoding per model: re-encoding gives the same bytes.
			if again := signed(t, out, priv); !bytes.Equal(again, data) {
				t.Fatal("re-encoding the decoded bundle gives different bytes")
			}

			bd, err := Inspect(data)
			if err != nil {
				t.Fatal(err)
			}
			checkBreakdown(t, bd, data, spec)
			for i, v := range bd.Vectors {
				if c.forms != nil && v.Form != c.forms[i] {
					t.Errorf("vector %d: form %s, want %s", i, v.Form, c.forms[i])
				}
			}
			if (bd.FeatureMatch == "name") != c.s.named {
				t.Errorf("feature match %q", bd.FeatureMatch)
			}
		})
	}
}

// checkBreakdown checks what Inspect says of a format-2, -3 or -4 bundle against the
// spec: sections in order and adding up, and each section's size against
// the size formulas of docs/BUNDLE.md, computed here independently.
func checkBreakdown(t *testing.T, bd *Breakdown, data []byte, spec *inference.ModelSpec) {
	t.Helper()
	total := 0
	var names []string
	size := map[string]int{}
	for i, s := range bd.Sections {
		if s.Offset != total {
			t.Fatalf("section %d (%s) at %d, want %d", i, s.Name, s.Offset, total)
		}
		total += s.Size
		names = append(names, s.Name)
		size[s.Name] = s.Size
	}
	if total != len(data) || bd.Size != len(data) {
		t.Fatalf("sections add up to %d, Size %d, bundle has %d bytes", total, bd.Size, len(data))
	}
	want := []string{"magic", "header", "compat", "classes", "scaler", "thresholds", "projection", "transform", "kept", "weights", "alpha", "selftest", "fingerprint", "info", "signature"}
	if bd.FormatVersion >= 3 {
		want = slices.Insert(want, 6, "trees")
	}
	if !reflect.DeepEqual(names, want) {
		t.Fatalf("sections %v, want %v", names, want)
	}
	uv := func(n int) int { return uvarintLen(uint64(n)) }
	d, nt, k := spec.NumFeatures(), spec.NumThresholds(), len(spec.Kept)
	// packed is a ternary vector's size: flags byte, then the sign plane
	// alone without zeros, else the smaller of two planes and base 3.
	packed := func(n, zeros int) int {
		planes := (n + 7) / 8
		switch {
		case zeros == 0:
			return 1 + planes
		case (n+4)/5 < 2*planes:
			return 1 + (n+4)/5
		}
		return 1 + 2*planes
	}
	scaler := 2 + 4*d
	if bd.ScalerForm == "float32" {
		scaler = 2 + 8*d
	}
	thresholds := 1
	if nt > 0 {
		thresholds++ // the weight ρ (< 128)
		for _, list := range spec.Thresholds {
			thresholds += uv(len(list)) + 2*len(list)
		}
	}
	trees := 1 // format 3: the tree count
	if tr := spec.Trees; tr != nil {
		trees = uv(tr.Count()) + 1 // the depth
		if tr.NumPlanes() > 1 {
			trees++ // format 4: the planes
		}
		if nt == 0 {
			trees++ // the weight ρ (< 128)
		}
		fw := 1
		if d > 256 {
			fw = 2
		}
		trees += (fw + 2) * len(tr.Feature)
	}
	if bd.TreeCount != spec.Trees.Count() || bd.TreeColumns != spec.NumTreeColumns() || bd.Columns != spec.Columns() ||
		bd.TreeColumns != bd.TreeCount<<bd.TreeDepth*bd.TreePlanes || (spec.Trees != nil && bd.TreePlanes != spec.Trees.NumPlanes()) {
		t.Errorf("breakdown: %d trees, %d planes, %d tree columns, %d columns", bd.TreeCount, bd.TreePlanes, bd.TreeColumns, bd.Columns)
	}
	projection := 1
	if p := spec.Projection; p != nil {
		projection += uv(p.Out())
		for o := range p.Out() {
			w := make([]int8, d)
			inference.UnpackTernary(w, p.Sign[o], p.NonZero[o])
			projection += packed(d, countZeros(w)) + 8
		}
	}
	tr := spec.Transform
	transform := uv(int(tr.Generator)) + 16 + uv(tr.D) + uv(tr.P)
	gaps, prev := uv(k), -1
	for _, j := range spec.Kept {
		gaps += uv(int(j) - prev)
		prev = int(j)
	}
	cols := nt + spec.NumTreeColumns() + tr.P
	kept := 1 + min((cols+7)/8, gaps)
	if len(spec.Kept) == cols {
		kept = 1 // the all-columns form
	}
	weights := 0
	for c := range spec.Sign {
		w := make([]int8, k)
		inference.UnpackTernary(w, spec.Sign[c], spec.NonZero[c])
		weights += packed(k, countZeros(w))
	}
	fingerprint := 1
	if fp := spec.Fingerprint; fp != nil {
		fingerprint = uv(len(fp.Columns)) + len(fp.Rates)
		prev := -1
		for _, c := range fp.Columns {
			fingerprint += uv(int(c) - prev)
			prev = int(c)
		}
	}
	info := uv(len(bd.Info))
	for key, v := range bd.Info {
		info += uv(len(key)) + len(key) + uv(len(v)) + len(v)
	}
	sizes := map[string]int{
		"magic": 5, "scaler": scaler, "thresholds": thresholds, "projection": projection, "transform": transform,
		"kept": kept, "weights": weights, "alpha": 4 * len(spec.Alpha), "fingerprint": fingerprint, "info": info, "signature": 72,
	}
	if bd.FormatVersion >= 3 {
		sizes["trees"] = trees
	}
	for name, want := range sizes {
		if size[name] != want {
			t.Errorf("%s section: %d bytes, the formula says %d", name, size[name], want)
		}
	}
}

func countZeros(w []int8) int {
	n := 0
	for _, v := range w {
		if v == 0 {
			n++
		}
	}
	return n
}

func TestEncodeRejectsFormat2(t *testing.T) {
	for _, c := range []struct {
		name    string
		modify  func(b *Bundle)
		section string
		want    string
	}{
		{"unsnapped threshold", func(b *Bundle) { b.Spec.Thresholds[0][1] = 0.1 }, "thresholds", "not a float16 value; snap thresholds with CompactThresholds"},
		{"threshold 1", func(b *Bundle) { b.Spec.Thresholds[1][0] = 1 }, "thresholds", "not strictly inside"},
		{"threshold -1", func(b *Bundle) { b.Spec.Thresholds[0][0] = -1 }, "thresholds", "not strictly inside"},
		{"threshold -0", func(b *Bundle) { b.Spec.Thresholds[1][0] = float32(math.Copysign(0, -1)) }, "thresholds", "-0"},
		{"info key", func(b *Bundle) { b.Info = map[string]string{"Read": ""} }, "info", "not one of a-z"},
		{"info empty key", func(b *Bundle) { b.Info = map[string]string{"": "x"} }, "info", "key of 0 bytes"},
		{"info value", func(b *Bundle) { b.Info = map[string]string{"read": "delimiter=\t"} }, "info", "control character"},
		{"info value size", func(b *Bundle) { b.Info = map[string]string{"read": strings.Repeat("x", MaxInfoValue+1)} }, "info", "4097 bytes"},
		{"info pairs", func(b *Bundle) {
			b.Info = map[string]string{}
			for i := range MaxInfoPairs + 1 {
				b.Info[strings.Repeat("k", i+1)] = ""
			}
		}, "info", "65 pairs"},
		{"format 6", func(b *Bundle) { b.Format = 6 }, "magic", "format version 6"},
		{"format 5 uncalibrated", func(b *Bundle) { b.Format = 5 }, "calibration", "format 5 is for calibrated models"},
		{"format 4 without trees", func(b *Bundle) { b.Format = 4 }, "trees", "format 4 is for tree leaf planes, and this model has no trees; write format 2"},
		{"format 1, thresholds", func(b *Bundle) { b.Format = 1; b.Spec.Scaler.Clip = false }, "thresholds", "format 1 has no thresholds"},
		{"format 1, clip", func(b *Bundle) { b.Format = 1 }, "scaler", "format 1 cannot clip"},
		{"format 1, info", func(b *Bundle) {
			b.Format, b.Spec = 1, randomSpec(3, 4, 64, 2, 0.2, false)
			b.Info = map[string]string{"a": "b"}
		}, "info", "format 1 has no info"},
		{"format 1, projection", func(b *Bundle) {
			b.Format, b.Spec = 1, tinyProjectionSpec(t)
		}, "projection", "format 1 has no projection"},
		{"p = 0, σ = -0", func(b *Bundle) {
			b.Spec = tinyThresholdSpec(t)
			b.Spec.Transform.Sigma = math.Copysign(0, -1)
		}, "transform", "every field must be 0"},
		{"projection sign tail", func(b *Bundle) {
			b.Spec = tinyProjectionSpec(t)
			b.Spec.Projection.Sign[1][0] |= 1 << 5
		}, "projection", "sign bits past"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := testBundle(tinySpec(t))
			c.modify(b)
			_, err := Encode(b)
			var fe *FormatError
			if !errors.Is(err, ErrInvalid) || !errors.As(err, &fe) || fe.Section != c.section || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Encode: %v, want ErrInvalid in section %s mentioning %q", err, c.section, c.want)
			}
		})
	}
}

// TestEncodeMasksSignBits: format 2 does not ship sign bits where the
// weight is 0 (they carry no meaning): the decoded model is the same model
// with those bits cleared.
func TestEncodeMasksSignBits(t *testing.T) {
	spec := shapedSpec(5, shape{d: 3, p: 7, classes: 3, zeroFrac: 0.3})
	lax := &DecodeOptions{AllowUnsigned: true, Now: func() time.Time { return testCreated }}
	clean, err := Encode(testBundle(spec))
	if err != nil {
		t.Fatal(err)
	}
	dirty := *spec
	dirty.Sign = nil
	for c := range spec.Sign {
		dirty.Sign = append(dirty.Sign, []uint64{spec.Sign[c][0] | (^spec.NonZero[c][0] & (1<<len(spec.Kept) - 1))})
	}
	raw, err := Encode(testBundle(&dirty))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(raw, clean) {
		t.Fatal("stray sign bits change the encoding")
	}
	if _, err := Decode(raw, lax); err != nil {
		t.Fatal(err)
	}
}

func TestPackedForms(t *testing.T) {
	rnd := rand.New(rand.NewPCG(8, 9))
	for n := 0; n <= 130; n++ {
		for _, zeroFrac := range []float64{0, 0.02, 0.3, 1} {
			w := randomTrits(rnd, n, zeroFrac)
			words := (n + 63) / 64
			sign, nz := make([]uint64, words), make([]uint64, words)
			inference.PackTernary(sign, nz, w)
			zeros := countZeros(w)
			form := canonicalPack(n, zeros > 0)
			// The smallest form, the planes on a tie, computed from sizes.
			sizes := map[byte]int{packPlanes: 2 * ((n + 7) / 8), packBase3: (n + 4) / 5}
			if zeros == 0 {
				sizes[packSign] = (n + 7) / 8
			}
			best := byte(packPlanes)
			for f, s := range sizes {
				if s < sizes[best] || s == sizes[best] && f == packSign {
					best = f
				}
			}
			if form != best {
				t.Fatalf("n=%d zeros=%d: canonical form %s, smallest is %s (%v)", n, zeros, packName(form), packName(best), sizes)
			}
			enc := appendPacked(nil, form, sign, nz, n, true)
			if len(enc) != 1+sizes[form] {
				t.Fatalf("n=%d: %d bytes in form %s, want %d", n, len(enc), packName(form), 1+sizes[form])
			}
			// Every form decodes back to w in format 1 terms; format 2 takes
			// the canonical one only.
			for f := range sizes {
				if f == packBase3 || f == packPlanes || zeros == 0 {
					raw := appendPacked(nil, f, sign, nz, n, true)
					for _, format := range []byte{1, 2} {
						if format == 1 && f == packBase3 {
							continue
						}
						r := &reader{data: raw}
						s, z, got := r.packed("v", n, words, format)
						if format == 2 && f != form {
							if !errors.Is(r.err, ErrInvalid) {
								t.Fatalf("n=%d: non-canonical %s accepted: %v", n, packName(f), r.err)
							}
							continue
						}
						if r.err != nil || got != f || r.left() != 0 {
							t.Fatalf("n=%d form %s format %d: %v, form %d, %d bytes left", n, packName(f), format, r.err, got, r.left())
						}
						back := make([]int8, n)
						inference.UnpackTernary(back, s, z)
						if !reflect.DeepEqual(back, w) && !(n == 0 && len(back) == 0) {
							t.Fatalf("n=%d form %s: %v, want %v", n, packName(f), back, w)
						}
					}
				}
			}
		}
	}
}

func TestCompactThresholds(t *testing.T) {
	nan := float32(math.NaN())
	negZero := float32(math.Copysign(0, -1))
	for _, c := range []struct {
		name   string
		in     [][]float32
		want   [][]float32
		exactW bool
	}{
		{"nil", nil, nil, true},
		{"empty lists", [][]float32{{}, nil}, [][]float32{nil, nil}, true},
		{"exact", [][]float32{{-0.5, 0, 0.25}}, [][]float32{{-0.5, 0, 0.25}}, true},
		{"rounded", [][]float32{{0.1, 0.3}}, [][]float32{{halfToFloat32(0x2e66), halfToFloat32(0x34cd)}}, true},
		// 0.09999 and 0.1 round to the same float16: one is dropped.
		{"duplicates", [][]float32{{0.1, 0.09999, 0.2}}, [][]float32{{halfToFloat32(0x2e66), halfToFloat32(0x3266)}}, true},
		{"out of range", [][]float32{{-1, -2, 1, 0.99999, 5, nan, float32(math.Inf(-1))}}, [][]float32{nil}, true},
		{"inside the edge", [][]float32{{-0.9995, 0.9995}}, [][]float32{{halfToFloat32(0xbbff), halfToFloat32(0x3bff)}}, true},
		{"-0", [][]float32{{negZero, 0.5}}, [][]float32{{0, 0.5}}, true},
		{"unsorted", [][]float32{{0.5, -0.5, 0}, {0.25}}, [][]float32{{-0.5, 0, 0.5}, {0.25}}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			orig := make([][]float32, len(c.in))
			for i := range c.in {
				orig[i] = append([]float32(nil), c.in[i]...)
			}
			got := CompactThresholds(c.in)
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("CompactThresholds(%v) = %v, want %v", c.in, got, c.want)
			}
			for i, list := range got {
				for _, v := range list {
					if math.Signbit(float64(v)) && v == 0 {
						t.Fatalf("feature %d: -0 kept", i)
					}
				}
			}
			if err := checkThresholds(got); err != nil {
				t.Fatal(err)
			}
			for i := range c.in {
				if !slices.Equal(c.in[i], orig[i]) && !hasNaN(orig[i]) {
					t.Fatal("input modified")
				}
			}
			if again := CompactThresholds(got); !reflect.DeepEqual(again, got) {
				t.Fatalf("not idempotent: %v then %v", got, again)
			}
		})
	}
	// Random lists: every output is the nearest float16 of some input,
	// strictly ascending.
	rnd := rand.New(rand.NewPCG(1, 1))
	for range 200 {
		in := [][]float32{make([]float32, rnd.IntN(40))}
		for i := range in[0] {
			in[0][i] = float32(rnd.Float64()*2.2 - 1.1)
		}
		got := CompactThresholds(in)
		for k, v := range got[0] {
			if k > 0 && !(v > got[0][k-1]) {
				t.Fatalf("not ascending: %v", got[0])
			}
			found := false
			for _, x := range in[0] {
				found = found || halfToFloat32(float32ToHalf(x)) == v
			}
			if !found {
				t.Fatalf("%g is no input's nearest float16", v)
			}
		}
	}
}

func hasNaN(vs []float32) bool {
	for _, v := range vs {
		if v != v {
			return true
		}
	}
	return false
}

// TestFormat1UpgradesToFormat2: a decoded format-1 bundle re-encoded as
// format 2 is the same model, a few bytes larger at most.
func TestFormat1UpgradesToFormat2(t *testing.T) {
	pub, priv := testKey(t)
	for _, c := range goldenCases {
		data, err := os.ReadFile(goldenPath(c.name + ".trit"))
		if err != nil {
			t.Fatal(err)
		}
		b, err := Decode(data, trusting(t, pub))
		if err != nil {
			t.Fatal(err)
		}
		if b.Format != 1 {
			t.Fatalf("%s: format %d", c.name, b.Format)
		}
		b.Format = 0
		v2 := signed(t, b, priv)
		b2, err := Decode(v2, trusting(t, pub))
		if err != nil {
			t.Fatal(err)
		}
		if b2.Format != 2 || !reflect.DeepEqual(b2.Spec, b.Spec) {
			t.Fatalf("%s: format-2 copy decodes to a different model", c.name)
		}
		// Scaler flags, empty thresholds, projection, fingerprint and info:
		// +5 bytes, less what base 3 saves.
		if len(v2) > len(data)+5 {
			t.Fatalf("%s: format 1 %d bytes, format 2 %d", c.name, len(data), len(v2))
		}
		t.Logf("%s: format 1 %d bytes, format 2 %d", c.name, len(data), len(v2))
	}
}

// TestHeavyThresholdWeight: with ρ > 1 a self-test score may exceed K.
func TestHeavyThresholdWeight(t *testing.T) {
	base := &inference.ModelSpec{
		Classes:         []string{"a", "b"},
		Scaler:          inference.Scaler{Lo: []float32{0}, Hi: []float32{1}, Clip: true},
		Thresholds:      [][]float32{{-0.5, 0, 0.5}},
		ThresholdWeight: inference.MaxThresholdWeight,
	}
	spec, err := inference.NewSpec(base, [][]int8{{1, 1, 1}}, []float32{0.25})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := Encode(&Bundle{Header: Header{ModelID: "heavy", Release: 1, CreatedAt: time.Unix(1_800_000_000, 0)},
		Compat: Compat{MinAgentVersion: "0.2.0"}, Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Decode(raw, &DecodeOptions{AllowUnsigned: true})
	if err != nil {
		t.Fatal(err)
	}
	if s := b.SelfTest.Scores[0]; s >= -3 && s <= 3 {
		t.Fatalf("self-test score %d: the test needs one beyond ±K = ±3", s)
	}
	if b.Spec.ThresholdWeight != inference.MaxThresholdWeight {
		t.Fatalf("threshold weight %d after the round trip", b.Spec.ThresholdWeight)
	}
}
