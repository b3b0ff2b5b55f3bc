package bundle

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"flag"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/trit-iot/trit/inference"
)

var update = flag.Bool("update", false, "rewrite testdata/golden from the current code")

// goldenCases are the shapes the issue caps: usps-like 256×10, covtype-like
// 54×2 (named features) and mnist-like 784×10, all at p = 2048.
var goldenCases = []struct {
	name          string
	seed          uint64
	d, p, classes int
	named         bool
	expires       bool
	maxSize       int
}{
	{"usps-like", 256, 256, 2048, 10, false, true, 30 * 1024},
	{"covtype-like", 54, 54, 2048, 2, true, false, 30 * 1024},
	{"mnist-like", 784, 784, 2048, 10, false, true, 12 * 1024},
}

// goldenFile is the JSON beside each golden bundle: raw inputs and what the
// model must compute for them on every architecture.
type goldenFile struct {
	Bundle  string      `json:"bundle"`
	KeyID   string      `json:"key_id"`
	Inputs  [][]float32 `json:"inputs"`
	Scores  [][]int32   `json:"scores"`  // integer wᵀz per weight vector
	Classes []int       `json:"classes"` // predicted class index
	// Embedding is the kept-column bits of each input: the little-endian
	// bytes of the (len(Kept)+63)/64 words, in hex.
	Embedding []string `json:"embedding"`
	// PredictScores are Predict's float32 class scores α_c·w_cᵀz (format-2
	// goldens; JSON round-trips float32 exactly).
	PredictScores [][]float32 `json:"predict_scores,omitempty"`
}

func goldenPath(name string) string { return filepath.Join("testdata", "golden", name) }

// goldenBundle builds a format-1 golden bundle: these are the legacy
// layout's fixtures, so -update must keep writing format 1.
func goldenBundle(name string, seed uint64, d, p, classes int, named, expires bool) *Bundle {
	b := testBundle(randomSpec(seed, d, p, classes, 0.3, named))
	b.Format = 1
	b.Header.ModelID = name
	if !expires {
		b.Header.ExpiresAt = time.Time{}
	}
	return b
}

// embedHex returns the kept-column bits of x as hex.
func embedHex(t *testing.T, m *inference.Model, x []float32) (string, []uint64) {
	t.Helper()
	z := make([]uint64, (len(m.Spec().Kept)+63)/64)
	if err := m.EmbedKept(z, x); err != nil {
		t.Fatal(err)
	}
	raw := make([]byte, 0, 8*len(z))
	for _, w := range z {
		raw = binary.LittleEndian.AppendUint64(raw, w)
	}
	return hex.EncodeToString(raw), z
}

func writeGolden(t *testing.T, name string, data []byte, b *Bundle) {
	t.Helper()
	m, err := inference.New(b.Spec)
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := testKey(t)
	id := KeyID(pub)
	g := goldenFile{Bundle: name + ".trit", KeyID: hex.EncodeToString(id[:])}
	rnd := rand.New(rand.NewPCG(uint64(len(data)), 99))
	g.Inputs = randomInputs(rnd, b.Spec.Scaler, 6)
	for _, x := range g.Inputs {
		h, z := embedHex(t, m, x)
		scores := make([]int32, len(b.Spec.Sign))
		for c := range scores {
			scores[c] = int32(inference.TernaryDot(z, b.Spec.Sign[c], b.Spec.NonZero[c]))
		}
		class, err := m.Predict(nil, x)
		if err != nil {
			t.Fatal(err)
		}
		g.Embedding, g.Scores, g.Classes = append(g.Embedding, h), append(g.Scores, scores), append(g.Classes, class)
	}
	js, err := json.MarshalIndent(g, "", "\t")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(goldenPath(""), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(goldenPath(name+".trit"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(goldenPath(name+".json"), append(js, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestGolden decodes the golden bundles produced on amd64 and checks that
// this machine computes bit-identical embeddings, the same integer scores
// and classes, passes the self-test, and re-encodes to the same bytes.
// `go test ./inference/bundle -run Golden -update` rewrites them.
func TestGolden(t *testing.T) {
	pub, priv := testKey(t)
	for _, c := range goldenCases {
		t.Run(c.name, func(t *testing.T) {
			if *update {
				b := goldenBundle(c.name, c.seed, c.d, c.p, c.classes, c.named, c.expires)
				writeGolden(t, c.name, signed(t, b, priv), b)
			}
			data, err := os.ReadFile(goldenPath(c.name + ".trit"))
			if err != nil {
				t.Fatalf("%v (run with -update to create)", err)
			}
			js, err := os.ReadFile(goldenPath(c.name + ".json"))
			if err != nil {
				t.Fatal(err)
			}
			var g goldenFile
			if err := json.Unmarshal(js, &g); err != nil {
				t.Fatal(err)
			}
			b, err := Decode(data, trusting(t, pub))
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if id := KeyID(pub); g.KeyID != hex.EncodeToString(id[:]) {
				t.Fatalf("golden key ID %s, test key has %x", g.KeyID, id)
			}
			m, err := inference.New(b.Spec)
			if err != nil {
				t.Fatal(err)
			}
			if err := SelfTest(m, b); err != nil {
				t.Fatalf("SelfTest: %v", err)
			}
			if len(g.Inputs) == 0 || len(g.Inputs) != len(g.Scores) || len(g.Inputs) != len(g.Classes) || len(g.Inputs) != len(g.Embedding) {
				t.Fatalf("golden JSON has %d inputs, %d scores, %d classes, %d embeddings", len(g.Inputs), len(g.Scores), len(g.Classes), len(g.Embedding))
			}
			for i, x := range g.Inputs {
				h, z := embedHex(t, m, x)
				if h != g.Embedding[i] {
					t.Errorf("input %d: embedding differs from amd64's", i)
				}
				scores := make([]int32, len(b.Spec.Sign))
				for c := range scores {
					scores[c] = int32(inference.TernaryDot(z, b.Spec.Sign[c], b.Spec.NonZero[c]))
				}
				if !slices.Equal(scores, g.Scores[i]) {
					t.Errorf("input %d: scores %v, want %v", i, scores, g.Scores[i])
				}
				if class, _ := m.Predict(nil, x); class != g.Classes[i] {
					t.Errorf("input %d: class %d, want %d", i, class, g.Classes[i])
				}
			}
			// Encoding the decoded bundle (which runs the self-test
			// computation here) and signing gives the same bytes.
			again := signed(t, b, priv)
			if !bytes.Equal(again, data) {
				t.Error("re-encoding the decoded bundle gives different bytes")
			}
			if len(data) > c.maxSize {
				t.Errorf("%d bytes, cap %d", len(data), c.maxSize)
			}
		})
	}
}

// TestGoldenBreakdown logs the byte breakdown of the golden bundles
// (go test -run GoldenBreakdown -v).
func TestGoldenBreakdown(t *testing.T) {
	var names []string
	for _, c := range goldenCases {
		names = append(names, c.name)
	}
	for _, c := range goldenV2Cases {
		names = append(names, c.name)
	}
	for _, name := range names {
		data, err := os.ReadFile(goldenPath(name + ".trit"))
		if err != nil {
			t.Skip(err)
		}
		bd, err := Inspect(data)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s (format %d, %d features × %d classes, %d thresholds, %d trees of depth %d with %d planes, p = %d, %d of %d columns kept): %d bytes",
			name, bd.FormatVersion, bd.Features, len(bd.Classes), bd.ThresholdCount, bd.TreeCount, bd.TreeDepth, bd.TreePlanes, bd.P, len(bd.KeptColumns), bd.Columns, bd.Size)
		for _, s := range bd.Sections {
			t.Logf("  %-10s %6d", s.Name, s.Size)
		}
		forms := map[string]int{}
		bits := 0.0
		for _, v := range bd.Vectors {
			forms[v.Form]++
			bits += v.BitsPerWeight / float64(len(bd.Vectors))
		}
		t.Logf("  weight vectors: %v, %.3f bits per weight on average", forms, bits)
	}
}

// goldenV2Cases are the format-2 and format-3 goldens, generated on amd64
// by `go test ./inference/bundle -run GoldenV2 -update` and checked on every
// architecture by TestGoldenV2 (make test-arm runs it under qemu):
//
//   - sensor-v2: a sensor-like model as issue 12's data calls for — 5
//     named, clipped features, threshold bits only (p = 0), 3 classes, a
//     drift fingerprint, an info section;
//   - image-v2: a usps-like 256×10 model with every format-2 part —
//     thresholds weighted ρ = 5, a 256→32 ternary projection, p = 2048 random features,
//     base-3 weight vectors and one dense vector (sign plane only), base-3
//     projection rows and one dense row;
//   - machine-v3 (format 3): a vibration-like model with trees — 12 named,
//     clipped features, thresholds, 40 oblivious trees of depth 4 (some
//     leaves dropped), p = 256 random features, ρ = 2, 4 classes, a
//     fingerprint and an info section;
//   - machine-v4 (format 4): a vibration-like model with tree leaf planes —
//     12 named, clipped features, no thresholds (so ρ = 3 follows the
//     planes byte in the trees section), 24 oblivious trees of depth 3 with
//     2 planes (384 leaf columns, plane 1 weighing 6; some dropped), p =
//     128 random features, 3 classes, a fingerprint and an info section.
var goldenV2Cases = []struct {
	name      string
	seed      uint64
	shape     shape
	features  []string
	info      map[string]string
	denseRow  bool  // make projection row 0 and weight vector 0 dense
	rho       int32 // threshold weight
	print     bool  // a fingerprint of every third kept column
	wantForms []string
}{
	{name: "sensor-v2", seed: 12, shape: shape{d: 5, classes: 3, thresholds: 32, zeroFrac: 0.3, clip: true},
		features:  []string{"temperature", "humidity", "light", "co2", "humidity_ratio"},
		info:      map[string]string{"read": "delimiter=;,header=1,label=occupancy,time=date+time", "train.accuracy": "0.9731", "train.recall": "0.99,0.95,0.91"},
		print:     true,
		wantForms: []string{"base3", "base3", "base3"}},
	{name: "image-v2", seed: 11, shape: shape{d: 256, p: 2048, classes: 10, thresholds: 2, proj: 32, zeroFrac: 0.35, projZeroFrac: 0.5, clip: true},
		denseRow:  true,
		rho:       5,
		wantForms: []string{"sign", "base3", "base3", "base3", "base3", "base3", "base3", "base3", "base3", "base3"}},
	{name: "machine-v3", seed: 13, shape: shape{d: 12, p: 256, classes: 4, thresholds: 3, trees: 40, depth: 4, zeroFrac: 0.3, clip: true},
		features: []string{"rms_x", "rms_y", "rms_z", "peak_x", "peak_y", "peak_z", "crest", "kurtosis", "band_1", "band_2", "band_3", "temp"},
		info:     map[string]string{"train.accuracy": "0.9412", "trees": "depth=4,count=40"},
		rho:      2,
		print:    true},
	{name: "machine-v4", seed: 14, shape: shape{d: 12, p: 128, classes: 3, trees: 24, depth: 3, planes: 2, zeroFrac: 0.3, clip: true},
		features: []string{"rms_x", "rms_y", "rms_z", "peak_x", "peak_y", "peak_z", "crest", "kurtosis", "band_1", "band_2", "band_3", "temp"},
		info:     map[string]string{"train.accuracy": "0.9655", "trees": "depth=3,count=24,planes=2"},
		rho:      3,
		print:    true},
}

func goldenV2Bundle(t *testing.T, i int) *Bundle {
	c := goldenV2Cases[i]
	spec := shapedSpec(c.seed, c.shape)
	spec.Features = c.features
	spec.ThresholdWeight = c.rho
	if c.print {
		fp := &inference.Fingerprint{}
		for i := 0; i < len(spec.Kept); i += 3 {
			fp.Columns = append(fp.Columns, int32(i))
			fp.Rates = append(fp.Rates, uint8(i*37))
		}
		spec.Fingerprint = fp
	}
	if c.denseRow {
		p := spec.Projection
		for w := range p.NonZero[0] {
			p.NonZero[0][w] = ^uint64(0) // d = 256: whole words
		}
		spec.NonZero[0] = onesPlane(len(spec.Kept), len(spec.NonZero[0]))
	}
	b := testBundle(spec)
	if c.shape.planes > 1 {
		b.Compat.MinAgentVersion = "0.4.0" // the first agents that read format 4
	}
	b.Header.ModelID = c.name
	b.Header.ExpiresAt = time.Time{}
	b.Info = c.info
	return b
}

// goldenV2Inputs are raw inputs spread well beyond the scaler's range on
// both sides (a quarter of the values are clipped), plus the range's ends.
func goldenV2Inputs(sc inference.Scaler, n int) [][]float32 {
	rnd := rand.New(rand.NewPCG(uint64(len(sc.Lo)), 0x601d))
	out := make([][]float32, 0, n+2)
	for range n {
		x := make([]float32, len(sc.Lo))
		for i := range x {
			lo, hi := float64(sc.Lo[i]), float64(sc.Hi[i])
			w := hi - lo + 1
			x[i] = float32(lo - 0.5*w + 2*w*rnd.Float64())
		}
		out = append(out, x)
	}
	return append(out, slices.Clone(sc.Lo), slices.Clone(sc.Hi))
}

func writeGoldenV2(t *testing.T, name string, data []byte, b *Bundle) {
	t.Helper()
	m, err := inference.New(b.Spec)
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := testKey(t)
	id := KeyID(pub)
	g := goldenFile{Bundle: name + ".trit", KeyID: hex.EncodeToString(id[:])}
	g.Inputs = goldenV2Inputs(b.Spec.Scaler, 8)
	for _, x := range g.Inputs {
		h, z := embedHex(t, m, x)
		scores := make([]int32, len(b.Spec.Sign))
		for c := range scores {
			scores[c] = int32(inference.TernaryDot(z, b.Spec.Sign[c], b.Spec.NonZero[c]))
		}
		ps := make([]float32, len(b.Spec.Classes))
		class, err := m.Predict(ps, x)
		if err != nil {
			t.Fatal(err)
		}
		g.Embedding, g.Scores, g.Classes = append(g.Embedding, h), append(g.Scores, scores), append(g.Classes, class)
		g.PredictScores = append(g.PredictScores, ps)
	}
	js, err := json.MarshalIndent(g, "", "\t")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(goldenPath(name+".trit"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(goldenPath(name+".json"), append(js, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestGoldenV2 decodes the format-2 golden bundles produced on amd64 and
// checks that this machine computes bit-identical embeddings (clipping,
// threshold bits, projection, transform), the same integer and float
// scores and classes, passes the self-test, and re-encodes to the same
// bytes; and that the goldens hold the forms they are meant to cover.
func TestGoldenV2(t *testing.T) {
	pub, priv := testKey(t)
	for i, c := range goldenV2Cases {
		t.Run(c.name, func(t *testing.T) {
			if *update {
				b := goldenV2Bundle(t, i)
				writeGoldenV2(t, c.name, signed(t, b, priv), b)
			}
			data, err := os.ReadFile(goldenPath(c.name + ".trit"))
			if err != nil {
				t.Fatalf("%v (run with -update to create)", err)
			}
			js, err := os.ReadFile(goldenPath(c.name + ".json"))
			if err != nil {
				t.Fatal(err)
			}
			var g goldenFile
			if err := json.Unmarshal(js, &g); err != nil {
				t.Fatal(err)
			}
			b, err := Decode(data, trusting(t, pub))
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			wantFormat := 2
			switch {
			case c.shape.planes > 1:
				wantFormat = 4
			case c.shape.trees > 0:
				wantFormat = 3
			}
			if b.Format != wantFormat || (b.Spec.Trees.Count() != c.shape.trees) || !reflect.DeepEqual(b.Info, c.info) {
				t.Fatalf("format %d, info %v", b.Format, b.Info)
			}
			m, err := inference.New(b.Spec)
			if err != nil {
				t.Fatal(err)
			}
			if err := SelfTest(m, b); err != nil {
				t.Fatalf("SelfTest: %v", err)
			}
			n := len(g.Inputs)
			if n == 0 || n != len(g.Scores) || n != len(g.Classes) || n != len(g.Embedding) || n != len(g.PredictScores) {
				t.Fatalf("golden JSON has %d inputs, %d scores, %d classes, %d embeddings, %d predict scores", n, len(g.Scores), len(g.Classes), len(g.Embedding), len(g.PredictScores))
			}
			clipped := 0
			for i, x := range g.Inputs {
				for f, v := range x {
					if v < b.Spec.Scaler.Lo[f] || v > b.Spec.Scaler.Hi[f] {
						clipped++
					}
				}
				h, z := embedHex(t, m, x)
				if h != g.Embedding[i] {
					t.Errorf("input %d: embedding differs from amd64's", i)
				}
				scores := make([]int32, len(b.Spec.Sign))
				for c := range scores {
					scores[c] = int32(inference.TernaryDot(z, b.Spec.Sign[c], b.Spec.NonZero[c]))
				}
				if !slices.Equal(scores, g.Scores[i]) {
					t.Errorf("input %d: scores %v, want %v", i, scores, g.Scores[i])
				}
				ps := make([]float32, len(b.Spec.Classes))
				class, _ := m.Predict(ps, x)
				if class != g.Classes[i] {
					t.Errorf("input %d: class %d, want %d", i, class, g.Classes[i])
				}
				for c := range ps {
					if math.Float32bits(ps[c]) != math.Float32bits(g.PredictScores[i][c]) {
						t.Errorf("input %d: class %d scores %g, want %g", i, c, ps[c], g.PredictScores[i][c])
					}
				}
			}
			if clipped == 0 {
				t.Error("no golden input exercises the clipping")
			}
			if again := signed(t, b, priv); !bytes.Equal(again, data) {
				t.Error("re-encoding the decoded bundle gives different bytes")
			}
			if len(data) > DefaultMaxSize {
				t.Errorf("%d bytes, cap %d", len(data), DefaultMaxSize)
			}
			bd, err := Inspect(data)
			if err != nil {
				t.Fatal(err)
			}
			checkBreakdown(t, bd, data, b.Spec)
			for v, want := range c.wantForms {
				if bd.Vectors[v].Form != want {
					t.Errorf("vector %d: form %s, want %s", v, bd.Vectors[v].Form, want)
				}
			}
			if c.shape.trees > 0 {
				treeKept := 0
				perPlane := make([]int, b.Spec.Trees.NumPlanes())
				for _, j := range b.Spec.Kept {
					if nt := b.Spec.NumThresholds(); int(j) >= nt && int(j) < b.Spec.AxisColumns() {
						treeKept++
						perPlane[(int(j)-nt)/b.Spec.Trees.Leaves()]++
					}
				}
				if treeKept == 0 || treeKept == b.Spec.NumTreeColumns() || bd.TreeDepth != c.shape.depth {
					t.Errorf("%d of %d tree columns kept, depth %d: the golden should drop some leaves", treeKept, b.Spec.NumTreeColumns(), bd.TreeDepth)
				}
				if bd.TreePlanes != max(c.shape.planes, 1) || slices.Contains(perPlane, 0) {
					t.Errorf("%d planes, kept tree columns per plane %v", bd.TreePlanes, perPlane)
				}
			}
			if c.shape.p == 0 && (bd.P != 0 || bd.ThresholdCount == 0) {
				t.Errorf("p = %d, %d thresholds", bd.P, bd.ThresholdCount)
			}
			if c.denseRow {
				forms := map[string]int{}
				for _, r := range bd.Projection.Rows {
					forms[r.Form]++
				}
				if bd.Projection.Rows[0].Form != "sign" || forms["base3"] != len(bd.Projection.Rows)-1 {
					t.Errorf("projection row forms %v", forms)
				}
			}
		})
	}
}
