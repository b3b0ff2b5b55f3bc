package rollout

import (
	"fmt"
	"slices"
	"time"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/wire"
)

// The confidence gate (api.ConfidenceGate): every rollout of a calibrated
// model has one unless it is turned off or a rollback — a model its
// devices cannot answer with must not ship as a success. A shadow rollout
// judges it on its shadow reports, beside its other gates (checkGates).
// Any other rollout judges it on its canary — its first phase's devices,
// every device without phases — after the install:
//
//   - when a canary device is notified, what it reported over the hour
//     before (its active model's windows, unknown ones and the confidence
//     of those answered, from its health history) is kept as the baseline
//     (Service.stepRollout, gateBaseline);
//   - its install's success makes it verifying, not succeeded; its
//     telemetry naming the rollout's bundle adds up (ApplyTelemetry);
//   - once it has reported MinWindows windows with the new model, Judge
//     decides: passed, it has succeeded; failed, it is gate-failed, the
//     rollout aborts (no device beyond the canary was notified, as a
//     phase starts only once the one before has finished) and GateFailed
//     asks the service to roll back the devices that installed it
//     (Service.autoRollback); undecided (a figure within chance of its
//     limit), it stays verifying with the verdict as its reason and is
//     judged again on every report, by the counted figures once it has
//     reported api.DecideWindowsFactor × MinWindows or its per-device
//     timeout has passed;
//   - a verifying device that does not report MinWindows windows within
//     the per-device timeout times out, as any device that does not
//     finish.

// Gated reports whether device id of r is judged by the confidence gate
// after its install: the rollout has a gate and no shadow, and the device
// is one of its canary.
func (r *Rollout) Gated(id string) bool {
	if r.Gate == nil || r.Shadow != nil {
		return false
	}
	n := len(r.Order)
	if len(r.Pace.Phases) > 0 {
		n = r.phaseTarget(0)
	}
	return slices.Index(r.Order[:n], id) >= 0
}

// ApplyTelemetry adds a verifying device's telemetry about the rollout's
// bundle to what the gate judges; false, changing nothing, for anything
// else.
func (r *Rollout) ApplyTelemetry(device string, m *wire.Telemetry, now time.Time) bool {
	d := r.Devices[device]
	if d == nil || d.State != api.DeviceVerifying || d.Verify == nil || m.Model == nil || m.Model.Bundle != r.Bundle || m.Confidence == nil {
		return false
	}
	c := m.Confidence
	var n uint64
	for _, k := range c.Histogram {
		n += k
	}
	d.Verify.Windows += n
	d.Verify.Unknown += c.Unknown
	if a, mean, ok := c.Answered(); ok {
		d.Verify.Answered += a
		d.Verify.AnsweredSum += mean * float64(a)
	}
	d.UpdatedAt, r.Updated, r.changed = now, now, true
	return true
}

// checkVerify judges the verifying devices with enough windows; one that
// fails aborts the rollout. It reports whether the rollout is aborted.
func (r *Rollout) checkVerify(now time.Time) bool {
	if r.Gate == nil {
		return false
	}
	for _, id := range r.Order {
		d := r.Devices[id]
		if d.State != api.DeviceVerifying || d.Verify == nil || d.Verify.Windows < r.Gate.MinWindows {
			continue
		}
		active, cand := d.Verify.Figures()
		final := d.Verify.Windows >= api.DecideWindowsFactor*r.Gate.MinWindows || r.timedOut(d, now)
		decision, verdict := r.Gate.Judge(active, cand, final)
		switch decision {
		case api.GatePassed:
			r.finish(d, api.DeviceSucceeded, verdict, now)
			continue
		case api.GateUndecided:
			if d.Reason != verdict {
				d.Reason, d.UpdatedAt, r.Updated, r.changed = verdict, now, now, true
			}
			continue
		}
		d.State, d.Reason, d.UpdatedAt = api.DeviceGateFailed, verdict, now
		r.State, r.Finished, r.Updated, r.changed = api.RolloutAborted, now, now, true
		r.GateFailed = true
		r.Reason = fmt.Sprintf("%s on %s: its canary devices that installed it are rolled back", verdict, id)
		return true
	}
	return false
}

// judgeShadowConfidence applies r's confidence gate to a shadow report:
// passed, with no verdict, when r has no gate or the candidate no
// calibration. With final (the report has api.DecideWindowsFactor times
// the windows the shadow gates first judge) it decides as counted.
func (r *Rollout) judgeShadowConfidence(rep *wire.ShadowReport, final bool) (api.GateDecision, string) {
	if r.Gate == nil || !rep.CandidateCalibrated {
		return api.GatePassed, ""
	}
	active, cand := api.ShadowFigures(rep)
	return r.Gate.Judge(active, cand, final)
}

// Installed lists the devices of a rollout whose gate failed that run its
// bundle: those it judged, and those still verifying.
func (r *Rollout) Installed() []string {
	var out []string
	for _, id := range r.Order {
		d := r.Devices[id]
		if d.Stage == "" && (d.State == api.DeviceVerifying || d.State == api.DeviceGateFailed || d.State == api.DeviceSucceeded) {
			out = append(out, id)
		}
	}
	return out
}
