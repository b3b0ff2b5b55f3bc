package training

import (
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/trit-iot/trit/inference"
	"github.com/trit-iot/trit/inference/bundle"
	"github.com/trit-iot/trit/internal/buildinfo"
	"github.com/trit-iot/trit/training/data"
	"github.com/trit-iot/trit/training/internal/splitmix"
)

// checklistKinds is inference/kinds.go's table as code: every kind of
// model training makes, the parts of the embedding its models are made
// of, and a number of features the search considers it for.
var checklistKinds = []checklistKind{
	{Kernel, []string{"random features"}, 8},
	{Mix, []string{"threshold bits", "random features"}, 8},
	{Thresholds, []string{"threshold bits"}, 8},
	{Projection, []string{"projection", "random features"}, 64},
	{Trees, []string{"tree leaves"}, 8},
}

type checklistKind struct {
	kind  Kind
	parts []string
	d     int
}

// specParts names the parts of the embedding spec uses, in
// inference/kinds.go's words and order.
func specParts(spec *inference.ModelSpec) []string {
	var parts []string
	if spec.NumThresholds() > 0 {
		parts = append(parts, "threshold bits")
	}
	if spec.NumTreeColumns() > 0 {
		parts = append(parts, "tree leaves")
	}
	if spec.Projection != nil {
		parts = append(parts, "projection")
	}
	if spec.Transform.P > 0 {
		parts = append(parts, "random features")
	}
	return parts
}

// checklistRows is n rows of d features in three classes, each a cloud
// around its own centre, for training one small model of each kind.
func checklistRows(n, d int) *data.Dataset {
	r := splitmix.New(uint64(40*n + d))
	ds := &data.Dataset{Name: "checklist", N: n, D: d, Classes: []string{"a", "b", "c"}, Y: make([]int32, n)}
	for i := range n {
		c := i % 3
		ds.Y[i] = int32(c)
		for j := range d {
			ds.X = append(ds.X, float32(math.Sin(float64(5*c+3*j))+0.8*(r.Float64()-0.5)))
		}
	}
	return ds
}

// readRepo returns a file of the repository, from training/.
func readRepo(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", filepath.FromSlash(path)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestKindsChecklist keeps inference/kinds.go's checklist true: every
// kind of the search's table (selection.go) is in the checklist's table
// and this file's, its structures are named its kind, a model trained as
// that kind is made of the parts the table lists, the bundle carries it
// (decoded, it predicts the same integer scores on every row) for an
// agent of this release, and it is named everywhere an operator chooses
// or reads it; every path the checklist names exists.
func TestKindsChecklist(t *testing.T) {
	checklist := readRepo(t, "inference/kinds.go")
	flagHelp := ""
	for _, line := range strings.Split(readRepo(t, "tritctl/train.go"), "\n") {
		if strings.Contains(line, `"embedding", "auto"`) {
			flagHelp = line
		}
	}
	if flagHelp == "" {
		t.Error("tritctl/train.go: no --embedding flag found")
	}
	config, benchmark, trainingDoc := readRepo(t, "training/config.go"), readRepo(t, "benchmark/predict_kinds_bench_test.go"), readRepo(t, "docs/TRAINING.md")
	_, badName := (&Config{Embedding: "no-such-kind"}).withDefaults()
	defaults, err := (&Config{}).withDefaults()
	if err != nil {
		t.Fatal(err)
	}

	for _, ks := range kinds {
		if !slices.ContainsFunc(checklistKinds, func(c checklistKind) bool { return c.kind == ks.kind }) {
			t.Errorf("kind %q of selection.go's table is not in checklistKinds (and inference/kinds.go's table)", ks.kind)
		}
	}
	for _, c := range checklistKinds {
		t.Run(string(c.kind), func(t *testing.T) {
			ks, ok := kindOf(c.kind)
			if !ok {
				t.Fatalf("no row for %q in selection.go's kinds", c.kind)
			}
			if !ks.eligible(c.d) {
				t.Fatalf("the search does not consider %q for %d features", c.kind, c.d)
			}
			for _, sh := range ks.shapes(&defaults, c.d) {
				s := sh.s
				if sh.by == fillP { // the random features the budget will size
					s.P = 64
				}
				if got := s.Embedding(); got != c.kind {
					t.Errorf("structure %+v of kind %q: Structure.Embedding says %q", s, c.kind, got)
				}
			}

			// The checklist's table and where an operator meets the name.
			row := regexp.MustCompile(`(?m)^//\t` + regexp.QuoteMeta(string(c.kind)) + ` +(.+)$`).FindStringSubmatch(checklist)
			if row == nil || row[1] != strings.Join(c.parts, ", ") {
				t.Errorf("inference/kinds.go's table: %q, want %q", row, string(c.kind)+" "+strings.Join(c.parts, ", "))
			}
			word := regexp.MustCompile(`\b` + regexp.QuoteMeta(string(c.kind)) + `\b`)
			for _, place := range []struct{ where, text string }{
				{"tritctl/train.go's --embedding help", flagHelp},
				{"training/config.go's Embedding", config},
				{"Config's error for an unknown kind", badName.Error()},
			} {
				if !word.MatchString(place.text) {
					t.Errorf("%s does not name %q", place.where, c.kind)
				}
			}
			if !strings.Contains(benchmark, `embedding: "`+string(c.kind)+`"`) {
				t.Errorf("benchmark/predict_kinds_bench_test.go's kindShapes has no %q", c.kind)
			}
			if !strings.Contains(trainingDoc, "| "+string(c.kind)+" |") {
				t.Errorf("docs/TRAINING.md's table of what competes has no %q", c.kind)
			}

			// A model of the kind, through the bundle.
			ds := checklistRows(300, c.d)
			res, err := Train(ds, &Config{Budget: 8192, Embedding: string(c.kind), Weights: "ternary", Sigma: 1, C: 1, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Structure.Embedding(); got != c.kind {
				t.Fatalf("trained as %q, the model is %q (%+v)", c.kind, got, res.Structure)
			}
			if got := specParts(res.Spec); !slices.Equal(got, c.parts) {
				t.Errorf("a %q model is made of %q, the checklist says %q", c.kind, got, c.parts)
			}
			raw, err := res.Bundle(ds, BundleMeta{ModelID: "checklist", Release: 1})
			if err != nil {
				t.Fatal(err)
			}
			b, err := bundle.Decode(raw, &bundle.DecodeOptions{AllowUnsigned: true})
			if err != nil {
				t.Fatal(err)
			}
			if err := b.Compat.CheckAgent(buildinfo.Version); err != nil {
				t.Errorf("an agent of this release (%s) cannot run a %q model: %v", buildinfo.Version, c.kind, err)
			}
			m, err := inference.New(b.Spec)
			if err != nil {
				t.Fatal(err)
			}
			want, got := make([]int32, inference.Vectors(len(ds.Classes))), make([]int32, inference.Vectors(len(ds.Classes)))
			for i := range ds.N {
				x := ds.X[i*ds.D : (i+1)*ds.D]
				wc, err1 := res.Model.PredictRaw(want, x)
				gc, err2 := m.PredictRaw(got, x)
				if err1 != nil || err2 != nil || wc != gc || !slices.Equal(want, got) {
					t.Fatalf("row %d: trained %d %v (%v), from the bundle %d %v (%v)", i, wc, want, err1, gc, got, err2)
				}
			}
		})
	}

	// Every path the checklist names is there.
	paths := regexp.MustCompile(`\b(?:inference|training|tritctl|benchmark|fleet|api|internal|docs|agent)/[A-Za-z0-9_./]*[A-Za-z0-9_]|\b[A-Z]+\.md\b`).FindAllString(checklist, -1)
	if len(paths) < 20 {
		t.Fatalf("only %d paths found in inference/kinds.go", len(paths))
	}
	for _, p := range paths {
		if _, err := os.Stat(filepath.Join("..", filepath.FromSlash(p))); err != nil {
			t.Errorf("inference/kinds.go names %s: %v", p, err)
		}
	}
}
