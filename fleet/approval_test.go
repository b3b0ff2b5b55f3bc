package fleet

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet/access"
	"github.com/trit-iot/trit/fleet/rollout"
	"github.com/trit-iot/trit/wire"
)

// held checks that rollout id, under the two-person rule, notifies no
// device however many ticks pass, that its creator and a machine account
// cannot approve it, and that once olga (a person) approves it the next
// tick notifies want devices.
func (f *fixture) held(t *testing.T, id string, want int) {
	t.Helper()
	for range 3 {
		f.svc.Tick()
		if cmds := f.commands(t); len(cmds) != 0 {
			t.Fatalf("rollout %s notified %d devices before its approval", id, len(cmds))
		}
		f.clk.t = f.clk.t.Add(time.Second)
	}
	r, err := f.svc.GetRollout(id)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Approval.Pending() || r.Approval.After != 0 {
		t.Fatalf("rollout %s: approval %+v, want pending before any device", id, r.Approval)
	}
	if _, err := f.svc.ApproveAs(id, access.Principal{Name: r.CreatedBy, Role: access.RoleOperator}); err == nil || !strings.Contains(err.Error(), "another operator") {
		t.Fatalf("rollout %s: its creator %q approves it: %v", id, r.CreatedBy, err)
	}
	if _, err := f.svc.ApproveAs(id, access.Principal{Name: "ci", Role: access.RoleAdmin, Machine: true}); err == nil || !strings.Contains(err.Error(), "machine account") {
		t.Fatalf("rollout %s: the machine account ci approves it: %v", id, err)
	}
	r, err = f.svc.ApproveAs(id, access.Principal{Name: "olga", Role: access.RoleOperator})
	if err != nil || r.Approval.ApprovedBy != "olga" || !r.Approval.ApprovedAt.Equal(f.clk.t) {
		t.Fatalf("olga's approval of %s: %v %+v", id, err, r.Approval)
	}
	f.svc.Tick()
	if cmds := f.commands(t); len(cmds) != want {
		t.Fatalf("rollout %s after its approval: %d commands, want %d", id, len(cmds), want)
	}
}

// The two-person rule: every rollout that changes what a device runs
// waits for a second person before its first device — the three ways
// round it that issue 38 found (a first phase of 100%, one rollout per
// device, "rollback": true) included — and only a person approves.
func TestTwoPersonRule(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.TwoPerson = true })
	ids := []string{"gw-1", "gw-2", "gw-3"}
	for _, id := range ids {
		f.online(t, id, nil)
	}
	hash := f.addBundle(t, 1)

	// Phases 1,100%: the canary waits too.
	r, err := f.svc.CreateRolloutBy(api.RolloutRequest{ID: "r1", Bundle: hash, Devices: ids,
		Pace: api.Pace{Phases: []api.Phase{{Count: 1}, {Percent: 100}}}}, "otto")
	if err != nil || r.CreatedBy != "otto" {
		t.Fatalf("created: %v, by %q", err, r.CreatedBy)
	}
	f.held(t, "r1", 1)
	if _, err := f.svc.Approve("r1", "ann"); err == nil || !strings.Contains(err.Error(), "already") {
		t.Fatalf("a second approval: %v", err)
	}
	if _, err := f.svc.Control("r1", "abort", "enough"); err != nil {
		t.Fatal(err)
	}

	// --phases 100%: one phase covering every target.
	if _, err := f.svc.CreateRolloutBy(api.RolloutRequest{ID: "r2", Bundle: hash, Devices: ids,
		Pace: api.Pace{Phases: []api.Phase{{Percent: 100}}}}, "otto"); err != nil {
		t.Fatal(err)
	}
	f.held(t, "r2", 3)
	f.svc.Control("r2", "abort", "")

	// One rollout per device.
	for _, id := range ids {
		if _, err := f.svc.CreateRolloutBy(api.RolloutRequest{ID: "one-" + id, Bundle: hash, Devices: []string{id}}, "otto"); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range ids {
		f.held(t, "one-"+id, 1)
	}

	// "rollback": true to a bundle every device ran.
	for _, id := range ids {
		f.running(t, id, hash)
	}
	f.addBundle(t, 2)
	if _, err := f.svc.CreateRolloutBy(api.RolloutRequest{ID: "back", Bundle: hash, Devices: ids, Rollback: true}, "otto"); err != nil {
		t.Fatal(err)
	}
	f.held(t, "back", 3)

	// An approval never given is said so once the rollout ends.
	if _, err := f.svc.CreateRolloutBy(api.RolloutRequest{ID: "never", Bundle: hash, Devices: ids}, "otto"); err != nil {
		t.Fatal(err)
	}
	ab, err := f.svc.Control("never", "abort", "changed my mind")
	if err != nil {
		t.Fatal(err)
	}
	if txt := rollout.Text(ab); !strings.Contains(txt, "approval never given (aborted)") {
		t.Fatalf("audit text %q", txt)
	}
	if _, err := f.svc.Approve("never", "olga"); err == nil || !strings.Contains(err.Error(), "aborted") {
		t.Fatalf("approving an aborted rollout: %v", err)
	}

	// Without the rule nothing waits.
	g := newFixture(t)
	g.online(t, "gw-1", nil)
	r, err = g.svc.CreateRolloutBy(api.RolloutRequest{ID: "free", Bundle: g.addBundle(t, 1), Devices: []string{"gw-1"}}, "otto")
	if err != nil || r.Approval != nil {
		t.Fatalf("without the rule: %v %+v", err, r.Approval)
	}
	if _, err := g.svc.Approve("free", "olga"); err == nil || !strings.Contains(err.Error(), "needs no approval") {
		t.Fatalf("approving a rollout that needs none: %v", err)
	}
}

// A rollback made with Rollback (tritctl rollout rollback, the console's
// button) records its creator and waits for approval like any rollout;
// an emergency rollback goes out at once, only for the responder role,
// marked, and raised as an alarm for a week.
func TestTwoPersonRollbacks(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.TwoPerson = true })
	ids := []string{"gw-1", "gw-2"}
	old := f.addBundle(t, 1)
	for _, id := range ids {
		f.running(t, id, old)
	}
	hash := f.addBundle(t, 2)
	if _, err := f.svc.CreateRolloutBy(api.RolloutRequest{ID: "r2", Bundle: hash, Devices: ids}, "otto"); err != nil {
		t.Fatal(err)
	}
	f.held(t, "r2", 2)

	otto := access.Principal{Name: "otto", Role: access.RoleOperator}
	back, err := f.svc.RollbackAs("r2", "r2-back", otto, false)
	if err != nil {
		t.Fatal(err)
	}
	if back.CreatedBy != "otto" || !back.Rollback || back.Bundle != old {
		t.Fatalf("rollback: by %q, rollback %v, bundle %.12s", back.CreatedBy, back.Rollback, back.Bundle)
	}
	f.held(t, "r2-back", 2)

	if _, err := f.svc.RollbackAs("r2", "r2-now", otto, true); !errors.Is(err, ErrEmergency) || !strings.Contains(err.Error(), "responder") {
		t.Fatalf("an operator's emergency rollback: %v", err)
	}
	if _, err := f.svc.RollbackAs("r2", "r2-now", access.Principal{Name: "root", Role: access.RoleAdmin}, true); !errors.Is(err, ErrEmergency) {
		t.Fatalf("an admin's emergency rollback: %v", err)
	}
	if _, err := f.svc.CreateRolloutAs(api.RolloutRequest{ID: "x", Bundle: hash, Devices: ids, Emergency: true}, access.Principal{Name: "rita", Role: access.RoleResponder}); !errors.Is(err, rollout.ErrInvalid) {
		t.Fatalf("emergency on a rollout that is not a rollback: %v", err)
	}
	if len(f.svc.Alarms()) != 0 {
		t.Fatalf("alarms before any emergency: %+v", f.svc.Alarms())
	}
	rita := access.Principal{Name: "rita", Role: access.RoleResponder}
	now, err := f.svc.RollbackAs("r2", "r2-now", rita, true)
	if err != nil {
		t.Fatal(err)
	}
	if a := now.Approval; a == nil || !a.Emergency || a.ApprovedBy != "rita" || a.Pending() {
		t.Fatalf("emergency rollback's approval %+v", now.Approval)
	}
	f.svc.Tick()
	if cmds := f.commands(t); len(cmds) != 2 || !cmds[0].Rollback {
		t.Fatalf("emergency rollback: %d commands (%+v)", len(cmds), cmds)
	}
	alarms := f.svc.Alarms()
	if len(alarms) != 1 || !strings.Contains(alarms[0].Text, "Emergency rollback r2-now by rita") {
		t.Fatalf("alarms after the emergency rollback: %+v", alarms)
	}
	f.clk.t = f.clk.t.Add(EmergencyAlarmFor + time.Minute)
	if len(f.svc.Alarms()) != 0 {
		t.Fatalf("the alarm outlives its week: %+v", f.svc.Alarms())
	}
}

// A retraining policy's rollout shadows before its approval but promotes
// none; a person's shadow rollout under the rule does the same.
func TestTwoPersonShadowBeforeApproval(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.TwoPerson = true })
	ids := []string{"gw-1", "gw-2", "gw-3"}
	for _, id := range ids {
		f.online(t, id, nil)
	}
	r, err := f.svc.CreateRolloutBy(api.RolloutRequest{ID: "s", Bundle: f.addBundle(t, 1), Devices: ids,
		Pace: api.Pace{Phases: []api.Phase{{Count: 1}, {Percent: 100}}}, Shadow: &api.ShadowPolicy{MinWindows: 1}}, "otto")
	if err != nil {
		t.Fatal(err)
	}
	if a := r.Approval; !a.Pending() || a.After != 1 || !a.Promotion {
		t.Fatalf("shadow rollout's approval %+v", a)
	}
	f.svc.Tick()
	cmds := f.commands(t)
	if len(cmds) != 1 || cmds[0].Mode != wire.ModeShadow {
		t.Fatalf("before approval: %+v, want one shadow command", cmds)
	}
}
