package api

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestConfidenceGateJudge: against an active model, the unknown share may
// rise by MaxUnknownIncrease; with none (a device's first model), it may
// be up to FirstUnknownLimit — a first model whose least certain answers
// are 16% of a device's windows ships, one that cannot answer most of them
// does not. A figure within chance of its limit is undecided until the
// caller says the windows are enough (final), then counted as is.
func TestConfidenceGateJudge(t *testing.T) {
	g := DefaultConfidenceGate
	for _, c := range []struct {
		active, cand ModelFigures
		final        bool
		want         GateDecision
		text         string
	}{
		// 16% against 1.5% on 100 windows: 14.5 points up, ±7.6 of chance.
		{ModelFigures{Windows: 136, Unknown: 2}, ModelFigures{Windows: 100, Unknown: 16}, false, GateUndecided, "unknown 16.0% is within chance of the active model's 1.5% + 10%"},
		{ModelFigures{Windows: 136, Unknown: 2}, ModelFigures{Windows: 100, Unknown: 16}, true, GateFailed, "exceeds the active model's 1.5% by more than 10%"},
		{ModelFigures{Windows: 136, Unknown: 2}, ModelFigures{Windows: 400, Unknown: 80}, false, GateFailed, "unknown 20.0% exceeds the active model's 1.5% by more than 10%"},
		{ModelFigures{Windows: 136, Unknown: 2}, ModelFigures{Windows: 100, Unknown: 3}, false, GatePassed, "confidence gate passed"},
		// 10% against 1.5%: inside the limit as counted, not by enough.
		{ModelFigures{Windows: 136, Unknown: 2}, ModelFigures{Windows: 100, Unknown: 10}, false, GateUndecided, "judged again with more windows"},
		{ModelFigures{Windows: 136, Unknown: 2}, ModelFigures{Windows: 100, Unknown: 10}, true, GatePassed, "confidence gate passed"},
		{ModelFigures{}, ModelFigures{Windows: 51, Unknown: 8}, false, GatePassed, "active 0.0% of 0"},
		{ModelFigures{}, ModelFigures{Windows: 100, Unknown: 51}, false, GateUndecided, "within chance of 50% with no active model to compare with"},
		{ModelFigures{}, ModelFigures{Windows: 100, Unknown: 51}, true, GateFailed, "exceeds 50% with no active model to compare with"},
		{ModelFigures{}, ModelFigures{Windows: 1548, Unknown: 1548}, false, GateFailed, "unknown 100.0% exceeds 50%"},
		// More unknown windows than windows (the wire bounds unknown by
		// predictions, not by the histogram): a share above 1 made the
		// standard error NaN, and every comparison with NaN false — a pass.
		{ModelFigures{Windows: 360, Unknown: 7}, ModelFigures{Windows: 50, Unknown: 60}, false, GateFailed, "unknown 120.0% exceeds"},
		{ModelFigures{}, ModelFigures{Windows: 50, Unknown: 60}, false, GateFailed, "unknown 120.0% exceeds 50%"},
		// Confidence 39.2% against 90.2% over 49 answered windows each.
		{ModelFigures{Windows: 50, Unknown: 1, Confidence: 0.902, ConfidenceOK: true}, ModelFigures{Windows: 50, Unknown: 1, Confidence: 0.392, ConfidenceOK: true}, false, GateFailed, "below the active model's 90.2% by more than 20%"},
		{ModelFigures{Windows: 50, Unknown: 1, Confidence: 0.902, ConfidenceOK: true}, ModelFigures{Windows: 50, Unknown: 1, Confidence: 0.75, ConfidenceOK: true}, false, GateUndecided, "confidence of answered windows 75.0% is within chance"},
		{ModelFigures{Windows: 50, Unknown: 1, Confidence: 0.902, ConfidenceOK: true}, ModelFigures{Windows: 50, Unknown: 1, Confidence: 0.88, ConfidenceOK: true}, false, GatePassed, "confidence gate passed"},
	} {
		got, verdict := g.Judge(c.active, c.cand, c.final)
		if got != c.want || !strings.Contains(verdict, c.text) {
			t.Errorf("%+v against %+v (final %v): %v %q, want %v and %q", c.cand, c.active, c.final, got, verdict, c.want, c.text)
		}
	}
}

// TestConfidenceGateErrorRates: a canary judged from 50 windows, again
// every 10, decided by the counts at 200, against an hour of 360 windows
// at 2% unknown — what the rule is for. A model 5 points above the active
// one failed one rollout in ten when the counts at 50 windows decided;
// one 15 points above passed one in six. The rule must keep both errors
// smaller (docs/FLEET.md "The confidence gate" quotes this test's
// figures).
func TestConfidenceGateErrorRates(t *testing.T) {
	g := DefaultConfidenceGate
	rng := rand.New(rand.NewPCG(1, 2))
	binomial := func(n int, p float64) uint64 {
		var k uint64
		for range n {
			if rng.Float64() < p {
				k++
			}
		}
		return k
	}
	failRate := func(au, cu float64) (sequential, counted, windows float64) {
		const trials = 1000
		var seqFails, countFails int
		var judged uint64
		for range trials {
			active := ModelFigures{Windows: 360, Unknown: binomial(360, au)}
			stream := make([]bool, DecideWindowsFactor*g.MinWindows)
			for i := range stream {
				stream[i] = rng.Float64() < cu
			}
			count := func(n uint64) ModelFigures {
				f := ModelFigures{Windows: n}
				for _, u := range stream[:n] {
					if u {
						f.Unknown++
					}
				}
				return f
			}
			if d, _ := g.Judge(active, count(g.MinWindows), true); d == GateFailed {
				countFails++
			}
			for n := g.MinWindows; ; n += 10 {
				d, _ := g.Judge(active, count(n), n >= DecideWindowsFactor*g.MinWindows)
				if d == GateUndecided {
					continue
				}
				judged += n
				if d == GateFailed {
					seqFails++
				}
				break
			}
		}
		return float64(seqFails) / trials, float64(countFails) / trials, float64(judged) / trials
	}
	for _, c := range []struct {
		cu      float64
		maxFail float64 // a good model: fails at most this often
		minFail float64 // a bad one: fails at least this often
	}{
		{0.07, 0.03, 0},  // 5 points above: counted at 50 windows, about 10% failed
		{0.09, 0.15, 0},  // 7 points: about 23%
		{0.17, 1, 0.90},  // 15 points: about 84%
		{0.30, 1, 0.995}, // 28 points
	} {
		seq, counted, windows := failRate(0.02, c.cu)
		t.Logf("unknown 2%% → %.0f%%: fails %.1f%% of rollouts, decided after %.0f windows on average (counted at %d windows: %.1f%%)", 100*c.cu, 100*seq, windows, g.MinWindows, 100*counted)
		if seq > c.maxFail || seq < c.minFail {
			t.Errorf("unknown 2%% → %.0f%%: fails %.1f%% of rollouts, want %.1f%% … %.1f%%", 100*c.cu, 100*seq, 100*c.minFail, 100*c.maxFail)
		}
	}
}

// TestShadowPairedDecidesSooner: on a shadow both models score the same
// windows, and the windows one finds ambiguous the other mostly does too.
// Judged on the windows only one of them reported unknown (the agent's
// paired counts), the gate decides on fewer windows than with the two
// shares taken as independent, and no less correctly. Simulated: the
// active model unknown on 4% of windows, the candidate on 90% of those
// and on a share q of the others; from 100 windows, again every 10,
// decided as counted at 400; 1,000 shadows a case.
func TestShadowPairedDecidesSooner(t *testing.T) {
	g := DefaultConfidenceGate
	rng := rand.New(rand.NewPCG(3, 4))
	const first = 100
	run := func(q float64, paired bool) (fails float64, windows float64) {
		const trials = 1000
		var failed int
		var judged uint64
		for range trials {
			var act, cand ModelFigures
			for n := uint64(1); ; n++ {
				au := rng.Float64() < 0.04
				cu := au && rng.Float64() < 0.9 || !au && rng.Float64() < q
				act.Windows, cand.Windows = n, n
				if au {
					act.Unknown++
				}
				if cu {
					cand.Unknown++
				}
				if au && !cu {
					act.OnlyUnknown++
				}
				if cu && !au {
					cand.OnlyUnknown++
				}
				act.Paired, cand.Paired = paired, paired
				if n < first || n%10 != 0 {
					continue
				}
				d, _ := g.Judge(act, cand, n >= DecideWindowsFactor*first)
				if d == GateUndecided {
					continue
				}
				if d == GateFailed {
					failed++
				}
				judged += n
				break
			}
		}
		return float64(failed) / trials, float64(judged) / trials
	}
	for _, c := range []struct {
		q                float64
		rise             string
		maxFail, minFail float64
	}{
		{0.06, "+5 points", 0.03, 0},
		{0.165, "+15 points", 1, 0.9},
	} {
		pf, pw := run(c.q, true)
		uf, uw := run(c.q, false)
		t.Logf("unknown %s: paired fails %.1f%% after %.0f windows on average; unpaired %.1f%% after %.0f", c.rise, 100*pf, pw, 100*uf, uw)
		if pf > c.maxFail || pf < c.minFail {
			t.Errorf("unknown %s: paired fails %.1f%%, want %.1f%% … %.1f%%", c.rise, 100*pf, 100*c.minFail, 100*c.maxFail)
		}
		if pw >= uw {
			t.Errorf("unknown %s: paired decided after %.0f windows on average, unpaired after %.0f", c.rise, pw, uw)
		}
	}
}
