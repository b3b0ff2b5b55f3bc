package fleet

import (
	"fmt"
	"time"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet/access"
	"github.com/trit-iot/trit/fleet/rollout"
)

// The two-person rule's engine part (what a pending approval holds back,
// who may approve) is fleet/rollout/approval.go, with its invariants; the
// service sets the rule on new rollouts and raises emergency rollbacks as
// alarms.

// EmergencyAlarmFor is how long an emergency rollback stays among the
// fleet's alarms after it was made.
const EmergencyAlarmFor = 7 * 24 * time.Hour

// requireApproval sets r's approval from the service's rule: with it on,
// r notifies no device (a shadow rollout: only its shadowing devices,
// promoting none) until another person approves it. An emergency
// rollback (emergency, checked by the caller) is approved by its
// creator's role at once, and marked.
func (s *Service) requireApproval(r *rollout.Rollout, emergency bool, now time.Time) {
	if !s.opt.TwoPerson {
		return
	}
	if emergency {
		r.Approval = &api.Approval{Emergency: true, ApprovedBy: r.CreatedBy, ApprovedAt: now}
		return
	}
	r.Approval = &api.Approval{}
	if r.Shadow != nil {
		r.Approval.After, r.Approval.Promotion = r.ShadowCount(), true
	}
}

// Approve records operator by's approval of rollout id (a person; see
// ApproveAs): its devices are notified from the next tick on.
func (s *Service) Approve(id, by string) (*rollout.Rollout, error) {
	return s.ApproveAs(id, access.Principal{Name: by})
}

// ApproveAs records p's approval of rollout id: its devices are notified
// from the next tick on. A machine account or the rollout's creator is
// refused.
func (s *Service) ApproveAs(id string, p access.Principal) (*rollout.Rollout, error) {
	r, err := s.changeRollout(id, func(r *rollout.Rollout, now time.Time) error { return r.Approve(p.Name, p.Machine, now) })
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
