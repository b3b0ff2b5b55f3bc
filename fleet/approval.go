package fleet

import (
	"fmt"
	"time"

	"github.com/trit-iot/trit/api"
)

// The two-person rule (off by default; Options.TwoPerson, [rollouts]
// two_person): every rollout that changes what a device runs — rollbacks
// included — waits, before its first device is notified, until a person
// other than its creator approves it, as hawkBit's approval workflow
// does. It is part of the rollout's persisted state (api.Approval), so
// the rollout engine holds it on every replica and across restarts.
// Invariants:
//   - While the approval is pending, Step notifies at most Approval.After
//     devices in all (approvalCap): 0, or for a shadow rollout the
//     devices that shadow first — shadowing changes no device's answers,
//     so the approver can judge the candidate on the shadow's figures —
//     and with Approval.Promotion none of those is promoted.
//   - Only a person — not a machine account (Principal.Machine), not the
//     creator — approves, once, while the rollout is not done; the
//     approval is recorded with who and when (and in the audit trail).
//   - The one exception is an emergency rollback (api.Approval.Emergency):
//     a rollback made by an operator whose role holds PermEmergency (the
//     responder role, and no other), which goes out at once; it is
//     recorded as such in the rollout, audited as rollout.emergency-rollback
//     and raised as an alarm for EmergencyAlarmFor.
//   - With the rule off, nothing waits and nothing is recorded.

// EmergencyAlarmFor is how long an emergency rollback stays among the
// fleet's alarms after it was made.
const EmergencyAlarmFor = 7 * 24 * time.Hour

// approvalCap bounds allowed by a pending approval.
func (r *Rollout) approvalCap(allowed int) int {
	if r.Approval.Pending() {
		return min(allowed, r.Approval.After)
	}
	return allowed
}

// Approve records p's approval of r at now.
func (r *Rollout) Approve(p Principal, now time.Time) error {
	switch {
	case r.Approval == nil:
		return fmt.Errorf("%w: rollout %s needs no approval", ErrRollout, r.ID)
	case !r.Approval.Pending():
		return fmt.Errorf("%w: rollout %s was approved by %s already", ErrRollout, r.ID, r.Approval.ApprovedBy)
	case r.State.Done():
		return fmt.Errorf("%w: rollout %s is %s", ErrRollout, r.ID, r.State)
	case p.Name == "" || p.Name == r.CreatedBy:
		return fmt.Errorf("%w: %s created rollout %s; another operator must approve it (the two-person rule)", ErrRollout, p.Name, r.ID)
	case p.Machine:
		return fmt.Errorf("%w: %s is a machine account; only a person approves a rollout (the two-person rule)", ErrRollout, p.Name)
	}
	r.Approval.ApprovedBy, r.Approval.ApprovedAt = p.Name, now
	r.Updated, r.changed = now, true
	return nil
}

// requireApproval sets r's approval from the service's rule: with it on,
// r notifies no device (a shadow rollout: only its shadowing devices,
// promoting none) until another person approves it. An emergency
// rollback (emergency, checked by the caller) is approved by its
// creator's role at once, and marked.
func (s *Service) requireApproval(r *Rollout, emergency bool, now time.Time) {
	if !s.opt.TwoPerson {
		return
	}
	if emergency {
		r.Approval = &api.Approval{Emergency: true, ApprovedBy: r.CreatedBy, ApprovedAt: now}
		return
	}
	r.Approval = &api.Approval{}
	if r.Shadow != nil {
		r.Approval.After, r.Approval.Promotion = r.shadowCount(), true
	}
}

// Approve records operator by's approval of rollout id (a person; see
// ApproveAs): its devices are notified from the next tick on.
func (s *Service) Approve(id, by string) (*Rollout, error) {
	return s.ApproveAs(id, Principal{Name: by})
}

// ApproveAs records p's approval of rollout id: its devices are notified
// from the next tick on. A machine account or the rollout's creator is
// refused.
func (s *Service) ApproveAs(id string, p Principal) (*Rollout, error) {
	r, err := s.changeRollout(id, func(r *Rollout, now time.Time) error { return r.Approve(p, now) })
	if err != nil {
		return nil, err
	}
	s.log.Info("rollout approved", "rollout", id, "by", p.Name, "created_by", r.CreatedBy)
	return r, nil
}

// emergencyAlarms raises an alarm per emergency rollback made in the last
// EmergencyAlarmFor: nobody but its maker approved it.
func (s *Service) emergencyAlarms() []Alarm {
	rs, err := s.Rollouts()
	if err != nil {
		return nil
	}
	now := s.opt.Now()
	var out []Alarm
	for i := range rs {
		r := &rs[i]
		if a := r.Approval; a != nil && a.Emergency && now.Sub(r.Started) < EmergencyAlarmFor {
			out = append(out, Alarm{Name: "emergency-rollback",
				Text: fmt.Sprintf("Emergency rollback %s by %s at %s: it went out without a second person's approval (%d devices, %s release %d).",
					r.ID, r.CreatedBy, r.Started.UTC().Format(time.RFC3339), len(r.Order), r.ModelID, r.Release)})
		}
	}
	return out
}
