package training

import (
	"crypto/ed25519"
	"fmt"
	"math"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trit-iot/trit/inference"
	"github.com/trit-iot/trit/inference/bundle"
	"github.com/trit-iot/trit/training/data"
)

// The tests in this file are the round trip on real data: train →
// Encode → Sign → Decode → inference.New must give, on every row of the
// standard test sets, the class and integer scores the training process's
// own model gives, in a signed bundle within the size budget. They need
// TRIT_DATA, like TestUSPSAccuracy.

// realDataDir returns TRIT_DATA, or skips without it. Real-data runs take
// minutes: `make test-accuracy` runs them (and fails without the data);
// `make test` runs the unit tests on generated data without them.
func realDataDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("TRIT_DATA")
	if dir == "" {
		t.Skip("TRIT_DATA not set: a real-data accuracy run (make test-accuracy)")
	}
	if testing.Short() {
		t.Skip("short mode")
	}
	return dir
}

// bundleCase is one standard dataset trained with fixed σ and C (no search,
// to keep the run short).
type bundleCase struct {
	name     string
	sigma, c float64
	// trainRows > 0 trains on a seeded, stratified subset of this many rows.
	trainRows int
	// maxBytes is the size budget of the signed bundle.
	maxBytes int
	// minAccuracy is a sanity floor on test accuracy (percent): a model
	// that round-trips but does not classify would prove little.
	minAccuracy float64
}

var bundleCases = []bundleCase{
	// σ = 8, C = 0.001 is what the full grid search picks for usps.
	{name: "usps", sigma: 8, c: 0.001, maxBytes: 30 * 1024, minAccuracy: 90},
	// mnist: σ = 16, C = 0.01 was the best of σ ∈ {8, 16, 32} × C ∈ {0.001,
	// 0.01} on a 10,000-row subset (92.6% test accuracy there); the full
	// 60,000 rows train in about 10 s. The tighter budget: a
	// 784-feature, 10-class, p = 2048 bundle within 12 KB.
	{name: "mnist", sigma: 16, c: 0.01, maxBytes: 12 * 1024, minAccuracy: 92},
	// covtype: class 2 against the rest, trained on 20,000 seeded rows of
	// the 464,810 (σ = 2 was the best of 0.5, 1, 2 at C = 1 there).
	{name: "covtype", sigma: 2, c: 1, trainRows: 20000, maxBytes: 30 * 1024, minAccuracy: 75},
}

// bundleKey is a deterministic Ed25519 key for these tests only.
func bundleKey() ed25519.PrivateKey {
	return ed25519.NewKeyFromSeed([]byte("trit training bundle test key 01"))
}

func TestBundleRoundTripRealData(t *testing.T) {
	dir := realDataDir(t)
	for _, bc := range bundleCases {
		t.Run(bc.name, func(t *testing.T) { testBundleRoundTrip(t, dir, bc) })
	}
}

func testBundleRoundTrip(t *testing.T, dir string, bc bundleCase) {
	train, test, err := data.LoadStandard(dir, bc.name)
	if err != nil {
		t.Fatal(err)
	}
	if bc.trainRows > 0 && bc.trainRows < train.N {
		if _, train, err = data.SplitCount(train, bc.trainRows, 7); err != nil {
			t.Fatal(err)
		}
	}
	res, err := Train(train, &Config{P: 2048, Sigma: bc.sigma, C: bc.c, Seed: 1, Scaling: "minmax"})
	if err != nil {
		t.Fatal(err)
	}

	// The scaler trained with is already in the bundle's compact form.
	fitted := data.FitScaler(train)
	if !sameFloats(res.Spec.Scaler.Lo, bundle.CompactScaler(fitted).Lo) || !sameFloats(res.Spec.Scaler.Hi, bundle.CompactScaler(fitted).Hi) {
		t.Fatal("Train's scaler is not the compact form of the fitted scaler")
	}

	priv := bundleKey()
	ks, err := bundle.NewKeySet(priv.Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	created := time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)
	unsigned, err := bundle.Encode(&bundle.Bundle{
		Header: bundle.Header{ModelID: bc.name, Release: 1, CreatedAt: created},
		Compat: bundle.Compat{MinAgentVersion: "0.1.0"},
		Spec:   res.Spec,
	})
	if err != nil {
		t.Fatal(err)
	}
	signed, err := bundle.Sign(unsigned, priv)
	if err != nil {
		t.Fatal(err)
	}
	b, err := bundle.Decode(signed, &bundle.DecodeOptions{Trusted: ks, MaxSize: bc.maxBytes})
	if err != nil {
		t.Fatalf("%d-byte bundle: %v", len(signed), err)
	}
	got, err := inference.New(b.Spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := bundle.SelfTest(got, b); err != nil {
		t.Fatal(err)
	}

	diff := compareModels(t, res.Model, got, test)
	if diff != "" {
		t.Fatalf("%s: bundled model differs from the trained one: %s", bc.name, diff)
	}
	ev, err := Evaluate(got, test, 0)
	if err != nil {
		t.Fatal(err)
	}
	br, err := bundle.Inspect(signed)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %d train rows, σ=%g C=%g, test accuracy %.2f%% on %d rows (identical classes and integer scores), %d kept columns, %d non-zero",
		bc.name, train.N, bc.sigma, bc.c, ev.Accuracy, test.N, len(b.Spec.Kept), res.NonZero)
	t.Logf("%s: signed bundle %d bytes (budget %d): %s", bc.name, len(signed), bc.maxBytes, sectionList(br.Sections))
	if len(signed) > bc.maxBytes {
		t.Errorf("%s: signed bundle is %d bytes, budget %d", bc.name, len(signed), bc.maxBytes)
	}
	if ev.Accuracy < bc.minAccuracy {
		t.Errorf("%s: test accuracy %.2f%%, want at least %.0f%%", bc.name, ev.Accuracy, bc.minAccuracy)
	}

	// The float16 scaler against float32: the same weights with the scaler
	// fitted in float32 (not snapped) must predict exactly what the bundle
	// predicts on the usps and mnist test sets (the requirement).
	// mnist's range ends are integers 0…255, all float16 values, so
	// snapping changes nothing there; usps has range ends such as -0.999
	// that move by less than 2⁻¹¹ and, measured, change no test
	// prediction. covtype (ranges up to ~7,000, where float16 steps by 4)
	// is reported, not required: a few hundred of 116,202 rows change.
	f32 := *res.Spec
	f32.Scaler = fitted
	m32, err := inference.New(&f32)
	if err != nil {
		t.Fatal(err)
	}
	changed := countChanged(fitted, bundle.CompactScaler(fitted))
	classDiff := countClassDiff(m32, got, test)
	t.Logf("%s: float16 scaler changed %d of %d range ends; predictions differing from the float32-scaler model: %d of %d",
		bc.name, changed, 2*train.D, classDiff, test.N)
	if bc.name != "covtype" && classDiff != 0 {
		t.Errorf("%s: %d test predictions differ between the float32 and float16 scaler", bc.name, classDiff)
	}
}

// compareModels predicts every row of ds with both models and returns a
// description of the first difference in class, integer scores or float
// scores, or "" if there is none.
func compareModels(t *testing.T, want, got *inference.Model, ds *data.Dataset) string {
	t.Helper()
	nc, nv := len(want.Classes()), len(want.Spec().Sign)
	if len(got.Classes()) != nc || len(got.Spec().Sign) != nv {
		return "different shapes"
	}
	words := (len(want.Spec().Kept) + 63) / 64
	if (len(got.Spec().Kept)+63)/64 != words {
		return "different kept columns"
	}
	const workers = 4
	diffs := make([]string, workers)
	var wg sync.WaitGroup
	for g := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sw, sg := make([]float32, nc), make([]float32, nc)
			zw, zg := make([]uint64, words), make([]uint64, words)
			for i := g; i < ds.N; i += workers {
				x := ds.Row(i)
				cw, err1 := want.Predict(sw, x)
				cg, err2 := got.Predict(sg, x)
				err3 := want.EmbedKept(zw, x)
				err4 := got.EmbedKept(zg, x)
				if err := firstErr(err1, err2, err3, err4); err != nil {
					diffs[g] = fmt.Sprintf("row %d: %v", i, err)
					return
				}
				if cw != cg {
					diffs[g] = fmt.Sprintf("row %d: class %d, bundle %d", i, cw, cg)
					return
				}
				for v := range nv {
					iw := inference.TernaryDot(zw, want.Spec().Sign[v], want.Spec().NonZero[v])
					ig := inference.TernaryDot(zg, got.Spec().Sign[v], got.Spec().NonZero[v])
					if iw != ig {
						diffs[g] = fmt.Sprintf("row %d vector %d: integer score %d, bundle %d", i, v, iw, ig)
						return
					}
				}
				for c := range nc {
					if math.Float32bits(sw[c]) != math.Float32bits(sg[c]) {
						diffs[g] = fmt.Sprintf("row %d class %d: score %g, bundle %g", i, c, sw[c], sg[c])
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	for _, d := range diffs {
		if d != "" {
			return d
		}
	}
	return ""
}

func countClassDiff(a, b *inference.Model, ds *data.Dataset) int {
	n := 0
	for i := range ds.N {
		ca, _ := a.Predict(nil, ds.Row(i))
		cb, _ := b.Predict(nil, ds.Row(i))
		if ca != cb {
			n++
		}
	}
	return n
}

func countChanged(a, b inference.Scaler) int {
	n := 0
	for i := range a.Lo {
		if a.Lo[i] != b.Lo[i] {
			n++
		}
		if a.Hi[i] != b.Hi[i] {
			n++
		}
	}
	return n
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func sameFloats(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

func sectionList(ss []bundle.Section) string {
	parts := make([]string, len(ss))
	for i, s := range ss {
		parts[i] = fmt.Sprintf("%s %d", s.Name, s.Size)
	}
	return strings.Join(parts, ", ")
}

// TestTrainedModelEncodes needs no data: a fitted scaler of arbitrary
// floats (two circles) is snapped by Train, so Encode accepts the model as
// is, and the decoded model predicts exactly what the trained one does.
func TestTrainedModelEncodes(t *testing.T) {
	train, test := TwoCircles(600, 0.5, 0.1, 1), TwoCircles(400, 0.5, 0.1, 2)
	fitted := data.FitScaler(train)
	if countChanged(fitted, bundle.CompactScaler(fitted)) == 0 {
		t.Fatal("two circles' fitted scaler is already float16; the test would prove nothing")
	}
	res, err := Train(train, &Config{P: 256, Sigma: 0.5, C: 1, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := bundle.Encode(&bundle.Bundle{
		Header: bundle.Header{ModelID: "circles", Release: 1, CreatedAt: time.Unix(1_700_000_000, 0)},
		Compat: bundle.Compat{MinAgentVersion: "0.1.0"},
		Spec:   res.Spec,
	})
	if err != nil {
		t.Fatalf("Encode of a freshly trained model: %v", err)
	}
	b, err := bundle.Decode(raw, &bundle.DecodeOptions{AllowUnsigned: true})
	if err != nil {
		t.Fatal(err)
	}
	got, err := inference.New(b.Spec)
	if err != nil {
		t.Fatal(err)
	}
	if d := compareModels(t, res.Model, got, test); d != "" {
		t.Fatal(d)
	}
}
