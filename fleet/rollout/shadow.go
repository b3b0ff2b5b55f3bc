package rollout

import (
	"fmt"
	"math"
	"time"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/wire"
)

// A shadow rollout proves a candidate on live data before any device
// activates it. The devices of its first Shadow.Phases phases (all its
// devices without phases) are sent the bundle in shadow mode first
// (wire.ModeShadow): each verifies and stores it like an install, then
// scores it beside its active model on every window and reports the
// comparison in telemetry (wire.ShadowReport), without ever letting it
// change an output. Once a device has scored MinWindows windows its
// report is judged by the gates — the shares on evidence, undecided
// within chance of their limits until api.DecideWindowsFactor ×
// MinWindows or the per-device timeout, then as counted
// (api.ShadowPolicy.Judge):
//
//   - agreement with the active model ≥ MinAgreement;
//   - Jensen–Shannon divergence, in bits, between the two models' class
//     distributions over the same windows ≤ MaxDivergence;
//   - share of the candidate's predictions with a normalised margin below
//     the device's models.low_margin ≤ MaxLowMargin;
//   - Jensen–Shannon divergence between the candidate's class distribution
//     on the device and the one it was trained on (the bundle's
//     train.class_counts) ≤ MaxTrainDivergence;
//   - the candidate's share of windows reported unknown less the active
//     model's ≤ MaxUnknownIncrease (a calibrated candidate only).
//
// A device failing a gate aborts the rollout at once: no device has
// activated the candidate, since promotion waits for every shadowing device
// of the phase to pass. Then each of them is sent the same bundle as an
// ordinary install (the promotion; the device already stores it), and the
// rollout goes on as any other.

// checkShadow validates a rollout's shadow policy p (nil: none).
func checkShadow(p *api.ShadowPolicy, r *Rollout) error {
	if p == nil {
		return nil
	}
	unit := func(x float64) bool { return x >= 0 && x <= 1 }
	switch {
	case p.Phases < 0 || (len(r.Pace.Phases) > 0 && p.Phases > len(r.Pace.Phases)):
		return fmt.Errorf("%w: shadow phases %d, the rollout has %d phases", ErrInvalid, p.Phases, len(r.Pace.Phases))
	case p.Phases > 1 && len(r.Pace.Phases) == 0:
		return fmt.Errorf("%w: shadow phases %d without phases", ErrInvalid, p.Phases)
	case r.Pace.Rate != nil:
		return fmt.Errorf("%w: a shadow rollout is paced by phases, not a rate", ErrInvalid)
	case r.Rollback:
		return fmt.Errorf("%w: a rollback cannot be shadowed", ErrInvalid)
	case !unit(p.MinAgreement) || !unit(p.MaxDivergence) || !unit(p.MaxLowMargin) || !unit(p.MaxTrainDivergence):
		return fmt.Errorf("%w: shadow gates min_agreement %g, max_divergence %g, max_low_margin %g, max_train_divergence %g: each must be in [0, 1]",
			ErrInvalid, p.MinAgreement, p.MaxDivergence, p.MaxLowMargin, p.MaxTrainDivergence)
	case !unit(p.MaxUnknownIncrease):
		return fmt.Errorf("%w: shadow gate max_unknown_increase %g: must be in [0, 1]", ErrInvalid, p.MaxUnknownIncrease)
	case p.MaxTrainDivergence > 0 && len(r.TrainCounts) == 0:
		return fmt.Errorf("%w: max_train_divergence needs a bundle that records its training class counts (train.class_counts, written by tritctl train)", ErrInvalid)
	case p.MinWindows > 1<<40:
		return fmt.Errorf("%w: shadow min_windows %d", ErrInvalid, p.MinWindows)
	}
	return nil
}

// ShadowCount is how many devices, first in Order, shadow first.
func (r *Rollout) ShadowCount() int {
	if r.Shadow == nil {
		return 0
	}
	if len(r.Pace.Phases) == 0 {
		return len(r.Order)
	}
	return r.phaseTarget(max(r.Shadow.Phases, 1) - 1)
}

// ApplyShadow records a device's shadow report. It returns false, changing
// nothing, unless the report is of the device's current shadow command.
func (r *Rollout) ApplyShadow(device string, rep *wire.ShadowReport, now time.Time) bool {
	d := r.Devices[device]
	if d == nil || r.Shadow == nil || d.Stage != api.StageShadow || rep.Rollout != r.ID || rep.Seq != d.Seq {
		return false
	}
	if d.State != api.DeviceShadowing && d.State != api.DeviceShadowPassed && !d.State.InProgress() {
		return false
	}
	d.Shadow, d.UpdatedAt = rep, now
	r.Updated, r.changed = now, true
	return true
}

// checkGates judges the shadowing devices with enough windows; one that
// fails aborts the rollout. It reports whether the rollout is aborted.
func (r *Rollout) checkGates(now time.Time) bool {
	if r.Shadow == nil {
		return false
	}
	for _, id := range r.Order[:r.ShadowCount()] {
		d := r.Devices[id]
		if d.State != api.DeviceShadowing || d.Shadow == nil || d.Shadow.Windows < r.Shadow.Windows() {
			continue
		}
		final := d.Shadow.Windows >= api.DecideWindowsFactor*r.Shadow.Windows() || r.timedOut(d, now)
		decision, verdict := r.Shadow.Judge(d.Shadow, r.TrainCounts, final)
		cdecision, cverdict := r.judgeShadowConfidence(d.Shadow, final)
		// One decision of the two: a failure names what failed; otherwise
		// both verdicts, undecided if either is.
		switch {
		case decision == api.GateFailed:
		case cdecision == api.GateFailed:
			decision, verdict = cdecision, cverdict
		default:
			if cverdict != "" {
				verdict += "; " + cverdict
			}
			if cdecision == api.GateUndecided {
				decision = api.GateUndecided
			}
		}
		if decision == api.GateUndecided {
			// Still shadowing: judged again on the next report.
			if d.Reason != verdict {
				d.Reason, d.UpdatedAt, r.Updated, r.changed = verdict, now, now, true
			}
			continue
		}
		d.Reason, d.UpdatedAt = verdict, now
		r.Updated, r.changed = now, true
		if decision == api.GatePassed {
			d.State = api.DeviceShadowPassed
			continue
		}
		d.State = api.DeviceGateFailed
		r.State, r.Finished = api.RolloutAborted, now
		r.Reason = fmt.Sprintf("shadow %s on %s: no device activated the candidate", verdict, id)
		return true
	}
	return false
}

// promotions returns the shadow-passed devices to promote now: once every
// device of the shadow set notified so far has passed or finished for good
// (none is still shadowing), all of them are promoted together.
func (r *Rollout) promotions(allowed int) []string {
	n := min(r.ShadowCount(), allowed)
	var ready []string
	for _, id := range r.Order[:n] {
		d := r.Devices[id]
		switch {
		case d.State == api.DeviceShadowPassed:
			ready = append(ready, id)
		case d.State == api.DevicePending:
			return nil // not yet notified: the phase is not complete
		case d.Stage == api.StageShadow && !(d.State.Finished() && d.Attempts > r.retriesFor(d.State)):
			return nil // still shadowing, or a shadow failure with a retry left
		}
	}
	return ready
}

// ShadowSummary sums the devices' latest shadow reports of the rollout:
// windows, agreeing windows, and the worst gate figures.
type ShadowSummary struct {
	Devices       int     `json:"devices"`
	Windows       uint64  `json:"windows"`
	Agreement     float64 `json:"agreement"`
	MaxDivergence float64 `json:"max_divergence"`
	MaxLowMargin  float64 `json:"max_low_margin"`
}

// ShadowSummary returns the summary, or nil for a rollout without reports.
func (r *Rollout) ShadowSummary() *ShadowSummary {
	var s ShadowSummary
	var agree uint64
	for _, id := range r.Order {
		rep := r.Devices[id].Shadow
		if rep == nil {
			continue
		}
		s.Devices++
		s.Windows += rep.Windows
		agree += rep.Agree
		if rep.ClassesCounted() { // not reported: no divergence to take
			s.MaxDivergence = math.Max(s.MaxDivergence, rep.Divergence())
		}
		s.MaxLowMargin = math.Max(s.MaxLowMargin, rep.LowMarginRate())
	}
	if s.Devices == 0 {
		return nil
	}
	if s.Windows > 0 {
		s.Agreement = float64(agree) / float64(s.Windows)
	}
	return &s
}
