package api

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/trit-iot/trit/wire"
)

// ShadowPolicy makes a rollout shadow its candidate before activating it
// (docs/FLEET.md "Shadow deployments and gates on predictions"). A gate
// whose limit is zero is not checked.
type ShadowPolicy struct {
	// Phases is how many leading phases shadow first; 0 means 1.
	Phases int `json:"phases,omitempty"`
	// MinWindows is how many windows a device must score before its gates
	// are judged; 0 means DefaultShadowWindows.
	MinWindows uint64 `json:"min_windows,omitempty"`
	// MinAgreement: the least share (0 … 1) of windows on which the
	// candidate predicts the active model's class.
	MinAgreement float64 `json:"min_agreement,omitempty"`
	// MaxDivergence: the largest Jensen–Shannon divergence in bits (0 … 1)
	// between the candidate's and the active model's class distributions.
	// Both divergence gates need the report's confusion matrix, which
	// devices send for models of at most wire.MaxShadowClasses classes;
	// without it they fail.
	MaxDivergence float64 `json:"max_divergence,omitempty"`
	// MaxLowMargin: the largest share (0 … 1) of the candidate's
	// predictions with a low margin.
	MaxLowMargin float64 `json:"max_low_margin,omitempty"`
	// MaxTrainDivergence: the largest Jensen–Shannon divergence in bits
	// between the candidate's class distribution on the device and its
	// training data's (needs a bundle with train.class_counts).
	MaxTrainDivergence float64 `json:"max_train_divergence,omitempty"`
	// MaxUnknownIncrease: the largest amount (0 … 1) by which the
	// candidate's share of windows reported unknown may exceed the active
	// model's on the same windows. The candidate must be calibrated (a
	// format-5 bundle); an uncalibrated active model counts as reporting
	// nothing unknown.
	MaxUnknownIncrease float64 `json:"max_unknown_increase,omitempty"`
}

// DefaultShadowWindows is ShadowPolicy.MinWindows when zero.
const DefaultShadowWindows = 100

// Shadow stages of a DeviceProgress.
const (
	StageShadow  = "shadow"  // the device's current command is the shadow one
	StagePromote = "promote" // it passed its gates; its current command is the install
)

// Windows is MinWindows or its default.
func (p *ShadowPolicy) Windows() uint64 {
	if p.MinWindows == 0 {
		return DefaultShadowWindows
	}
	return p.MinWindows
}

// Judge applies the gates to a report of at least MinWindows windows and
// returns the decision and a verdict naming every figure and the gates
// failed or undecided. train is the candidate's training class counts
// (for MaxTrainDivergence). The shares (agreement, low margin, unknown)
// are judged on evidence as ConfidenceGate.Judge judges its figures:
// within chance of their limits they are undecided until final (the
// caller's windows have reached DecideWindowsFactor times MinWindows, or
// its time is up), then compared as counted. The divergences, whose chance variation is
// not a share's, are compared as counted.
func (p *ShadowPolicy) Judge(rep *wire.ShadowReport, train map[string]uint64, final bool) (GateDecision, string) {
	agree, div, low := rep.Agreement(), rep.Divergence(), rep.LowMarginRate()
	// Without the confusion matrix the divergences are not known, and a
	// gate on them cannot pass.
	counted := rep.ClassesCounted()
	figures := fmt.Sprintf("%d windows, agreement %.1f%%, divergence %.3f bits, low margin %.1f%%", rep.Windows, 100*agree, div, 100*low)
	if !counted {
		figures = fmt.Sprintf("%d windows, agreement %.1f%%, divergence not reported, low margin %.1f%%", rep.Windows, 100*agree, 100*low)
	}
	var tdiv float64
	if p.MaxTrainDivergence > 0 && counted {
		_, cand := rep.Histograms()
		tdiv = wire.JensenShannon(cand, train)
		figures += fmt.Sprintf(", divergence from training %.3f bits", tdiv)
	}
	active, cand := ShadowFigures(rep)
	au, cu := active.UnknownRate(), cand.UnknownRate()
	if p.MaxUnknownIncrease > 0 {
		figures += fmt.Sprintf(", unknown %.1f%% (active %.1f%%)", 100*cu, 100*au)
	}
	e := evidence{final: final}
	se := func(k uint64) float64 { return math.Sqrt(varShare(k, rep.Windows)) }
	switch {
	case p.MaxUnknownIncrease <= 0:
	case !rep.CandidateCalibrated:
		e.fail("unknown rate: the candidate has no calibration (a format-5 bundle), so its unknown rate cannot be judged")
	default:
		e.unknownRise(active, cand, p.MaxUnknownIncrease)
	}
	if p.MinAgreement > 0 {
		e.judge(p.MinAgreement-agree, se(rep.Agree),
			fmt.Sprintf("agreement %.1f%% < %g%%", 100*agree, 100*p.MinAgreement),
			fmt.Sprintf("agreement %.1f%% is within chance of %g%%", 100*agree, 100*p.MinAgreement))
	}
	if !counted && (p.MaxDivergence > 0 || p.MaxTrainDivergence > 0) {
		e.fail(fmt.Sprintf("divergence: the device reported no class counts for the shadow (a model of more than %d classes, or a report too large to carry them), so divergence cannot be judged", wire.MaxShadowClasses))
	}
	if counted && p.MaxDivergence > 0 && div > p.MaxDivergence {
		e.fail(fmt.Sprintf("divergence %.3f > %g bits", div, p.MaxDivergence))
	}
	if p.MaxLowMargin > 0 {
		e.judge(low-p.MaxLowMargin, se(rep.CandidateLowMargin),
			fmt.Sprintf("low margin %.1f%% > %g%%", 100*low, 100*p.MaxLowMargin),
			fmt.Sprintf("low margin %.1f%% is within chance of %g%%", 100*low, 100*p.MaxLowMargin))
	}
	if counted && p.MaxTrainDivergence > 0 && tdiv > p.MaxTrainDivergence {
		e.fail(fmt.Sprintf("divergence from training %.3f > %g bits", tdiv, p.MaxTrainDivergence))
	}
	switch {
	case len(e.failed) > 0:
		return GateFailed, "gate failed: " + strings.Join(e.failed, ", ") + " (" + figures + ")"
	case len(e.undecided) > 0:
		return GateUndecided, "gates undecided: " + strings.Join(e.undecided, ", ") + "; judged again with more windows (" + figures + ")"
	}
	return GatePassed, "gates passed: " + figures
}

// PlanRequest asks devices to score a candidate bundle on their window
// history (a dry run of a rollout): POST /v1/plan.
type PlanRequest struct {
	Bundle   string            `json:"bundle"`
	Devices  []string          `json:"devices,omitempty"`
	Selector map[string]string `json:"selector,omitempty"`
	// Wait bounds how long to wait for the devices; 0: 20 s.
	Wait time.Duration `json:"wait,omitempty"`
}

// DevicePlan is one device's answer to a plan.
type DevicePlan struct {
	Device string     `json:"device"`
	Plan   *wire.Plan `json:"plan,omitempty"`
	Error  string     `json:"error,omitempty"`
}

// PlanResult sums the devices' answers: of Windows windows in their
// histories, Changed would be classified differently by the candidate.
type PlanResult struct {
	Bundle   string       `json:"bundle"`
	Devices  []DevicePlan `json:"devices"`
	Windows  uint64       `json:"windows"`
	Changed  uint64       `json:"changed"`
	Answered int          `json:"answered"`
}
