package fleet

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/wire"
)

// The two-person rule: otto's rollout notifies its first phase only; otto
// cannot approve it himself; once olga approves, the next tick notifies
// the rest. Without the rule, and for rollbacks, nothing waits.
func TestTwoPersonRule(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.TwoPerson = true })
	for _, id := range []string{"gw-1", "gw-2", "gw-3"} {
		f.online(t, id, nil)
	}
	hash := f.addBundle(t, 1)
	r, err := f.svc.CreateRolloutBy(api.RolloutRequest{ID: "r1", Bundle: hash, Devices: []string{"gw-1", "gw-2", "gw-3"},
		Pace: api.Pace{Phases: []api.Phase{{Count: 1}, {Percent: 100}}}}, "otto")
	if err != nil {
		t.Fatal(err)
	}
	if r.CreatedBy != "otto" || !r.Approval.Pending() || r.Approval.After != 1 {
		t.Fatalf("created: by %q, approval %+v", r.CreatedBy, r.Approval)
	}
	f.svc.Tick()
	canary := f.commands(t)
	if len(canary) != 1 {
		t.Fatalf("first phase: %d commands", len(canary))
	}
	f.report(t, canary[0], wire.JobSucceeded)
	for range 3 {
		f.clk.t = f.clk.t.Add(time.Second)
		f.svc.Tick()
		if more := f.commands(t); len(more) != 0 {
			t.Fatalf("phase 2 started without approval: %d commands", len(more))
		}
	}
	if r, _ := f.svc.GetRollout("r1"); r.State.Done() {
		t.Fatalf("the held rollout is %s", r.State)
	}
	if _, err := f.svc.Approve("r1", "otto"); err == nil || !strings.Contains(err.Error(), "another operator") || !errors.Is(err, ErrRollout) {
		t.Fatalf("otto approves his own rollout: %v", err)
	}
	r, err = f.svc.Approve("r1", "olga")
	if err != nil || r.Approval.ApprovedBy != "olga" || !r.Approval.ApprovedAt.Equal(f.clk.t) {
		t.Fatalf("olga's approval: %v %+v", err, r.Approval)
	}
	if _, err := f.svc.Approve("r1", "ann"); err == nil {
		t.Fatal("a second approval is accepted")
	}
	f.svc.Tick()
	if rest := f.commands(t); len(rest) != 2 {
		t.Fatalf("after the approval: %d commands, want 2", len(rest))
	}

	// A rollout within its first phase, and a rollback, need no approval.
	small, err := f.svc.CreateRolloutBy(api.RolloutRequest{ID: "r2", Bundle: hash, Devices: []string{"gw-1"}}, "otto")
	if err != nil || small.Approval != nil {
		t.Fatalf("one-device rollout: %v %+v", err, small.Approval)
	}
	back, err := NewRollout("r3", hash, []string{"gw-1", "gw-2", "gw-3"}, api.Pace{Phases: []api.Phase{{Count: 1}, {Percent: 100}}}, api.AbortPolicy{}, f.clk.t)
	if err != nil {
		t.Fatal(err)
	}
	back.Rollback = true
	f.svc.requireApproval(back)
	if back.Approval != nil {
		t.Fatalf("a rollback waits for approval: %+v", back.Approval)
	}
	if _, err := f.svc.Approve("r2", "olga"); err == nil || !strings.Contains(err.Error(), "needs no approval") {
		t.Fatalf("approving a rollout that needs none: %v", err)
	}
}

// Without phases, the rule holds the rollout at two_person_devices.
func TestTwoPersonRuleWithoutPhases(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.TwoPerson, o.TwoPersonDevices = true, 2 })
	ids := []string{"gw-1", "gw-2", "gw-3", "gw-4"}
	for _, id := range ids {
		f.online(t, id, nil)
	}
	if _, err := f.svc.CreateRolloutBy(api.RolloutRequest{ID: "r1", Bundle: f.addBundle(t, 1), Devices: ids}, "otto"); err != nil {
		t.Fatal(err)
	}
	f.svc.Tick()
	if first := f.commands(t); len(first) != 2 {
		t.Fatalf("before approval: %d commands, want 2", len(first))
	}
	if _, err := f.svc.Approve("r1", "olga"); err != nil {
		t.Fatal(err)
	}
	f.svc.Tick()
	if rest := f.commands(t); len(rest) != 2 {
		t.Fatalf("after approval: %d commands, want 2", len(rest))
	}
}
