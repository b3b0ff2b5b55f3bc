package training

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/trit-iot/trit/training/data"
	"github.com/trit-iot/trit/training/internal/splitmix"
)

// blobs returns n rows of d features around one centre per class.
func blobs(n, d, classes int, seed uint64) *data.Dataset {
	u := splitmix.New(seed).Float64
	ds := &data.Dataset{Name: "blobs", N: n, D: d, Y: make([]int32, n)}
	for c := range classes {
		ds.Classes = append(ds.Classes, string(rune('a'+c)))
	}
	for i := range n {
		c := i % classes
		ds.Y[i] = int32(c)
		for j := range d {
			centre := math.Sin(float64(c*7 + j*3))
			ds.X = append(ds.X, float32(centre+0.6*(u()-0.5)*2))
		}
	}
	return ds
}

// TestBudgetRespected trains at several budgets and class counts and checks
// the bundle fits to the byte and that no more random features would have.
// (With the thresholds given there is one structure and no search, so P is
// the largest that fits; a search may choose fewer, see
// TestBudgetWithSearch.)
func TestBudgetRespected(t *testing.T) {
	for _, tc := range []struct {
		budget, classes int
		weights         string
		thresholds      int
	}{
		{2048, 2, "ternary", 2},
		{2048, 5, "binary", 4},
		{6000, 3, "ternary", 8},
		{6000, 7, "binary", 1},
		{12000, 10, "ternary", 4},
	} {
		ds := blobs(700, 6, tc.classes, uint64(tc.budget+tc.classes))
		c := &Config{Budget: tc.budget, Weights: tc.weights, Thresholds: tc.thresholds, Sigma: 1, C: 1, Seed: 2}
		res, err := Train(ds, c)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := res.Bundle(ds, BundleMeta{ModelID: "a-model-id-as-long-as-users-write-them", Release: 1, Created: time.Unix(1_800_000_000, 0), Hardware: "pi-zero/ads1115"})
		if err != nil {
			t.Fatal(err)
		}
		if len(raw) > tc.budget {
			t.Errorf("%+v: bundle of %d bytes, over the budget", tc, len(raw))
		}
		// The next multiple of 64 random features would not fit in the worst case.
		cfg, _ := c.withDefaults()
		full, _ := prepare(ds, cfg.fitScaler(ds))
		base, err := full.learned(res.Structure, cfg.Seed)
		if err != nil {
			t.Fatal(err)
		}
		over, err := cfg.worstCaseBytes(base, res.Structure.P+64, res.Structure.Binary)
		if err != nil {
			t.Fatal(err)
		}
		if over <= tc.budget-cfg.Reserve && res.Structure.P < maxRandomFeatures(ds.D, ds.N) {
			t.Errorf("%+v: p = %d leaves room: p+64 would take %d of %d bytes", tc, res.Structure.P, over, tc.budget-cfg.Reserve)
		}
		t.Logf("%+v: p = %d, bundle %d bytes (worst case at p+64: %d)", tc, res.Structure.P, len(raw), over)
	}
}

func TestBudgetTooSmall(t *testing.T) {
	ds := blobs(200, 300, 10, 1)
	_, err := Train(ds, &Config{Budget: 1024, Sigma: 1, C: 1})
	if err == nil {
		t.Fatal("a 1 KB budget for 300 features and 10 classes was accepted")
	}
	t.Log(err)
}

// TestBudgetWithSearch: whatever structure and P the search chooses, the
// bundle fits.
func TestBudgetWithSearch(t *testing.T) {
	for _, budget := range []int{1500, 5000} {
		ds := blobs(600, 5, 4, uint64(budget))
		res, err := Train(ds, &Config{Budget: budget, Seed: 4, SigmaGrid: []float64{0.5, 2}, CGrid: []float64{0.1, 10}})
		if err != nil {
			t.Fatal(err)
		}
		raw, err := res.Bundle(ds, BundleMeta{ModelID: "searched", Release: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(raw) > budget {
			t.Errorf("budget %d: bundle of %d bytes (%+v)", budget, len(raw), res.Structure)
		}
		t.Logf("budget %d: %+v, %d bytes", budget, res.Structure, len(raw))
	}
}

func TestTrainContextCancelled(t *testing.T) {
	ds := blobs(600, 5, 3, 9)
	ctx, cancel := context.WithCancel(context.Background())
	cfg := &Config{Budget: 4000, Seed: 1}
	cfg.Progress = func(e Event) {
		if e.Done == 3 {
			cancel()
		}
	}
	_, err := TrainContext(ctx, ds, cfg)
	if !errors.Is(err, ErrCancelled) || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled training returned %v", err)
	}
}

// TestEmbeddingLimitsStructures checks that Config.Embedding restricts the
// budgeted search to the named kind and that the default considers every
// kind the data's shape allows.
func TestEmbeddingLimitsStructures(t *testing.T) {
	ds := blobs(200, 6, 3, 1)
	kind := Structure.Embedding
	for _, tc := range []struct {
		embedding string
		want      map[string]bool
	}{
		{"", map[string]bool{"kernel": true, "mix": true, "thresholds": true, "trees": true}},
		{"trees", map[string]bool{"trees": true}},
		{"kernel", map[string]bool{"kernel": true}},
		{"mix", map[string]bool{"mix": true}},
		{"thresholds", map[string]bool{"thresholds": true}},
		{"projection", map[string]bool{"projection": true}},
	} {
		c, p := prepareTest(t, ds, &Config{Budget: 8192, Embedding: tc.embedding})
		ss, err := c.structures(p)
		if err != nil {
			t.Fatalf("%q: %v", tc.embedding, err)
		}
		got := map[string]bool{}
		for _, s := range ss {
			got[string(kind(s))] = true
		}
		if len(got) != len(tc.want) {
			t.Errorf("embedding %q: kinds %v, want %v", tc.embedding, got, tc.want)
		}
		for k := range tc.want {
			if !got[k] {
				t.Errorf("embedding %q: no %s structure in %v", tc.embedding, k, ss)
			}
		}
	}
	if _, err := (&Config{Embedding: "wavelet"}).withDefaults(); !errors.Is(err, ErrConfig) {
		t.Errorf("embedding wavelet: err %v, want ErrConfig", err)
	}
}

// With more rows than MaxFitRows the weights are fitted on a subsample, so
// the memory bound on the embedding allows more columns: rows are traded
// for width, which is what the gateway's bytes buy.
func TestMaxFitRowsTradesRowsForColumns(t *testing.T) {
	ds := blobs(3000, 6, 3, 7)
	train := func(maxRows int) *Result {
		res, err := Train(ds, &Config{Budget: 30720, MaxEmbeddingBytes: 64 << 10, MaxFitRows: maxRows,
			Embedding: "kernel", Weights: "ternary", Sigma: 1, C: 1, Seed: 4})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	all, sub := train(-1), train(1000)
	if sub.Structure.P <= all.Structure.P {
		t.Errorf("p = %d on 1,000 of 3,000 rows, %d on all: want more columns on fewer rows", sub.Structure.P, all.Structure.P)
	}
	noted := false
	for _, n := range sub.Notes {
		noted = noted || strings.Contains(n, "1000-row stratified subsample of the 3000")
	}
	if !noted {
		t.Errorf("no note of the subsample in %q", sub.Notes)
	}
	for _, n := range all.Notes {
		if strings.Contains(n, "subsample") {
			t.Errorf("MaxFitRows -1 noted a subsample: %q", n)
		}
	}
	ev, err := Evaluate(sub.Model, ds, 0)
	if err != nil {
		t.Fatal(err)
	}
	if ev.Accuracy < 90 {
		t.Errorf("accuracy %.1f%% on the training rows after a subsampled fit", ev.Accuracy)
	}
	t.Logf("p = %d (all rows) → %d (1,000 rows); accuracy %.2f%%", all.Structure.P, sub.Structure.P, ev.Accuracy)
}
