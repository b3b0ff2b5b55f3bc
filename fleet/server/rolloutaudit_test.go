package server

import (
	"strings"
	"testing"
	"time"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet"
	"github.com/trit-iot/trit/fleet/fleettest"
	"github.com/trit-iot/trit/wire"
)

// TestRolloutRecordsComplete: with the two-person rule on, the audit
// trail's records of a rollout's creation, approval and rollback — read
// back as tritctl audit reads them, GET /v1/audit — each say everything
// that decides what the rollout does: the bundle, the targets (selector
// and devices), the phases, the abort criterion, the timeout, the
// retries, the shadow and confidence gates, the rollback flag, who
// created it and where its approval stands (issue 38: rollout.create
// omitted targets, phases, gates and the rollback flag — a "rollback":
// true rollout's record said only "bundle 5f76dfea77f5" — and rollbacks
// recorded no creator). A request that fails is recorded as it was
// asked for.
func TestRolloutRecordsComplete(t *testing.T) {
	f := newFixture(t, func(o *fleet.Options) { o.TwoPerson = true })
	srv := apiServer(t, f)
	admin := api.NewClient(srv.URL, testToken)
	as := map[string]*api.Client{}
	for _, name := range []string{"otto", "olga"} {
		n, err := admin.AddOperator(&api.OperatorRequest{Name: name, Role: "operator"})
		if err != nil {
			t.Fatal(err)
		}
		as[name] = api.NewClient(srv.URL, n.Token)
	}
	calibrated := func(release uint64) string {
		info, err := f.svc.Registry().Add(fleettest.CalibratedBundle(t, "vib", release, f.release))
		if err != nil {
			t.Fatal(err)
		}
		return info.Hash
	}
	old, next := calibrated(1), calibrated(2)
	for id, site := range map[string]string{"gw-1": "north", "gw-2": "north", "gw-3": "north", "gw-9": "south"} {
		f.state(t, &wire.State{Device: id, Session: 1, Online: true, Health: "ok", AgentVersion: "0.5.0", Labels: map[string]string{"site": site},
			Model: &wire.ModelRef{ID: "vib", Release: 1, Bundle: old, Install: "committed"}})
	}

	// otto: a shadowed rollout by label, in phases, with every policy
	// given; olga approves it. otto: a rollback by "rollback": true on
	// gw-9, which olga approves; then a rollback of r2.
	if _, err := as["otto"].CreateRollout(&api.RolloutRequest{ID: "r2", Bundle: next, Selector: map[string]string{"site": "north"},
		Pace:    api.Pace{Phases: []api.Phase{{Count: 1}, {Percent: 50}, {Percent: 100}}},
		Abort:   api.AbortPolicy{On: api.FailureFailed, ThresholdPercent: 20, MinExecuted: 2},
		Timeout: 30 * time.Minute, Retries: map[string]int{api.FailureFailed: 1, api.FailureTimedOut: 2},
		Shadow: &api.ShadowPolicy{MinWindows: 200, MinAgreement: 0.9, MaxUnknownIncrease: 0.05},
		Gate:   &api.ConfidenceGate{MaxUnknownIncrease: 0.05, MaxConfidenceDrop: 0.1, MinWindows: 80}}); err != nil {
		t.Fatal(err)
	}
	if _, err := as["olga"].Approve("r2"); err != nil {
		t.Fatal(err)
	}
	if _, err := as["otto"].CreateRollout(&api.RolloutRequest{ID: "r1-back", Bundle: old, Devices: []string{"gw-9"}, Rollback: true,
		Abort: api.AbortPolicy{On: api.FailureAny, ThresholdPercent: 50, MinExecuted: 1}, Timeout: 10 * time.Minute}); err != nil {
		t.Fatal(err)
	}
	if _, err := as["olga"].Approve("r1-back"); err != nil {
		t.Fatal(err)
	}
	if _, err := as["otto"].Rollback("r2", "r2-back"); err != nil {
		t.Fatal(err)
	}
	if _, err := as["olga"].Approve("r2-back"); err != nil {
		t.Fatal(err)
	}

	// A request that fails (a device not in the inventory) is recorded as
	// it was asked for.
	if _, err := as["otto"].CreateRollout(&api.RolloutRequest{ID: "r3", Bundle: next[:16], Devices: []string{"gw-1", "gw-404"},
		Pace: api.Pace{Phases: []api.Phase{{Count: 1}, {Percent: 100}}}, Abort: api.AbortPolicy{On: api.FailureRejected, ThresholdPercent: 10, MinExecuted: 1},
		Gate: &api.ConfidenceGate{MaxUnknownIncrease: 0.02, MaxConfidenceDrop: 0.05, MinWindows: 60}}); err == nil {
		t.Fatal("a rollout to a device not in the inventory was created")
	}

	es, err := admin.Audit(&api.AuditQuery{Action: "rollout"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range es {
		got = append(got, e.Who+" "+e.Action+" "+e.Object+" "+e.Outcome)
	}
	want := []string{"otto rollout.create rollout/r2 ok", "olga rollout.approve rollout/r2 ok", "otto rollout.create rollout/r1-back ok",
		"olga rollout.approve rollout/r1-back ok", "otto rollout.rollback rollout/r2 ok", "olga rollout.approve rollout/r2-back ok",
		"otto rollout.create rollout/r3 failed"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("audit:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// What each record must say, field by field, in the record's words.
	type field struct{ what, text string }
	r2 := []field{
		{"bundle", "bundle " + next[:12] + " (vib release 2)"},
		{"targets", "targets selector site=north, 3 devices (gw-1, gw-2, gw-3)"},
		{"phases", "phases 1,50%,100%"},
		{"abort criterion", "abort on failed > 20% after 2"},
		{"timeout", "timeout 30m0s"},
		{"retries", "retries failed=1,timed-out=2"},
		{"shadow gates", "shadow 1 phase(s), 200 windows, gates: agreement ≥ 0.9, unknown increase ≤ 0.05"},
		{"confidence gate", "confidence gate unknown ≤ +0.05, confidence ≥ −0.1, on the shadow reports"},
		{"rollback flag", "rollback no"},
		{"creator", "created by otto"},
	}
	back := []field{
		{"bundle", "bundle " + old[:12] + " (vib release 1)"},
		{"targets", "targets 1 devices (gw-9)"},
		{"pace", "all at once"},
		{"abort criterion", "abort on any > 50% after 1"},
		{"timeout", "timeout 10m0s"},
		{"shadow", "no shadow"},
		{"confidence gate", "confidence gate none: a rollback sends a model its devices ran before"},
		{"rollback flag", "rollback yes"},
		{"creator", "created by otto"},
	}
	r2back := []field{
		{"bundle", "bundle " + old[:12] + " (vib release 1)"},
		{"targets", "targets 3 devices (gw-1, gw-2, gw-3)"},
		{"phases", "phases 1,50%,100%"},
		{"abort criterion", "abort on failed > 20% after 2"},
		{"timeout", "timeout 30m0s"},
		{"retries", "retries failed=1,timed-out=2"},
		{"confidence gate", "confidence gate none: a rollback"},
		{"rollback flag", "rollback yes"},
		{"creator", "created by otto"},
	}
	with := func(fs []field, more ...field) []field { return append(append([]field(nil), fs...), more...) }
	for i, fs := range [][]field{
		with(r2, field{"approval", "approval waiting for a second person"}),
		with(r2, field{"approval", "approval by olga"}),
		with(back, field{"approval", "approval waiting for a second person"}),
		with(back, field{"approval", "approval by olga"}),
		with(r2back, field{"new rollout", "new rollout r2-back: "}, field{"approval", "approval waiting for a second person"}),
		with(r2back, field{"approval", "approval by olga"}),
		{{"request", "requested: bundle " + next[:16]}, {"targets", "targets 2 devices (gw-1, gw-404)"}, {"phases", "phases 1,100%"},
			{"abort criterion", "abort on rejected > 10% after 1"}, {"confidence gate", "confidence gate unknown ≤ +0.02, confidence ≥ −0.05, from 60 windows, decided by 240"},
			{"rollback flag", "rollback no"}, {"why it failed", "not in the inventory"}},
	} {
		for _, fl := range fs {
			if !strings.Contains(es[i].Detail, fl.text) {
				t.Errorf("%s: the record has no %s (%q):\n%s", got[i], fl.what, fl.text, es[i].Detail)
			}
		}
	}
	if strings.Contains(es[0].Detail, "gw-9") {
		t.Errorf("r2's record names gw-9, which its selector does not choose:\n%s", es[0].Detail)
	}
}
