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
	if got := choose(cands, true, DefaultSelection); got != &cands[1] {
		t.Errorf("recording: chose %+v, want the 9,000-byte model within one SE", got.point)
	}
	if got := choose(cands, false, DefaultSelection); got != &cands[4] {
		t.Errorf("shuffled: chose %+v, want the smaller of the two best", got.point)
	}
}
