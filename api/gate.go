package api

import (
	"fmt"
	"math"
	"strings"

	"github.com/trit-iot/trit/wire"
)

// ConfidenceGate is the gate every rollout applies by default, shadowed
// or not, to a calibrated model (bundle format 5) on its devices' own
// reports: the new model's share of windows reported unknown against the
// active model's, and the mean confidence of the windows each answered
// (docs/FLEET.md "Rollouts"). A shadow rollout judges it on the shadow
// reports, beside its other gates; any other rollout judges it on its
// first phase's devices (every device without phases) once they have
// installed the model and reported MinWindows windows with it, against
// what each reported with its previous model in the hour before — and a
// failure aborts the rollout and rolls those devices back. A figure
// within chance of its limit is judged again on more windows, up to
// DecideWindowsFactor times MinWindows (Judge).
type ConfidenceGate struct {
	// MaxUnknownIncrease: the most (0 … 1) by which the new model's
	// unknown share may exceed the active model's.
	MaxUnknownIncrease float64 `json:"max_unknown_increase"`
	// MaxConfidenceDrop: the most (0 … 1) by which the mean confidence of
	// the windows the new model answered may fall below the active
	// model's (not checked when either answered none).
	MaxConfidenceDrop float64 `json:"max_confidence_drop"`
	// MinWindows: the new model's windows a device reports before it is
	// first judged (and, times DecideWindowsFactor, by when it is
	// decided).
	MinWindows uint64 `json:"min_windows"`
}

// DefaultConfidenceGate is the gate of a rollout that names none.
var DefaultConfidenceGate = ConfidenceGate{MaxUnknownIncrease: 0.1, MaxConfidenceDrop: 0.2, MinWindows: 50}

// Check validates g.
func (g *ConfidenceGate) Check() error {
	unit := func(x float64) bool { return x >= 0 && x <= 1 }
	switch {
	case !unit(g.MaxUnknownIncrease) || !unit(g.MaxConfidenceDrop):
		return fmt.Errorf("confidence gate: max_unknown_increase %g and max_confidence_drop %g must be in [0, 1]", g.MaxUnknownIncrease, g.MaxConfidenceDrop)
	case g.MinWindows < 1 || g.MinWindows > 1<<40:
		return fmt.Errorf("confidence gate: min_windows %d, want 1 … 2^40", g.MinWindows)
	}
	return nil
}

// ModelFigures are one model's figures on a device's windows: how many,
// how many reported unknown, and the mean confidence of those answered
// (ConfidenceOK false when it answered none, or nobody said).
type ModelFigures struct {
	Windows      uint64
	Unknown      uint64
	Confidence   float64
	ConfidenceOK bool
	// Paired: the two models' figures are of the same windows (a shadow),
	// and OnlyUnknown counts those of Unknown the other model answered.
	Paired      bool
	OnlyUnknown uint64
}

// ShadowFigures are the active model's and the candidate's figures on a
// shadow report's windows, paired when the agent counted the windows
// only one of them reported unknown. An uncalibrated active model counts
// as reporting nothing unknown.
func ShadowFigures(rep *wire.ShadowReport) (active, cand ModelFigures) {
	ac, aok, cc, cok := rep.MeanConfidences()
	active = ModelFigures{Windows: rep.Windows, Confidence: ac, ConfidenceOK: aok}
	cand = ModelFigures{Windows: rep.Windows, Unknown: rep.CandidateUnknown, Confidence: cc, ConfidenceOK: cok}
	if rep.ActiveCalibrated {
		active.Unknown = rep.ActiveUnknown
	}
	if rep.UnknownPaired {
		active.Paired, active.OnlyUnknown = true, rep.ActiveOnlyUnknown
		cand.Paired, cand.OnlyUnknown = true, rep.CandidateOnlyUnknown
	}
	return active, cand
}

// unknownRiseSE is the standard error of the new model's unknown share
// less the active model's. On the same windows (Paired) it is a paired
// difference's: of the windows only one model reported unknown, b the
// active's and c the new model's, with shares p_b and p_c of the n
// windows, √((p_b + p_c − (p_c − p_b)²)/n) — the windows both models
// find ambiguous add nothing to it. Otherwise the two shares are
// independent: √(var₁ + var₂).
func unknownRiseSE(active, cand ModelFigures) float64 {
	if active.Paired && cand.Paired && active.Windows == cand.Windows && active.Windows > 0 {
		n := float64(active.Windows)
		pb := (float64(min(active.OnlyUnknown, active.Windows)) + 0.5) / (n + 1)
		pc := (float64(min(cand.OnlyUnknown, cand.Windows)) + 0.5) / (n + 1)
		return math.Sqrt(max(pb+pc-(pc-pb)*(pc-pb), 0) / n)
	}
	return math.Sqrt(varShare(active.Unknown, active.Windows) + varShare(cand.Unknown, cand.Windows))
}

// UnknownRate is Unknown/Windows, 0 without windows.
func (f ModelFigures) UnknownRate() float64 {
	if f.Windows == 0 {
		return 0
	}
	return float64(f.Unknown) / float64(f.Windows)
}

// FirstUnknownLimit is the most (0 … 1) of its windows a model may report
// unknown when there is no active model's share to compare with (a
// device's first model, or one after an uncalibrated model): a calibrated
// model's unknown is its least certain answers, and a device with
// ambiguous windows has more of them than the validation rows did, but
// one that cannot answer most of its windows must not ship.
const FirstUnknownLimit = 0.5

// GateDecision is what a gate concludes from the windows reported so far.
type GateDecision int

const (
	// GatePassed: the new model is within every limit.
	GatePassed GateDecision = iota
	// GateFailed: the new model is past a limit.
	GateFailed
	// GateUndecided: a figure is within chance of its limit on the windows
	// so far; the gate is judged again on more.
	GateUndecided
)

// DecideWindowsFactor bounds how long a gate may stay undecided: once a
// device has reported this many times the gate's minimum windows
// (ConfidenceGate.MinWindows; a shadow's ShadowPolicy.Windows), or its
// per-device timeout has passed, the figures as counted decide.
const DecideWindowsFactor = 4

// undecidedMark follows the gate's name in an undecided verdict.
const undecidedMark = " undecided: "

// gateZ is how many standard errors a figure must lie from its limit for
// the gate to decide before DecideWindowsFactor: 1.96, the two-sided 95%
// normal quantile (docs/FLEET.md "The confidence gate" gives the error
// rates this makes, simulated).
const gateZ = 1.96

// Judge compares the new model's figures with the active model's, as the
// shadow gates do, and returns the decision and a verdict naming every
// figure and the limits passed, failed or undecided. Against an active
// model without windows (no model before, or an uncalibrated one) the new
// model's unknown share may be at most FirstUnknownLimit, and confidence
// is not compared.
//
// A share counted on a few dozen windows is noisy: a model unknown on 7%
// of a device's windows shows anything from 3 to 11% on 40 of them. So
// unless final is set a figure fails only when it is past its limit by
// more than gateZ standard errors, and passes only when it is inside it
// by as much; in between the decision is GateUndecided and the caller
// judges again when more windows have come. With final (the caller's
// windows have reached DecideWindowsFactor times its minimum, or its
// time is up) each figure is compared with its limit as counted. The
// standard error of a difference of two shares is
// √(p₁(1−p₁)/n₁ + p₂(1−p₂)/n₂), each share counted as (k+1)/(n+2) so
// that 0 of 50 is not certainty; for the mean
// confidence, whose spread is not reported, m(1−m)/n bounds the variance
// of a mean of values in [0, 1] (the largest it can be). On the same
// windows (a shadow) the unknown shares are compared as a paired
// difference when the agent counted the windows only one model reported
// unknown (unknownRiseSE); the confidences, and shares from agents that
// did not count them, as independent — an error larger than the true
// one, so the gate waits longer rather than deciding more often.
func (g *ConfidenceGate) Judge(active, cand ModelFigures, final bool) (GateDecision, string) {
	au, cu := active.UnknownRate(), cand.UnknownRate()
	conf := func(f ModelFigures) string {
		if !f.ConfidenceOK {
			return "none answered"
		}
		return fmt.Sprintf("%.1f%%", 100*f.Confidence)
	}
	figures := fmt.Sprintf("%d windows, unknown %.1f%% (active %.1f%% of %d), confidence of answered windows %s (active %s)",
		cand.Windows, 100*cu, 100*au, active.Windows, conf(cand), conf(active))
	e := evidence{final: final}
	judge := e.judge
	if active.Windows == 0 {
		judge(cu-FirstUnknownLimit, math.Sqrt(varShare(cand.Unknown, cand.Windows)),
			fmt.Sprintf("unknown %.1f%% exceeds %g%% with no active model to compare with", 100*cu, 100*FirstUnknownLimit),
			fmt.Sprintf("unknown %.1f%% is within chance of %g%% with no active model to compare with", 100*cu, 100*FirstUnknownLimit))
	} else {
		e.unknownRise(active, cand, g.MaxUnknownIncrease)
	}
	if active.ConfidenceOK && cand.ConfidenceOK {
		bound := func(m float64, answered uint64) float64 {
			if answered == 0 {
				return 0
			}
			m = min(max(m, 0), 1) // a mean summed in floating point may stray past 1
			return m * (1 - m) / float64(answered)
		}
		se := math.Sqrt(bound(active.Confidence, active.Windows-min(active.Unknown, active.Windows)) + bound(cand.Confidence, cand.Windows-min(cand.Unknown, cand.Windows)))
		judge(active.Confidence-cand.Confidence-g.MaxConfidenceDrop, se,
			fmt.Sprintf("confidence of answered windows %.1f%% is below the active model's %.1f%% by more than %g%%", 100*cand.Confidence, 100*active.Confidence, 100*g.MaxConfidenceDrop),
			fmt.Sprintf("confidence of answered windows %.1f%% is within chance of the active model's %.1f%% − %g%%", 100*cand.Confidence, 100*active.Confidence, 100*g.MaxConfidenceDrop))
	}
	return e.decide("confidence gate", figures)
}

// evidence collects a gate's figures judged against their limits with
// their chance variation (ConfidenceGate.Judge has the rule).
type evidence struct {
	final             bool // decide as counted
	failed, undecided []string
}

// judge places excess, a figure less its limit (positive: past it),
// against se, the figure's standard error; fail and near say which
// figure, past its limit or within chance of it.
func (e *evidence) judge(excess, se float64, fail, near string) {
	if math.IsNaN(excess) || math.IsNaN(se) {
		e.failed = append(e.failed, fail+" (a figure the report cannot have)")
		return
	}
	switch {
	case e.final && excess > 0, !e.final && excess-gateZ*se > 0:
		e.failed = append(e.failed, fail)
	case !e.final && excess+gateZ*se > 0:
		e.undecided = append(e.undecided, near+fmt.Sprintf(" (±%.1f points at this many windows)", 100*gateZ*se))
	}
}

// unknownRise judges the new model's unknown share against the active
// model's plus limit: the one rule of both gates that compare them
// (ConfidenceGate.Judge, and ShadowPolicy.Judge's MaxUnknownIncrease),
// paired on a shadow's windows when the agent counted them
// (unknownRiseSE).
func (e *evidence) unknownRise(active, cand ModelFigures, limit float64) {
	au, cu := active.UnknownRate(), cand.UnknownRate()
	e.judge(cu-au-limit, unknownRiseSE(active, cand),
		fmt.Sprintf("unknown %.1f%% exceeds the active model's %.1f%% by more than %g%%", 100*cu, 100*au, 100*limit),
		fmt.Sprintf("unknown %.1f%% is within chance of the active model's %.1f%% + %g%%", 100*cu, 100*au, 100*limit))
}

// fail records a figure that fails whatever the windows.
func (e *evidence) fail(what string) { e.failed = append(e.failed, what) }

// decide returns the decision and its verdict for gate, naming figures.
func (e *evidence) decide(gate, figures string) (GateDecision, string) {
	switch {
	case len(e.failed) > 0:
		return GateFailed, gate + " failed: " + strings.Join(e.failed, ", ") + " (" + figures + ")"
	case len(e.undecided) > 0:
		return GateUndecided, gate + undecidedMark + strings.Join(e.undecided, ", ") + "; judged again with more windows (" + figures + ")"
	}
	return GatePassed, gate + " passed: " + figures
}

// share is k of n counted as (k+1)/(n+2), so that 0 of 50 is not
// certainty; varShare is its variance as a share of n. k above n (a
// report whose unknown windows exceed its windows) counts as n: a share
// above 1 would make the variance negative, its root NaN, and every
// comparison with it false — a pass.
func share(k, n uint64) float64 { return (float64(min(k, n)) + 1) / (float64(n) + 2) }

func varShare(k, n uint64) float64 {
	if n == 0 {
		return 0
	}
	p := share(k, n)
	return p * (1 - p) / float64(n)
}

// VerifyReport is what a device reported while its new model was judged
// by the confidence gate after its install: the active model's figures
// over the hour before it was notified, and the new model's since.
type VerifyReport struct {
	BaseWindows     uint64  `json:"base_windows"`
	BaseUnknown     uint64  `json:"base_unknown"`
	BaseAnswered    uint64  `json:"base_answered"`
	BaseAnsweredSum float64 `json:"base_answered_sum"`
	Windows         uint64  `json:"windows"`
	Unknown         uint64  `json:"unknown"`
	Answered        uint64  `json:"answered"`
	AnsweredSum     float64 `json:"answered_sum"`
}

// Figures returns the active model's and the new model's figures.
func (v *VerifyReport) Figures() (active, cand ModelFigures) {
	active = ModelFigures{Windows: v.BaseWindows, Unknown: v.BaseUnknown}
	if v.BaseAnswered > 0 {
		active.Confidence, active.ConfidenceOK = v.BaseAnsweredSum/float64(v.BaseAnswered), true
	}
	cand = ModelFigures{Windows: v.Windows, Unknown: v.Unknown}
	if v.Answered > 0 {
		cand.Confidence, cand.ConfidenceOK = v.AnsweredSum/float64(v.Answered), true
	}
	return active, cand
}
