package api

import (
	"fmt"
	"strings"
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
// failure aborts the rollout and rolls those devices back.
type ConfidenceGate struct {
	// MaxUnknownIncrease: the most (0 … 1) by which the new model's
	// unknown share may exceed the active model's.
	MaxUnknownIncrease float64 `json:"max_unknown_increase"`
	// MaxConfidenceDrop: the most (0 … 1) by which the mean confidence of
	// the windows the new model answered may fall below the active
	// model's (not checked when either answered none).
	MaxConfidenceDrop float64 `json:"max_confidence_drop"`
	// MinWindows: the new model's windows a device reports before it is
	// judged.
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

// Judge compares the new model's figures with the active model's, as the
// shadow gates do: ok, and a verdict naming every figure and the limits
// passed or failed. Against an active model without windows (no model
// before, or an uncalibrated one) the new model's unknown share may be at
// most FirstUnknownLimit, and confidence is not compared.
func (g *ConfidenceGate) Judge(active, cand ModelFigures) (ok bool, verdict string) {
	au, cu := active.UnknownRate(), cand.UnknownRate()
	conf := func(f ModelFigures) string {
		if !f.ConfidenceOK {
			return "none answered"
		}
		return fmt.Sprintf("%.1f%%", 100*f.Confidence)
	}
	figures := fmt.Sprintf("%d windows, unknown %.1f%% (active %.1f%% of %d), confidence of answered windows %s (active %s)",
		cand.Windows, 100*cu, 100*au, active.Windows, conf(cand), conf(active))
	var failed []string
	switch {
	case active.Windows == 0 && cu > FirstUnknownLimit:
		failed = append(failed, fmt.Sprintf("unknown %.1f%% exceeds %g%% with no active model to compare with", 100*cu, 100*FirstUnknownLimit))
	case active.Windows > 0 && cu-au > g.MaxUnknownIncrease:
		failed = append(failed, fmt.Sprintf("unknown %.1f%% exceeds the active model's %.1f%% by more than %g%%", 100*cu, 100*au, 100*g.MaxUnknownIncrease))
	}
	if active.ConfidenceOK && cand.ConfidenceOK && active.Confidence-cand.Confidence > g.MaxConfidenceDrop {
		failed = append(failed, fmt.Sprintf("confidence of answered windows %.1f%% is below the active model's %.1f%% by more than %g%%",
			100*cand.Confidence, 100*active.Confidence, 100*g.MaxConfidenceDrop))
	}
	if len(failed) > 0 {
		return false, "confidence gate failed: " + strings.Join(failed, ", ") + " (" + figures + ")"
	}
	return true, "confidence gate passed: " + figures
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
