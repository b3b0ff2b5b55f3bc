package bundle

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"flag"
	"math/rand/v2"
	"os"
	"path/filepath"
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
	for _, c := range goldenCases {
		data, err := os.ReadFile(goldenPath(c.name + ".trit"))
		if err != nil {
			t.Skip(err)
		}
		bd, err := Inspect(data)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s (%d×%d classes, p = %d, %d kept): %d bytes", c.name, c.d, c.classes, c.p, len(bd.KeptColumns), bd.Size)
		for _, s := range bd.Sections {
			t.Logf("  %-10s %6d", s.Name, s.Size)
		}
	}
}
