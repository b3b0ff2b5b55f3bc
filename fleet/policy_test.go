package fleet

import (
	"strings"
	"testing"
	"time"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet/fleettest"
	"github.com/trit-iot/trit/wire"
)

// TestPolicyLoop: a retraining policy does not act without new labels;
// once the model's accuracy on enough new labels is below its threshold
// it trains a challenger, which waits for the offline signature; once the
// signed release is published it is shadowed on the group by a rollout
// that holds the promotion for an approval; approved, it is promoted,
// and the policy watches again.
func TestPolicyLoop(t *testing.T) {
	dir := t.TempDir()
	pol := RetrainPolicy{Model: "m", Dataset: "orig.csv", MinLabels: 100, Accuracy: 90, Every: time.Minute,
		Shadow: api.ShadowPolicy{MinWindows: 10, MinAgreement: 0.1}}
	f := newFixture(t, func(o *Options) { o.TrainingDir = dir; o.Policies = []RetrainPolicy{pol} })
	s := f.svc
	rs := setupRetrain(t, f, dir)
	for _, id := range []string{"gw-1", "gw-2"} {
		f.state(t, &wire.State{Device: id, Session: 1, Online: true, Health: "ok", Model: &wire.ModelRef{ID: "m", Release: 1, Bundle: rs.info.Hash, Install: "committed"}})
	}
	f.online(t, "gw-3", nil) // runs no model: not in the group
	step := func() *api.PolicyState {
		t.Helper()
		if err := s.stepPolicy(&s.opt.Policies[0], f.clk.now()); err != nil {
			t.Fatal(err)
		}
		ps, err := s.Policies()
		if err != nil || len(ps) != 1 {
			t.Fatalf("policies %v, %v", ps, err)
		}
		return &ps[0]
	}
	st := step()
	if st.Stage != PolicyWatching || st.Devices != 2 || !strings.Contains(st.Why, "no threshold crossed") || !strings.Contains(st.Rule, "accuracy on new labels < 90.0%") {
		t.Fatalf("no labels: %+v", st)
	}
	// 200 labels of the late concept: the model (which said "high" each
	// time) is about half right on them.
	f.clk.t = f.clk.t.Add(time.Second)
	labelLate(t, s, rs.info.Hash, rs.stream, "gw-1", 2600, func(i int) string { return rs.stream.Classes[rs.stream.Y[i]] })
	if st = step(); st.Stage != PolicyWatching || st.NewLabels != 0 {
		t.Fatalf("checked again before every: %+v", st)
	}
	f.clk.t = f.clk.t.Add(time.Minute)
	st = step()
	if st.Stage != PolicyTraining || st.Job == "" || st.NewLabels != 200 || st.Accuracy == nil || *st.Accuracy > 60 || !strings.Contains(st.Why, "accuracy on the new labels") {
		t.Fatalf("trigger: %+v", st)
	}
	waitJob(t, s, st.Job)
	st = step()
	if st.Stage != PolicySigning || st.Release != 2 || st.Challenger == "" || !strings.Contains(st.Why, "sign it offline") {
		t.Fatalf("challenger: %+v", st)
	}
	if st = step(); st.Stage != PolicySigning {
		t.Fatalf("moved on without a signed release: %+v", st)
	}
	// The operator signs it offline and publishes it.
	raw, err := s.TrainedBundle(st.Job)
	if err != nil {
		t.Fatal(err)
	}
	info, _ := f.publish(t, raw)
	st = step()
	if st.Stage != PolicyShadowing || st.Rollout != "retrain-m-r2" || !strings.Contains(st.Why, "approves") {
		t.Fatalf("published: %+v", st)
	}
	r, err := s.GetRollout(st.Rollout)
	if err != nil || r.Bundle != info.Hash || len(r.Order) != 2 || r.Approval == nil || !r.Approval.Promotion || r.CreatedBy != "policy:m" {
		t.Fatalf("rollout %+v, %v", r, err)
	}
	s.Tick()
	cs := f.commands(t)
	if len(cs) != 2 || cs[0].Mode != wire.ModeShadow || cs[1].Mode != wire.ModeShadow {
		t.Fatalf("commands %+v, want two in shadow mode", cs)
	}
	for i, c := range cs {
		f.report(t, c, wire.JobSucceeded)
		rep := &wire.ShadowReport{Rollout: c.Rollout, Seq: c.Seq, Bundle: info.Hash, Windows: 40, Agree: 30,
			ActiveClasses: []string{"high", "low"}, CandidateClasses: []string{"high", "low"}, Confusion: [][]uint64{{15, 5}, {5, 15}}, LowMargin: 0.1}
		f.telemetry(t, &wire.Telemetry{Device: c.Device, Session: 1, Seq: uint64(i + 1), From: 1, To: 2, Predictions: 40, Shadow: rep})
	}
	s.Tick()
	if more := f.commands(t); len(more) != 0 {
		t.Fatalf("promoted before the approval: %+v", more)
	}
	if r, _ = s.GetRollout(st.Rollout); r.Devices["gw-1"].State != api.DeviceShadowPassed {
		t.Fatalf("gw-1 %s, want shadow-passed", r.Devices["gw-1"].State)
	}
	if st = step(); st.Stage != PolicyShadowing {
		t.Fatalf("left shadowing before the rollout ended: %+v", st)
	}
	if _, err := s.Approve(st.Rollout, "alice"); err != nil {
		t.Fatal(err)
	}
	s.Tick()
	promoted := f.commands(t)
	if len(promoted) != 2 || promoted[0].Mode == wire.ModeShadow {
		t.Fatalf("promotion commands %+v", promoted)
	}
	for _, c := range promoted {
		f.report(t, c, wire.JobSucceeded)
	}
	s.Tick()
	st = step()
	if st.Stage != PolicyWatching || !strings.Contains(st.Why, "completed") {
		t.Fatalf("after the rollout: %+v", st)
	}
}

func TestCheckPolicy(t *testing.T) {
	good := RetrainPolicy{Model: "m", Dataset: "d.csv", Drift: 0.2}
	if err := CheckPolicy(&good); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []RetrainPolicy{
		{Dataset: "d", Drift: 0.2},
		{Model: "m", Drift: 0.2},
		{Model: "m", Dataset: "d"},
		{Model: "m", Dataset: "d", Drift: 2},
		{Model: "m", Dataset: "d", Accuracy: 120},
		{Model: "m", Dataset: "d", Drift: 0.1, MinLabels: -1},
		{Model: "m", Dataset: "d", Drift: 0.1, Selector: map[string]string{"site": ""}},
	} {
		if err := CheckPolicy(&bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
	if _, err := NewService(fleettest.OpenStore(t), nil, "f", &recorder{}, fleettest.Key(2), &Options{Policies: []RetrainPolicy{good}}); err == nil {
		t.Error("a policy without a training directory accepted")
	}
}
