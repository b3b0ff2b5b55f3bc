package fleet

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/store"
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
//     (Service.autoRollback);
//   - a verifying device that does not report enough windows within the
//     per-device timeout times out, as any device that does not finish.

// gated reports whether device id of r is judged by the confidence gate
// after its install: the rollout has a gate and no shadow, and the device
// is one of its canary.
func (r *Rollout) gated(id string) bool {
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
		ok, verdict := r.Gate.Judge(d.Verify.Figures())
		if ok {
			r.finish(d, api.DeviceSucceeded, verdict, now)
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
// ok when passed or when r has no gate.
func (r *Rollout) judgeShadowConfidence(rep *wire.ShadowReport) (bool, string) {
	if r.Gate == nil || !rep.CandidateCalibrated {
		return true, ""
	}
	ac, aok, cc, cok := rep.MeanConfidences()
	active := api.ModelFigures{Windows: rep.Windows, Confidence: ac, ConfidenceOK: aok}
	if rep.ActiveCalibrated {
		active.Unknown = rep.ActiveUnknown
	}
	cand := api.ModelFigures{Windows: rep.Windows, Unknown: rep.CandidateUnknown, Confidence: cc, ConfidenceOK: cok}
	return r.Gate.Judge(active, cand)
}

// installed lists the devices of a rollout whose gate failed that run its
// bundle: those it judged, and those still verifying.
func (r *Rollout) installed() []string {
	var out []string
	for _, id := range r.Order {
		d := r.Devices[id]
		if d.Stage == "" && (d.State == api.DeviceVerifying || d.State == api.DeviceGateFailed || d.State == api.DeviceSucceeded) {
			out = append(out, id)
		}
	}
	return out
}

// setGate gives a new rollout its confidence gate, or says why it has
// none.
func (s *Service) setGate(r *Rollout, req *api.RolloutRequest, calibrated bool) error {
	switch {
	case req.NoGate:
		r.GateNote = "turned off (no_gate)"
		return nil
	case req.Rollback:
		r.GateNote = "none: a rollback sends a model its devices ran before"
		return nil
	case !calibrated:
		r.GateNote = "none: the bundle has no calibration (format 5), so its devices report no confidence"
		return nil
	}
	g := api.DefaultConfidenceGate
	if req.Gate != nil {
		g = *req.Gate
		if g.MinWindows == 0 {
			g.MinWindows = api.DefaultConfidenceGate.MinWindows
		}
	}
	if err := g.Check(); err != nil {
		return fmt.Errorf("%w: %v", ErrRollout, err)
	}
	r.Gate = &g
	return nil
}

// gateBaseline is what device id reported over the hour before now: its
// active model's figures, the confidence gate's baseline.
func gateBaseline(tx store.Tx, id string, now time.Time) (*api.VerifyReport, error) {
	now = now.UTC()
	from := now.Add(-time.Hour).Unix()
	v := &api.VerifyReport{}
	for _, h := range []time.Time{now.Truncate(time.Hour).Add(-time.Hour), now.Truncate(time.Hour)} {
		var doc healthDoc
		if _, err := tx.Get(store.FleetHealth, store.HealthHourKey(id, hourName(h)), &doc); err != nil {
			if isDamaged(err) {
				continue // no baseline from a damaged document: the active model counts as reporting nothing
			}
			return nil, err
		}
		for _, p := range doc.Points {
			if p.Time >= from {
				v.BaseWindows += p.Windows
				v.BaseUnknown += p.Unknown
				v.BaseAnswered += p.Answered
				v.BaseAnsweredSum += p.AnsweredSum
			}
		}
	}
	return v, nil
}

// autoRollback rolls back the devices that installed the bundle of r,
// whose confidence gate failed, to the model each ran before: one
// rollback rollout, created by the fleet and approved by the gate (the
// rollout it undoes was approved with its gate), audited.
func (s *Service) autoRollback(r *Rollout) {
	ids := r.installed()
	note := func(text string) {
		if _, err := s.changeRollout(r.ID, func(x *Rollout, _ time.Time) error { x.AutoRollback, x.GateFailed = text, false; return nil }); err != nil {
			s.log.Error("rollout: recording its automatic rollback failed", "rollout", r.ID, "err", err)
		}
	}
	if len(ids) == 0 {
		note("none needed: no device had installed it")
		return
	}
	target, err := s.rollbackTarget(r)
	if err != nil {
		note("none: " + err.Error())
		s.log.Error("confidence gate failed; no automatic rollback", "rollout", r.ID, "err", err)
		return
	}
	newID := rollbackID(r.ID, s)
	now := s.opt.Now()
	by := Principal{Name: "fleet"}
	nr, err := s.createRollout(api.RolloutRequest{ID: newID, Bundle: target, Devices: ids, Timeout: r.Timeout, Rollback: true, AllowUnknown: true}, by,
		func(x *Rollout) {
			x.CreatedBy = "fleet: confidence gate of " + r.ID
			if x.Approval != nil {
				x.Approval = &api.Approval{ApprovedBy: "fleet: the confidence gate of " + r.ID, ApprovedAt: now}
			}
		})
	rec := store.AuditRecord{Time: now, Who: "fleet", Agent: "confidence gate", Action: "rollout.auto-rollback", Object: "rollout/" + newID, Outcome: store.AuditOK}
	if err != nil {
		note("none: " + strings.TrimPrefix(err.Error(), "fleet: "))
		rec.Outcome, rec.Detail = store.AuditFailed, fmt.Sprintf("rolling back %s after its confidence gate failed: %v", r.ID, err)
		s.audit.Record(rec)
		s.log.Error("confidence gate failed; the automatic rollback could not be created", "rollout", r.ID, "err", err)
		return
	}
	rec.Detail = fmt.Sprintf("rolls back %s, whose confidence gate failed (%s): %s", r.ID, Clip(r.Reason, 300), RolloutText(nr))
	s.audit.Record(rec)
	note(nr.ID)
	s.log.Warn("confidence gate failed: rolling back the devices that installed it", "rollout", r.ID, "rollback", nr.ID, "devices", len(ids))
}

// rollbackID names the automatic rollback of rollout id: id-rollback, or
// with a number when that exists.
func rollbackID(id string, s *Service) string {
	base := id
	if len(base) > 110 {
		base = base[:110]
	}
	for i := 0; ; i++ {
		cand := base + "-rollback"
		if i > 0 {
			cand = fmt.Sprintf("%s-rollback-%d", base, i+1)
		}
		if _, err := s.GetRollout(cand); err != nil {
			return cand
		}
	}
}
