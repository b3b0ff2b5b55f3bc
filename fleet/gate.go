package fleet

import (
	"fmt"
	"strings"
	"time"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet/access"
	"github.com/trit-iot/trit/fleet/fault"
	"github.com/trit-iot/trit/fleet/inventory"
	"github.com/trit-iot/trit/fleet/rollout"
	"github.com/trit-iot/trit/store"
)

// The confidence gate's rule is the engine's (fleet/rollout/gate.go); what
// needs the service — the gate a new rollout gets, the baseline from the
// health history, the automatic rollback — is here.

// setGate gives a new rollout its confidence gate, or says why it has
// none.
func (s *Service) setGate(r *rollout.Rollout, req *api.RolloutRequest, calibrated bool) error {
	switch {
	case req.NoGate && req.Gate != nil:
		// A gate asked for and turned off at once: neither can be honoured
		// without ignoring the other.
		return fmt.Errorf("%w: gate and no_gate: give one", rollout.ErrInvalid)
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
		return fmt.Errorf("%w: %v", rollout.ErrInvalid, err)
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
		points, err := inventory.HourPoints(tx, id, h)
		if err != nil {
			if fault.IsDamaged(err) {
				continue // no baseline from a damaged document: the active model counts as reporting nothing
			}
			return nil, err
		}
		for _, p := range points {
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
func (s *Service) autoRollback(r *rollout.Rollout) {
	ids := r.Installed()
	note := func(text string) {
		if _, err := s.changeRollout(r.ID, func(x *rollout.Rollout, _ time.Time) error { x.AutoRollback, x.GateFailed = text, false; return nil }); err != nil {
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
	by := access.Principal{Name: "fleet"}
	nr, err := s.createRollout(api.RolloutRequest{ID: newID, Bundle: target, Devices: ids, Timeout: r.Timeout, Rollback: true, AllowUnknown: true}, by,
		func(x *rollout.Rollout) {
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
	rec.Detail = fmt.Sprintf("rolls back %s, whose confidence gate failed (%s): %s", r.ID, fault.Clip(r.Reason, 300), rollout.Text(nr))
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
