package training

import (
	"math"
	"runtime"
	"testing"

	"github.com/trit-iot/trit/training/data"
	"github.com/trit-iot/trit/training/ternary"
)

// TestTwoCirclesTernary is the paper's circle experiment: binary embedding
// plus ternary coefficients must separate two concentric noisy circles.
func TestTwoCirclesTernary(t *testing.T) {
	train := TwoCircles(2000, 0.5, 0.08, 1)
	test := TwoCircles(2000, 0.5, 0.08, 2)
	res, err := Train(train, &Config{P: 512, Seed: 3, SigmaGrid: []float64{0.125, 0.25, 0.5, 1}, CGrid: []float64{0.1, 1, 10}})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := Evaluate(res.Model, test, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("σ=%g C=%g: test accuracy %.2f%%, %d non-zero of %d, %.2fs", res.Sigma, res.C, ev.Accuracy, res.NonZero, 512, res.TrainSeconds)
	if ev.Accuracy < 97 {
		t.Fatalf("two circles: test accuracy %.2f%%, want at least 97%%", ev.Accuracy)
	}
	if len(res.Search) != 12 {
		t.Fatalf("search visited %d grid points, want 12", len(res.Search))
	}
}

// TestLinearlyInseparableNeedsKernel checks the same data is out of reach
// for a linear rule on the raw features, so the test above means something.
func TestLinearlyInseparableNeedsKernel(t *testing.T) {
	ds := TwoCircles(2000, 0.5, 0.08, 1)
	best := 0
	// The best of many directions through the origin scores about chance.
	for k := range 360 {
		a := float64(k) * math.Pi / 180
		for _, b := range []float64{-1, -0.5, 0, 0.5, 1} {
			correct := 0
			for i := range ds.N {
				x := ds.Row(i)
				if (math.Cos(a)*float64(x[0])+math.Sin(a)*float64(x[1])+b >= 0) == (ds.Y[i] == 1) {
					correct++
				}
			}
			best = max(best, correct)
		}
	}
	if acc := 100 * float64(best) / float64(ds.N); acc > 75 {
		t.Fatalf("a linear rule reaches %.1f%% on two circles", acc)
	}
}

func TestTrainDeterministicAcrossWorkers(t *testing.T) {
	ds := TwoCircles(600, 0.5, 0.1, 5)
	var first *Result
	for _, w := range []int{1, 2, runtime.GOMAXPROCS(0) + 3} {
		res, err := Train(ds, &Config{P: 256, Sigma: 0.5, C: 1, Seed: 9, Workers: w})
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = res
			continue
		}
		a, b := first.Spec, res.Spec
		if len(a.Kept) != len(b.Kept) || a.Alpha[0] != b.Alpha[0] {
			t.Fatalf("workers=%d: model differs", w)
		}
		for i := range a.Sign[0] {
			if a.Sign[0][i] != b.Sign[0][i] || a.NonZero[0][i] != b.NonZero[0][i] {
				t.Fatalf("workers=%d: weights differ", w)
			}
		}
	}
}

func TestTrainMultiClassAllLosses(t *testing.T) {
	// Three rings: one-vs-all with three weight vectors.
	a := TwoCircles(600, 0.3, 0.05, 1)
	b := TwoCircles(600, 0.65, 0.05, 2)
	ds := &data.Dataset{Name: "rings", D: 2, Classes: []string{"r0", "r1", "r2"}}
	add := func(src *data.Dataset, class map[int32]int32) {
		for i := range src.N {
			if c, ok := class[src.Y[i]]; ok {
				ds.X = append(ds.X, src.Row(i)...)
				ds.Y = append(ds.Y, c)
				ds.N++
			}
		}
	}
	add(a, map[int32]int32{0: 0, 1: 2})
	add(b, map[int32]int32{0: 1})
	for _, loss := range []ternary.Loss{ternary.Hinge, ternary.SquaredHinge, ternary.Logistic, ternary.Square} {
		res, err := Train(ds, &Config{P: 512, Sigma: 0.25, C: 10, Seed: 1, Loss: loss})
		if err != nil {
			t.Fatal(err)
		}
		ev, _ := Evaluate(res.Model, ds, 0)
		t.Logf("%v: training accuracy %.1f%%", loss, ev.Accuracy)
		if ev.Accuracy < 90 {
			t.Errorf("%v: training accuracy %.1f%% on three rings", loss, ev.Accuracy)
		}
		for v, h := range res.History {
			for i := 1; i < len(h); i++ {
				if h[i].Objective > h[i-1].Objective*(1+1e-12) {
					t.Fatalf("%v vector %d: objective rose at step %d", loss, v, i)
				}
			}
		}
	}
}

func TestTrainRejectsBadConfig(t *testing.T) {
	ds := TwoCircles(100, 0.5, 0.1, 1)
	for _, c := range []Config{{P: -1}, {Sigma: -1}, {C: math.NaN()}, {Validation: 1.5}, {Init: "zeros"}, {SigmaGrid: []float64{0}}} {
		if _, err := Train(ds, &c); err == nil {
			t.Errorf("Train accepted %+v", c)
		}
	}
}

// TestUSPSAccuracy is a regression check of the budgeted pipeline on real
// data: usps, standard 7,291/2,007 split, one fit at the 30 KiB default
// budget. It needs TRIT_DATA: make test-accuracy sets it to ../shared/data.
func TestUSPSAccuracy(t *testing.T) {
	dir := realDataDir(t)
	train, test, err := data.LoadStandard(dir, "usps")
	if err != nil {
		t.Fatal(err)
	}
	// One fit of the structure the default search chooses for usps (48
	// principal directions, binary weights, the 30 KiB budget filled) at
	// its σ and C: a regression check of the whole pipeline in about a
	// minute. Across seeds this fit scores 94.4–95.1% (docs/BENCHMARKS.md),
	// so the check's bar is 94.0%; the 94.5% bar is measured on
	// the default search by `make bench-peers` and reported there.
	res, err := Train(train, &Config{Projection: 48, Weights: "binary", Sigma: 8, C: 0.01, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := Evaluate(res.Model, test, 0)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := res.Bundle(train, BundleMeta{ModelID: "usps", Release: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("usps %+v σ=%g C=%g: test accuracy %.2f%%, bundle %d bytes, fit %.1fs", res.Structure, res.Sigma, res.C, ev.Accuracy, len(raw), res.TrainSeconds)
	if ev.Accuracy < 94 || len(raw) > DefaultBudget {
		t.Fatalf("usps test accuracy %.2f%% in %d bytes, want at least 94%% within %d", ev.Accuracy, len(raw), DefaultBudget)
	}
}
