package api

import (
	"strings"
	"testing"
)

// TestConfidenceGateJudge: against an active model, the unknown share may
// rise by MaxUnknownIncrease; with none (a device's first model), it may
// be up to FirstUnknownLimit — a first model whose least certain answers
// are 16% of a device's windows ships, one that cannot answer most of them
// does not.
func TestConfidenceGateJudge(t *testing.T) {
	g := DefaultConfidenceGate
	for _, c := range []struct {
		active, cand ModelFigures
		ok           bool
		want         string
	}{
		{ModelFigures{Windows: 136, Unknown: 2}, ModelFigures{Windows: 100, Unknown: 16}, false, "exceeds the active model's 1.5% by more than 10%"},
		{ModelFigures{Windows: 136, Unknown: 2}, ModelFigures{Windows: 100, Unknown: 10}, true, "confidence gate passed"},
		{ModelFigures{}, ModelFigures{Windows: 51, Unknown: 8}, true, "active 0.0% of 0"},
		{ModelFigures{}, ModelFigures{Windows: 100, Unknown: 51}, false, "exceeds 50% with no active model to compare with"},
		{ModelFigures{}, ModelFigures{Windows: 1548, Unknown: 1548}, false, "unknown 100.0% exceeds 50%"},
	} {
		ok, verdict := g.Judge(c.active, c.cand)
		if ok != c.ok || !strings.Contains(verdict, c.want) {
			t.Errorf("%+v against %+v: %v %q, want %v and %q", c.cand, c.active, ok, verdict, c.ok, c.want)
		}
	}
}
