package rollout

import (
	"fmt"
	"time"
)

// The two-person rule (off by default; the service's Options.TwoPerson,
// [rollouts] two_person, sets Approval on new rollouts): every rollout
// that changes what a device runs — rollbacks included — waits, before its first device is notified, until a person
// other than its creator approves it, as hawkBit's approval workflow
// does. It is part of the rollout's persisted state (api.Approval), so
// the rollout engine holds it on every replica and across restarts.
// Invariants:
//   - While the approval is pending, Step notifies at most Approval.After
//     devices in all (approvalCap): 0, or for a shadow rollout the
//     devices that shadow first — shadowing changes no device's answers,
//     so the approver can judge the candidate on the shadow's figures —
//     and with Approval.Promotion none of those is promoted.
//   - Only a person — not a machine account (fleet/access's Principal.Machine), not the
//     creator — approves, once, while the rollout is not done; the
//     approval is recorded with who and when (and in the audit trail).
//   - The one exception is an emergency rollback (api.Approval.Emergency):
//     a rollback made by an operator whose role holds fleet/access's PermEmergency
//     (the responder role, and no other), which goes out at once; it is
//     recorded as such in the rollout, and the service audits it as
//     rollout.emergency-rollback and raises it as an alarm for
//     fleet.EmergencyAlarmFor.
//   - With the rule off, nothing waits and nothing is recorded.

// approvalCap bounds allowed by a pending approval.
func (r *Rollout) approvalCap(allowed int) int {
	if r.Approval.Pending() {
		return min(allowed, r.Approval.After)
	}
	return allowed
}

// Approve records the approval of r at now by operator by, a machine
// account if machine.
func (r *Rollout) Approve(by string, machine bool, now time.Time) error {
	switch {
	case r.Approval == nil:
		return fmt.Errorf("%w: rollout %s needs no approval", ErrInvalid, r.ID)
	case !r.Approval.Pending():
		return fmt.Errorf("%w: rollout %s was approved by %s already", ErrInvalid, r.ID, r.Approval.ApprovedBy)
	case r.State.Done():
		return fmt.Errorf("%w: rollout %s is %s", ErrInvalid, r.ID, r.State)
	case by == "" || by == r.CreatedBy:
		return fmt.Errorf("%w: %s created rollout %s; another operator must approve it (the two-person rule)", ErrInvalid, by, r.ID)
	case machine:
		return fmt.Errorf("%w: %s is a machine account; only a person approves a rollout (the two-person rule)", ErrInvalid, by)
	}
	r.Approval.ApprovedBy, r.Approval.ApprovedAt = by, now
	r.Updated, r.changed = now, true
	return nil
}
