package training

import (
	"testing"
)

// TestUnknownRisesWithDrift: on a generated recording whose sensors drift,
// a model trained on the early rows makes more errors later, and its
// unknown rate over the later rows rises where the errors do (positive
// correlation over the tenths), and the windows it marks unknown are less
// accurate than those it answers.
func TestUnknownRisesWithDrift(t *testing.T) {
	all := DriftingSensors(4000, 8, 3, 5)
	rows := func(from, to int) []int {
		var out []int
		for i := from; i < to; i++ {
			out = append(out, i)
		}
		return out
	}
	train, later := all.Subset(rows(0, 2500)), all.Subset(rows(2500, 4000))
	res, err := Train(train, &Config{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	cr, err := EvaluateConfidence(res.Model, later, res.Model.Thresholds(), 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("later rows: accuracy %.1f%%, error by tenth %.0f, unknown by tenth %.1f, r %+.2f, accuracy unknown %.1f%% answered %.1f%%",
		cr.Accuracy, cr.ErrorSegments, cr.Segments, cr.UnknownErrorCorrelation, cr.UnknownAccuracy, cr.Answered)
	if cr.ErrorSegments[9] <= cr.ErrorSegments[0] {
		t.Fatalf("the stream does not drift: error %.1f%% in the first tenth, %.1f%% in the last", cr.ErrorSegments[0], cr.ErrorSegments[9])
	}
	if cr.UnknownErrorCorrelation <= 0 {
		t.Errorf("unknown rate and error rate over the tenths: r = %+.2f, want positive", cr.UnknownErrorCorrelation)
	}
	if cr.Unknown == 0 || cr.UnknownAccuracy >= cr.Answered {
		t.Errorf("%d unknown windows, %.1f%% right, answered %.1f%%: want unknown ones less accurate", cr.Unknown, cr.UnknownAccuracy, cr.Answered)
	}
}
