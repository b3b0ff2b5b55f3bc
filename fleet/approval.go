package fleet

import (
	"fmt"
	"time"
)

// The two-person rule (off by default; Options.TwoPerson, [rollouts]
// two_person): a rollout created by one operator notifies at most its
// first phase's devices (or TwoPersonDevices when it has no phases) until
// another operator approves it, as hawkBit's approval workflow does. It is
// part of the rollout's persisted state (api.Approval), so the rollout
// engine holds it on every replica and across restarts. Invariants:
//   - While the approval is pending, Step notifies at most Approval.After
//     devices in all (approvalCap); retries of those go on.
//   - Only an operator other than the creator approves, once; the
//     approval is recorded with who and when (and in the audit trail).
//   - Rollbacks need no approval: they undo, and speed matters.
//   - With Approval.Promotion (a retraining policy's rollout, policy.go)
//     no shadowing device is promoted while the approval is pending: the
//     candidate is shadowed, never activated, before an operator says so.

// approvalCap bounds allowed by a pending approval.
func (r *Rollout) approvalCap(allowed int) int {
	if r.Approval.Pending() {
		return min(allowed, r.Approval.After)
	}
	return allowed
}

// Approve records by's approval of r at now.
func (r *Rollout) Approve(by string, now time.Time) error {
	switch {
	case r.Approval == nil:
		return fmt.Errorf("%w: rollout %s needs no approval", ErrRollout, r.ID)
	case !r.Approval.Pending():
		return fmt.Errorf("%w: rollout %s was approved by %s already", ErrRollout, r.ID, r.Approval.ApprovedBy)
	case r.State.Done():
		return fmt.Errorf("%w: rollout %s is %s", ErrRollout, r.ID, r.State)
	case by == "" || by == r.CreatedBy:
		return fmt.Errorf("%w: %s created rollout %s; another operator must approve it (the two-person rule)", ErrRollout, by, r.ID)
	}
	r.Approval.ApprovedBy, r.Approval.ApprovedAt = by, now
	r.Updated, r.changed = now, true
	return nil
}
