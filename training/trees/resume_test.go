package trees

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/trit-iot/trit/inference"
)

// modelOf is FitModel's result for an ensemble.
func modelOf(e *ensemble) *Model {
	return &Model{Trees: e.trees, K: e.k, Values: e.values, Base: e.base, Best: e.best, loss: e.loss}
}

// Boosting resumed from an earlier fit (Options.From) returns the fit of
// the whole count from scratch, bit for bit: two and three classes,
// subsampled rows, held-out rows with boosting that goes on and that stops
// early (before, at and after the resumed count), resumed twice, and from
// trees whose tests were snapped to +0.
func TestResumeMatchesOneFit(t *testing.T) {
	const n, d = 6000, 6
	cuts := grid(d, 30)
	for _, c := range []struct {
		name    string
		classes int
		opt     Options
		valid   bool
		counts  []int // the fits resumed from, in order
	}{
		{"two classes", 2, Options{Trees: 30, Depth: 3, Seed: 1}, false, []int{10}},
		{"three classes, subsampled", 3, Options{Trees: 30, Depth: 4, Seed: 2, Subsample: 0.6}, false, []int{7, 19}},
		{"held-out rows", 3, Options{Trees: 40, Depth: 3, Seed: 3}, true, []int{15}},
		{"stopping early", 3, Options{Trees: 300, Depth: 4, Seed: 4, Patience: 3, LearningRate: 1}, true, []int{2, 5, 40}},
		{"one worker", 3, Options{Trees: 25, Depth: 5, Seed: 5, Workers: 1, Subsample: 0.8}, true, []int{12}},
	} {
		xs, y := checkerboard(n, d, c.classes, 0.1, 11, func(x []float32) int { return xor4(x) % c.classes })
		opt := c.opt
		opt.trackLoss = true
		if c.valid {
			vx, vy := checkerboard(1000, d, c.classes, 0.1, 12, func(x []float32) int { return xor4(x) % c.classes })
			opt.Valid = &Rows{X: vx, N: 1000, Y: vy}
		}
		want, err := fit(xs, n, d, y, c.classes, cuts, &opt)
		if err != nil {
			t.Fatal(err)
		}
		var from *Model
		for _, k := range c.counts {
			o := opt
			o.Trees, o.From = k, from
			e, err := fit(xs, n, d, y, c.classes, cuts, &o)
			if err != nil {
				t.Fatalf("%s: %d trees: %v", c.name, k, err)
			}
			from = modelOf(e)
		}
		// The trees' tests in the form the bundle keeps (−0 as +0).
		for i, v := range from.Trees.Value {
			if v == 0 {
				from.Trees.Value[i] = 0
			}
		}
		opt.From = from
		got, err := fit(xs, n, d, y, c.classes, cuts, &opt)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !slices.Equal(got.trees.Feature, want.trees.Feature) || !slices.Equal(got.values, want.values) ||
			!slices.Equal(got.loss, want.loss) || !slices.Equal(got.train, want.train) || got.best != want.best {
			t.Errorf("%s: resumed from %v trees, not the fit of %d from scratch (%d trees against %d)", c.name, c.counts, opt.Trees, got.trees.Count(), want.trees.Count())
		}
		for i, v := range got.trees.Value[:min(len(got.trees.Value), len(want.trees.Value))] {
			if v != want.trees.Value[i] { // −0 == +0
				t.Errorf("%s: test %d is %v, want %v", c.name, i, v, want.trees.Value[i])
				break
			}
		}
		if c.name == "stopping early" && (want.trees.Count() == opt.Trees || want.trees.Count() <= c.counts[1]) {
			t.Fatalf("%s: boosting stopped at %d trees: the case wants it between the resumed counts", c.name, want.trees.Count())
		}
	}
}

// From must be FitModel's, for the same depth and no more trees.
func TestResumeRefusesOtherModels(t *testing.T) {
	const n, d = 500, 4
	xs, y := checkerboard(n, d, 2, 0.1, 1, func(x []float32) int { return xor4(x) % 2 })
	cuts := grid(d, 10)
	e, err := fit(xs, n, d, y, 2, cuts, &Options{Trees: 5, Depth: 3})
	if err != nil {
		t.Fatal(err)
	}
	m := modelOf(e)
	bare := *m
	bare.loss = nil
	other := *m
	other.Base = []float64{math.Pi}
	offCuts := *m
	offCuts.Trees = &inference.Trees{Depth: m.Trees.Depth, Feature: m.Trees.Feature, Value: slices.Clone(m.Trees.Value)}
	offCuts.Trees.Value[0] += 0.001
	e3, err := fit(xs, n, d, y, 2, cuts, &Options{Trees: 5, Depth: 3})
	if err != nil {
		t.Fatal(err)
	}
	xs3, y3 := checkerboard(n, d, 3, 0.1, 1, func(x []float32) int { return xor4(x) % 3 })
	for name, o := range map[string]Options{
		"another depth":  {Trees: 10, Depth: 4, From: m},
		"more trees":     {Trees: 4, Depth: 3, From: m},
		"not FitModel's": {Trees: 10, Depth: 3, From: &bare},
		"other labels":   {Trees: 10, Depth: 3, From: &other},
	} {
		if _, err := fit(xs, n, d, y, 2, cuts, &o); !errors.Is(err, ErrOptions) {
			t.Errorf("%s: %v, want ErrOptions", name, err)
		}
	}
	// A two-class model (one score) for three classes.
	if _, err := fit(xs3, n, d, y3, 3, cuts, &Options{Trees: 10, Depth: 3, From: modelOf(e3)}); !errors.Is(err, ErrOptions) {
		t.Errorf("other classes: %v, want ErrOptions", err)
	}
}
