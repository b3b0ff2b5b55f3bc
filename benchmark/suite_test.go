package benchmark

import (
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// set makes a report whose methods scored acc · bal as given.
func set(name string, scores map[string][2]float64) *PeersReport {
	r := &PeersReport{Dataset: name}
	for _, m := range slices.Sorted(maps.Keys(scores)) {
		s := scores[m]
		r.Results = append(r.Results, PeerResult{Method: m, Accuracy: s[0], Balanced: s[1]})
	}
	return r
}

func TestRanks(t *testing.T) {
	if got := ranks([]float64{90, 95, 90, 80}); !slices.Equal(got, []float64{2.5, 1, 2.5, 4}) {
		t.Fatalf("ranks %v", got)
	}
	// 741 of 776 test rows right, as Go and as Python compute it: the
	// same count is a tie (seismic-bumps, trit and XGBoost).
	goPct, pyPct := 100*float64(741)/776, float64(741)/776*100
	if goPct == pyPct {
		t.Fatalf("%v and %v are equal: the example no longer shows two roundings", goPct, pyPct)
	}
	if got := ranks([]float64{goPct, 96.65, pyPct}); !slices.Equal(got, []float64{2.5, 1, 2.5}) {
		t.Fatalf("ranks of one count computed two ways: %v", got)
	}
}

// TestSummarise: mean ranks over the sets with every ranked result (ties
// share), trit's deficit to the best other method per set and the worst,
// and the majority-class rule.
func TestSummarise(t *testing.T) {
	sets := []*PeersReport{
		set("a", map[string][2]float64{"trit": {90, 80}, "mlp-int8": {85, 82}, "xgboost": {88, 70}, "logreg": {80, 60}, "stump": {70, 55}, "majority": {60, 50}}),
		// trit behind on accuracy and below the majority class, not 10 points above it balanced.
		set("b", map[string][2]float64{"trit": {70, 58}, "mlp-int8": {75, 50}, "xgboost": {75, 52}, "logreg": {60, 50}, "stump": {60, 50}, "majority": {75, 50}}),
		// A skipped peer: no ranks for this set.
		set("c", map[string][2]float64{"trit": {99, 99}, "mlp-int8": {50, 50}}),
	}
	s := summarise(sets, rankedMethods)
	if len(s.Deficits) != 2 {
		t.Fatalf("deficits %+v", s.Deficits)
	}
	// Accuracy ranks: a: trit 1, mlp 3, xgb 2, logreg 4, stump 5; b: trit 3, mlp 1.5, xgb 1.5, logreg 4.5, stump 4.5.
	want := map[string]float64{"trit": 2, "mlp-int8": 2.25, "xgboost": 1.75, "logreg": 4.25, "stump": 4.75}
	for m, v := range want {
		if math.Abs(s.MeanRank[m]-v) > 1e-9 {
			t.Errorf("mean rank of %s %v, want %v", m, s.MeanRank[m], v)
		}
	}
	// Balanced: a: trit 2, mlp 1; b: trit 1, mlp tied with logreg and stump at 50 (4).
	if s.MeanRankBalanced["trit"] != 1.5 || s.MeanRankBalanced["mlp-int8"] != 2.5 {
		t.Errorf("balanced mean ranks %v", s.MeanRankBalanced)
	}
	if d := s.Deficits[0]; d.Accuracy != 2 || d.Balanced != -2 || d.Best != "xgboost" || d.Rank != 1 || d.RankBalanced != 2 {
		t.Errorf("set a: %+v", d)
	}
	if s.WorstDeficit != -5 || s.WorstDeficitBalanced != -2 {
		t.Errorf("worst deficits %v / %v", s.WorstDeficit, s.WorstDeficitBalanced)
	}
	if !slices.Equal(s.BelowMajority, []string{"b"}) {
		t.Errorf("below majority %v", s.BelowMajority)
	}
}

// TestLeaveOneOut: each set gets the variant that did best on the others,
// never judged on itself: variant a wins everywhere but on set x, where b
// is far better — yet x is still scored under a (chosen by the others),
// while y and z, whose others include x, see b's large win there.
func TestLeaveOneOut(t *testing.T) {
	peers := map[string][2]float64{"mlp-int8": {80, 80}, "xgboost": {80, 80}, "logreg": {70, 70}, "stump": {60, 60}, "majority": {50, 50}}
	mk := func(name string, a, b float64) *PeersReport {
		s := map[string][2]float64{"trit": {a, a}, "trit:a": {a, a}, "trit:b": {b, b}}
		for k, v := range peers {
			s[k] = v
		}
		return set(name, s)
	}
	sets := []*PeersReport{mk("x", 70, 95), mk("y", 82, 80), mk("z", 82, 80)}
	l := leaveOneOut(sets, []string{"a", "b"}, rankedMethods)
	got := map[string]string{}
	for _, s := range l.Sets {
		got[s.Dataset] = s.Chosen
	}
	// x: the others (y, z) prefer a (+2 vs 0). y: others x, z: a (−10+2)/2 = −4, b (15+0)/2 = 7.5 → b. z likewise.
	if got["x"] != "a" || got["y"] != "b" || got["z"] != "b" {
		t.Fatalf("choices %v", got)
	}
	if x := l.Sets[0]; x.Accuracy != 70 || x.Objective != 2 {
		t.Fatalf("x: %+v", x)
	}
	// The LODO summary ranks trit's LODO results: x 70 (behind by 10), y and z 80 (tied with the best).
	if l.Summary.WorstDeficit != -10 {
		t.Fatalf("LODO worst deficit %v", l.Summary.WorstDeficit)
	}
}

// TestLeaveOneOutBarsFirst: a preset that misses issue 36's bars on the
// other sets loses to one that misses none, whatever its mean deficit —
// seismic-bumps' case: a model 1.5 points below the majority class for
// 3 points of balance (mean deficit +0.75, two bars missed) against the
// majority class itself (mean deficit 0, none missed).
func TestLeaveOneOutBarsFirst(t *testing.T) {
	peers := map[string][2]float64{"mlp-int8": {96, 50}, "xgboost": {95, 49}, "logreg": {96, 50}, "stump": {96, 50}, "majority": {96, 50}}
	mk := func(name string, a, b [2]float64) *PeersReport {
		s := map[string][2]float64{"trit": a, "trit:a": a, "trit:b": b}
		for k, v := range peers {
			s[k] = v
		}
		return set(name, s)
	}
	sets := []*PeersReport{mk("s", [2]float64{94.5, 53}, [2]float64{96, 50}), mk("t", [2]float64{97, 60}, [2]float64{97, 60})}
	l := leaveOneOut(sets, []string{"a", "b"}, rankedMethods)
	if l.Misses["a"] != 2 || l.Misses["b"] != 0 || l.AllSets["a"] <= l.AllSets["b"] {
		t.Fatalf("misses %v, mean deficits %v: want a 2 bars missed with the better mean, b none", l.Misses, l.AllSets)
	}
	for _, x := range l.Sets {
		if x.Dataset == "t" && (x.Chosen != "b" || x.Misses != 0) {
			t.Fatalf("t: %+v, want b (no bar missed on s)", x)
		}
		if x.Dataset == "s" && x.Chosen != "a" {
			t.Fatalf("s: %+v, want a (t cannot tell them apart: the first listed)", x)
		}
	}
}

func TestVariantsOf(t *testing.T) {
	if vs, err := variantsOf("default, mean"); err != nil || len(vs) != 2 || vs[1].Selection.Metric != "mean" {
		t.Fatalf("%v %v", vs, err)
	}
	if vs, err := variantsOf("all"); err != nil || len(vs) != len(Variants) {
		t.Fatalf("all: %d %v", len(vs), err)
	}
	if _, err := variantsOf("nope"); err == nil {
		t.Fatal("unknown preset accepted")
	}
}

// TestMergeSuite: reports of separate runs join into one (a set in both:
// the later file's), their LODO taken over the presets every set has, and
// each preset's objective over all sets reported beside it.
func TestMergeSuite(t *testing.T) {
	peers := map[string][2]float64{"mlp-int8": {80, 80}, "xgboost": {80, 80}, "logreg": {70, 70}, "stump": {60, 60}, "majority": {50, 50}}
	mk := func(name string, def, mean float64, withMean bool) *PeersReport {
		s := map[string][2]float64{"trit": {def, def}, "trit:default": {def, def}}
		if withMean {
			s["trit:mean"] = [2]float64{mean, mean}
		}
		for k, v := range peers {
			s[k] = v
		}
		return set(name, s)
	}
	dir := t.TempDir()
	first, second := filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json")
	if err := writeJSONFile(first, &SuiteReport{Sets: []*PeersReport{mk("x", 70, 90, true), mk("y", 10, 10, true)}}); err != nil {
		t.Fatal(err)
	}
	if err := writeJSONFile(second, &SuiteReport{Sets: []*PeersReport{mk("y", 82, 80, true), mk("z", 82, 84, true)}}); err != nil {
		t.Fatal(err)
	}
	rep, err := mergeSuite([]string{first, second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Sets) != 3 || rep.Sets[1].Dataset != "y" || resultOf(rep.Sets[1], "trit").Accuracy != 82 {
		t.Fatalf("sets %d, y's trit %+v: want x, y (the later file's), z", len(rep.Sets), resultOf(rep.Sets[1], "trit"))
	}
	l := rep.LODO
	if l == nil || !slices.Equal(l.Variants, []string{"default", "mean"}) {
		t.Fatalf("LODO %+v: want default and mean, the presets every set has", l)
	}
	// Deficits to the best peer (80): default −10, +2, +2 → −2; mean +10, 0, +4 → 4.67.
	if d, m := l.AllSets["default"], l.AllSets["mean"]; d != -2 || math.Abs(m-14.0/3) > 1e-9 {
		t.Fatalf("objective over all sets: default %v, mean %v", d, m)
	}
	if _, err := mergeSuite([]string{filepath.Join(dir, "none.json")}, nil); err == nil {
		t.Fatal("a missing file merged")
	}
	// A preset one set lacks is left out of the LODO.
	if err := writeJSONFile(second, &SuiteReport{Sets: []*PeersReport{mk("z", 82, 84, false)}}); err != nil {
		t.Fatal(err)
	}
	if rep, err := mergeSuite([]string{first, second}, nil); err != nil || !slices.Equal(rep.LODO.Variants, []string{"default"}) {
		t.Fatalf("%v: LODO %+v, want default alone", err, rep.LODO)
	}
}

// A run whose --methods leaves peers out ranks trit among the methods it
// ran, and its table says which were not run; with no set holding a
// result from each of them it says so instead of printing zero ranks.
func TestSummariseAmongThoseRun(t *testing.T) {
	sets := []*PeersReport{
		set("a", map[string][2]float64{"trit": {90, 80}, "logreg": {85, 82}, "stump": {70, 55}, "majority": {60, 50}}),
		set("b", map[string][2]float64{"trit": {70, 58}, "logreg": {75, 50}, "stump": {60, 50}, "majority": {75, 50}}),
	}
	ranked := rankedIn(sets)
	if !slices.Equal(ranked, []string{"trit", "logreg", "stump"}) {
		t.Fatalf("ranked among %v", ranked)
	}
	s := summarise(sets, ranked)
	// Accuracy: a: trit 1, logreg 2, stump 3; b: trit 2, logreg 1, stump 3.
	if len(s.Deficits) != 2 || s.MeanRank["trit"] != 1.5 || s.MeanRank["logreg"] != 1.5 || s.MeanRank["stump"] != 3 {
		t.Fatalf("summary %+v", s)
	}
	var out strings.Builder
	writeSuiteTable(&out, &SuiteReport{Sets: sets, Summary: s})
	for _, want := range []string{"Not run, so not ranked: mlp-int8, xgboost.", "Mean rank over 2 sets among trit, logreg, stump", "trit 1.50 / "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the table does not say %q:\n%s", want, out.String())
		}
	}
	// trit alone: nothing to rank against.
	alone := []*PeersReport{set("a", map[string][2]float64{"trit": {90, 80}, "majority": {60, 50}})}
	out.Reset()
	writeSuiteTable(&out, &SuiteReport{Sets: alone, Summary: summarise(alone, rankedIn(alone))})
	if !strings.Contains(out.String(), "No ranked peer was run") || strings.Contains(out.String(), "Mean rank over") {
		t.Errorf("trit alone:\n%s", out.String())
	}
}

// TestPickedByValidation: beside the best peer on the test rows, trit is
// measured against the peer its validation folds rank first — the one a
// user choosing on those folds would ship (electricity, 2026-11-30: the
// stump is best on the test rows and last on the folds). Ties go to the
// first in the methods' order; trit is never its own pick; a set whose
// peers state no validation score has no pick.
func TestPickedByValidation(t *testing.T) {
	val := func(r *PeersReport, v map[string]float64) *PeersReport {
		for i := range r.Results {
			if x, ok := v[r.Results[i].Method]; ok {
				r.Results[i].Validation = &x
			}
		}
		return r
	}
	sets := []*PeersReport{
		val(set("a", map[string][2]float64{"trit": {71, 72}, "mlp-int8": {70.5, 71.4}, "xgboost": {72.2, 73.3}, "logreg": {74.7, 73.4}, "stump": {77.3, 75.1}}),
			map[string]float64{"trit": 99, "mlp-int8": 64.6, "xgboost": 65.1, "logreg": 58.6, "stump": 56.1}),
		// mlp-int8 and logreg tie on the folds: the first listed is the pick.
		val(set("b", map[string][2]float64{"trit": {92, 52}, "mlp-int8": {91, 36}, "xgboost": {91.5, 41.5}, "logreg": {92.5, 50}, "stump": {93.5, 66.5}}),
			map[string]float64{"mlp-int8": 98, "xgboost": 95, "logreg": 98, "stump": 72}),
		// No validation scores: no pick.
		set("c", map[string][2]float64{"trit": {80, 80}, "mlp-int8": {70, 70}, "xgboost": {70, 70}, "logreg": {70, 70}, "stump": {70, 70}}),
	}
	s := summarise(sets, rankedMethods)
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	if d := s.Deficits[0]; d.Picked != "xgboost" || !near(d.PickedAccuracy, -1.2) || !near(d.PickedBalanced, -1.3) || d.Best != "stump" {
		t.Errorf("set a: %+v", d)
	}
	if d := s.Deficits[1]; d.Picked != "mlp-int8" || !near(d.PickedAccuracy, 1) || !near(d.PickedBalanced, 16) {
		t.Errorf("set b: %+v", d)
	}
	if d := s.Deficits[2]; d.Picked != "" {
		t.Errorf("set c has a pick: %+v", d)
	}
	if !near(s.WorstVsPicked, -1.2) || !near(s.WorstVsPickedBalanced, -1.3) {
		t.Errorf("worst against the pick %v / %v", s.WorstVsPicked, s.WorstVsPickedBalanced)
	}
	var out strings.Builder
	writeSuiteTable(&out, &SuiteReport{Sets: sets, Summary: s})
	for _, want := range []string{"| -1.20 · -1.30 (xgboost) |", "| +1.00 · +16.00 (mlp-int8) |", "| – |\n", "validation folds rank first: -1.20 accuracy, -1.30 balanced"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the table does not say %q:\n%s", want, out.String())
		}
	}
}
