package training

import (
	"slices"
	"testing"
)

// A kind that loses every small fit still reaches the final size: the flaw
// cod-rna showed, where random features judged at 512 features lost to
// threshold bits and never got the full-size fit they win.
func TestKeepBestCarriesEveryKind(t *testing.T) {
	cand := func(s Structure, balanced float64, degenerate string) *candidate {
		return &candidate{s: s, sel: selection{Score: balanced, Degenerate: degenerate}}
	}
	alone := Structure{Thresholds: 128}
	mix := Structure{Thresholds: 16, ThresholdWeight: 16, P: 4096}
	kernel := Structure{P: 8192}
	ranked := []*candidate{
		cand(alone, 91, ""),
		cand(alone, 90.8, ""),
		cand(mix, 90.5, ""),
		cand(alone, 90.1, ""),
		cand(kernel, 89.4, "constant"), // degenerate: never carried
		cand(kernel, 89.0, ""),
		cand(kernel, 88.0, ""),
		cand(mix, 87.0, ""),
	}
	got := keepBest(ranked, 2)
	want := []*candidate{ranked[0], ranked[1], ranked[2], ranked[5]}
	if !slices.Equal(got, want) {
		var got2 []Kind
		for _, cd := range got {
			got2 = append(got2, cd.s.Embedding())
		}
		t.Fatalf("keepBest(ranked, 2) kept %v, want the top two, the best mix and the best usable kernel", got2)
	}
	// keepBest must not write into the ranked slice's backing array.
	if ranked[2].s != mix || ranked[3].s != alone {
		t.Fatal("keepBest modified its input")
	}
	if got := keepBest(ranked[:1], 4); len(got) != 1 {
		t.Fatalf("keepBest of one candidate returned %d", len(got))
	}
}

func TestStructureEmbedding(t *testing.T) {
	for _, tc := range []struct {
		s    Structure
		want Kind
	}{
		{Structure{P: 2048}, "kernel"},
		{Structure{P: 2048, Binary: true}, "kernel"},
		{Structure{Thresholds: 16, ThresholdWeight: 16, P: 2048}, "mix"},
		{Structure{Thresholds: 128}, "thresholds"},
		{Structure{Projection: 48, P: 8192}, "projection"},
	} {
		if got := tc.s.Embedding(); got != tc.want {
			t.Errorf("%+v.Embedding() = %q, want %q", tc.s, got, tc.want)
		}
	}
}

// TestChooseOccam: for a recording the smallest model within one standard
// error of the best is shipped; for shuffled rows the best, and the
// smallest only among equals; never a degenerate one.
func TestChooseOccam(t *testing.T) {
	cand := func(score, se float64, bytes int, degenerate string) candidate {
		return candidate{sel: selection{Score: score, SE: se, Degenerate: degenerate}, point: SearchPoint{Bytes: bytes}}
	}
	cands := []candidate{
		cand(90, 1.5, 30000, ""), // the best
		cand(89, 2, 9000, ""),    // within one SE of the best
		cand(88.4, 1, 500, ""),   // just outside
		cand(89.9, 1, 100, "x"),  // degenerate
		cand(90, 1.5, 20000, ""), // as good as the best, smaller
	}
	if got := choose(cands, true, DefaultSelection, majority{}); got != &cands[1] {
		t.Errorf("recording: chose %+v, want the 9,000-byte model within one SE", got.point)
	}
	if got := choose(cands, false, DefaultSelection, majority{}); got != &cands[4] {
		t.Errorf("shuffled: chose %+v, want the smaller of the two best", got.point)
	}
}

// TestChooseMajority: a candidate right less often than the majority class
// on the validation rows ships only when it is at least majorityGain
// points ahead in balanced accuracy; when no candidate is admissible, the
// one right most often ships: the nearest to the constant that beat them.
func TestChooseMajority(t *testing.T) {
	cand := func(score, acc, bal float64, bytes int) candidate {
		return candidate{sel: selection{Score: score, SE: 0.1, Accuracy: acc, Balanced: bal}, point: SearchPoint{Bytes: bytes}}
	}
	maj := majority{class: "calm", accuracy: 95, balanced: 50}
	cands := []candidate{
		cand(56, 90, 56, 3000), // best balanced, but trades 5 points of accuracy for 6 of balance
		cand(52, 95.5, 52, 4000),
	}
	if got := choose(cands, true, DefaultSelection, maj); got != &cands[1] {
		t.Errorf("chose %+v, want the one right as often as the majority class", got.sel)
	}
	cands[0].sel.Balanced, cands[0].sel.Score = 61, 61 // now 11 points ahead: worth its lower accuracy
	if got := choose(cands, true, DefaultSelection, maj); got != &cands[0] {
		t.Errorf("chose %+v, want the one 11 points ahead in balanced accuracy", got.sel)
	}
	cands[0].sel.Balanced, cands[0].sel.Score, cands[1].sel.Accuracy = 56, 56, 94
	if got := choose(cands, true, DefaultSelection, maj); got != &cands[1] {
		t.Errorf("none admissible: chose %+v, want the one right most often", got.sel)
	}
}

// TestChooseSaturated: when every candidate validates near 100%, their
// standard errors are tiny and the one-standard-error rule cannot tell
// them apart from noise; a tolerance floor ships the smallest of those
// within it.
func TestChooseSaturated(t *testing.T) {
	cand := func(score float64, bytes int) candidate {
		return candidate{sel: selection{Score: score, SE: 0.05, Accuracy: score, Balanced: score}, point: SearchPoint{Bytes: bytes}}
	}
	cands := []candidate{cand(99.9, 2001), cand(99.4, 900), cand(99.2, 120), cand(98.5, 60)}
	noFloor := Selection{Metric: "balanced", Stability: 0.5, Floor: -1}
	if got := choose(cands, true, noFloor, majority{}); got != &cands[0] {
		t.Errorf("one SE: chose %d bytes, want the best (2,001)", got.point.Bytes)
	}
	if got := choose(cands, true, DefaultSelection, majority{}); got != &cands[2] {
		t.Errorf("the default (floor 1): chose %d bytes, want the smallest within a point (120)", got.point.Bytes)
	}
	// Shuffled rows: no tolerance, whatever the floor.
	if got := choose(cands, false, DefaultSelection, majority{}); got != &cands[0] {
		t.Errorf("shuffled rows: chose %d bytes, want the best (2,001)", got.point.Bytes)
	}
}

func TestMajorityOf(t *testing.T) {
	ds := indexed([]int32{0, 0, 0, 1, 0, 1, 1, 1, 0, 1}, 2)
	folds := []fold{
		{train: ds.Subset([]int{0, 1, 2, 3}), val: ds.Subset([]int{4, 5})}, // majority 0: 1 of 2 right, balanced 50
		{train: ds.Subset([]int{5, 6, 7}), val: ds.Subset([]int{8, 9})},    // majority 1: 1 of 2, balanced 50
	}
	m := majorityOf(folds, ds.Classes)
	if m.accuracy != 50 || m.balanced != 50 || m.class != "b" || !slices.Equal(m.folds, []float64{50, 50}) {
		t.Fatalf("%+v", m)
	}
}

// TestSteadilyAhead: the fallback asks for the constant to be at least as
// accurate as the model on every fold, not only over all of them.
func TestSteadilyAhead(t *testing.T) {
	fold := func(right, n int) []heldOut {
		h := make([]heldOut, n)
		for i := range right {
			h[i].correct = true
		}
		return h
	}
	m := majority{folds: []float64{98.9, 95.6, 92.8}} // seismic-bumps' later shifts
	if !m.steadilyAhead([][]heldOut{fold(97, 100), fold(95, 100), fold(92, 100)}) {
		t.Error("behind the constant on every fold: not steadily ahead")
	}
	if m.steadilyAhead([][]heldOut{fold(97, 100), fold(96, 100), fold(92, 100)}) {
		t.Error("ahead of the constant on one fold: steadily ahead")
	}
	// eeg-eye-state: the constant right on all of one period and none of another.
	if (majority{folds: []float64{100, 63.5, 0}}).steadilyAhead([][]heldOut{fold(40, 100), fold(50, 100), fold(60, 100)}) {
		t.Error("a constant at 0% on one fold: steadily ahead")
	}
	if m.steadilyAhead([][]heldOut{fold(1, 100)}) || m.steadilyAhead(nil) {
		t.Error("folds that do not match: steadily ahead")
	}
}

// TestWorthFullCount: on shifted folds a tree finalist is fitted at its
// full count only while doubling its trees helped: its largest prefix beat
// the one before it by more than choose's tolerance (choose would ship the
// smaller of two models within it). On shuffled rows, where choose ships
// the best outright, always.
func TestWorthFullCount(t *testing.T) {
	s := Structure{Trees: 1024, Depth: 2, Binary: true}
	at := func(trees int, score, se float64) candidate {
		return candidate{s: s, c: 1, sel: selection{Score: score, SE: se}, point: SearchPoint{Structure: Structure{Trees: trees}}}
	}
	finalist := &candidate{s: s, c: 1}
	cases := []struct {
		name    string
		shifted bool
		fitted  []candidate
		want    bool
	}{
		{"no prefixes fitted", true, nil, true},
		{"one prefix fitted", true, []candidate{at(512, 80, 0.5)}, true},
		{"rising beyond the tolerance", true, []candidate{at(128, 70, 0.5), at(256, 74, 0.5), at(512, 76, 0.5)}, true},
		{"rising within one point (the floor)", true, []candidate{at(128, 70, 0.5), at(256, 74, 0.5), at(512, 74.8, 0.5)}, false},
		{"rising within one SE", true, []candidate{at(256, 74, 2), at(512, 75.5, 2)}, false},
		{"falling", true, []candidate{at(256, 74, 0.5), at(512, 73, 0.5)}, false},
		{"shuffled: rising a little", false, []candidate{at(256, 74, 0.5), at(512, 74.2, 0.5)}, true},
		{"shuffled: falling", false, []candidate{at(256, 74, 0.5), at(512, 73, 0.5)}, true},
		// Other candidates' fits do not count: another C, another depth,
		// or the full count itself.
		{"others' prefixes", true, []candidate{
			at(256, 70, 0.5), at(512, 80, 0.5),
			{s: s, c: 2, sel: selection{Score: 60}, point: SearchPoint{Structure: Structure{Trees: 512}}},
			{s: Structure{Trees: 1024, Depth: 6, Binary: true}, c: 1, sel: selection{Score: 90}, point: SearchPoint{Structure: Structure{Trees: 128}}},
			at(1024, 60, 0.5),
		}, true},
	}
	for _, tc := range cases {
		sr := &searcher{c: &Config{Selection: DefaultSelection}, shifted: tc.shifted}
		if got := sr.worthFullCount(finalist, tc.fitted); got != tc.want {
			t.Errorf("%s: worthFullCount = %v, want %v", tc.name, got, tc.want)
		}
	}
	sr := &searcher{c: &Config{Selection: DefaultSelection}, shifted: true}
	if !sr.worthFullCount(&candidate{s: Structure{P: 512}}, []candidate{at(256, 74, 0.5), at(512, 73, 0.5)}) {
		t.Error("a candidate without trees is always worth its full size")
	}
}
