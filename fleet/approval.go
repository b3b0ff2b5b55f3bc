package fleet

import (
	"fmt"
	"time"

	"github.com/trit-iot/trit/api"
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

// requireApproval sets r's approval from the service's rule.
func (s *Service) requireApproval(r *Rollout) {
	if !s.opt.TwoPerson || r.Rollback {
		return
	}
	after := max(1, s.opt.TwoPersonDevices)
	if len(r.Pace.Phases) > 0 {
		after = r.phaseTarget(0)
	}
	if after < len(r.Order) {
		r.Approval = &api.Approval{After: after}
	}
}

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

// Approve records operator by's approval of rollout id: its devices past
// the first phase are notified from the next tick on.
func (s *Service) Approve(id, by string) (*Rollout, error) {
	r, err := s.changeRollout(id, func(r *Rollout, now time.Time) error { return r.Approve(by, now) })
	if err != nil {
		return nil, err
	}
	s.log.Info("rollout approved", "rollout", id, "by", by, "created_by", r.CreatedBy)
	return r, nil
}
