package console

import (
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet/rollout"
	"github.com/trit-iot/trit/wire"
)

func TestCreateRolloutFromTheForm(t *testing.T) {
	f := newFixture(t)
	_, h2 := populate(f)
	c := f.client().login()
	c.get("/console/new-rollout?bundle=" + h2)
	form := url.Values{"csrf": {c.csrf}, "id": {"two-phase"}, "bundle": {h2}, "selector": {"site=north"}, "phases": {"1, 100%"},
		"abort_on": {"failed"}, "abort_threshold": {"10"}, "abort_min": {"2"}, "timeout": {"90s"}, "retries": {"timed-out=2"}}
	r := c.post("/console/rollouts", form)
	if r.code != http.StatusSeeOther || r.header.Get("Location") != "/console/rollouts/two-phase" {
		t.Fatalf("create: %d to %q: %s", r.code, r.header.Get("Location"), r.body)
	}
	ro, err := f.svc.GetRollout("two-phase")
	if err != nil {
		t.Fatal(err)
	}
	want := api.Pace{Phases: []api.Phase{{Count: 1}, {Percent: 100}}}
	if ro.Bundle != h2 || !reflect.DeepEqual(ro.Pace, want) || ro.Abort != (api.AbortPolicy{On: "failed", ThresholdPercent: 10, MinExecuted: 2}) ||
		ro.Timeout != 90*time.Second || ro.Retries["timed-out"] != 2 || !reflect.DeepEqual(ro.Order, []string{"gw-1", "gw-2"}) {
		t.Fatalf("rollout %+v", ro)
	}
	if r := c.get("/console/rollouts/two-phase"); !strings.Contains(r.body, "Rollout two-phase created: release 2 of vib to 2 devices.") {
		t.Fatal("no message after creating the rollout")
	}
	if r := c.get("/console/rollouts/two-phase"); strings.Contains(r.body, "created: release") {
		t.Fatal("the message is shown twice")
	}

	// Mistakes come back to the form, with what was typed and why.
	for _, tc := range []struct {
		change url.Values
		want   string
	}{
		{url.Values{"phases": {"1, 200%"}}, "phases: &#34;200%&#34; is not a percentage in (0, 100]"},
		{url.Values{"phases": {"2, 1"}}, "phase 2 covers 1 devices, fewer than the 2 before it"},
		{url.Values{"selector": {""}}, "give a label selector or device IDs"},
		{url.Values{"devices": {"gw-1"}}, "not both"},
		{url.Values{"id": {"two-phase"}}, "rollout two-phase already exists"},
		{url.Values{"id": {"bad id"}}, "rollout ID"},
		{url.Values{"bundle": {strings.Repeat("0", 64)}}, "not found"},
		{url.Values{"timeout": {"soon"}}, "timeout: &#34;soon&#34; is not a duration"},
		{url.Values{"abort_on": {"sometimes"}}, "abort on &#34;sometimes&#34;"},
		{url.Values{"retries": {"failed"}}, "retries: &#34;failed&#34; is not kind=count"},
		{url.Values{"selector": {"site=nowhere"}}, "no target devices"},
	} {
		bad := url.Values{}
		for k, v := range form {
			bad[k] = v
		}
		bad.Set("id", "other")
		for k, v := range tc.change {
			bad[k] = v
		}
		r := c.post("/console/rollouts", bad)
		if r.code != http.StatusBadRequest || !strings.Contains(r.body, tc.want) {
			t.Errorf("%v: HTTP %d, want 400 saying %q", tc.change, r.code, tc.want)
		}
		if !strings.Contains(r.body, `value="`+bad.Get("id")+`"`) {
			t.Errorf("%v: the form lost what was typed", tc.change)
		}
	}
	if _, err := f.svc.GetRollout("other"); err == nil {
		t.Fatal("a refused form created a rollout")
	}
}

func TestRolloutControls(t *testing.T) {
	f := newFixture(t)
	populate(f)
	c := f.client().login()
	op := func(op string, form url.Values) string {
		t.Helper()
		c.get("/console/rollouts/r1")
		if form == nil {
			form = url.Values{}
		}
		form.Set("csrf", c.csrf)
		r := c.post("/console/rollouts/r1/"+op, form)
		if r.code != http.StatusSeeOther {
			t.Fatalf("%s: HTTP %d", op, r.code)
		}
		return r.header.Get("Location")
	}
	state := func() *rollout.Rollout {
		r, err := f.svc.GetRollout("r1")
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	op("pause", url.Values{"reason": {"looking at the canary"}})
	if r := state(); r.State != api.RolloutPaused || r.Reason != "looking at the canary" {
		t.Fatalf("after pause: %s %q", r.State, r.Reason)
	}
	if r := c.get("/console/rollouts/r1"); !strings.Contains(r.body, "Rollout r1 paused.") || !strings.Contains(r.body, "Resume…") || strings.Contains(r.body, "Pause…") {
		t.Fatal("the page after pausing")
	}
	op("pause", nil) // again: refused, said so
	if r := c.get("/console/rollouts/r1"); !strings.Contains(r.body, "Could not pause rollout r1: invalid rollout: cannot pause a paused rollout") {
		t.Fatal("no error message for a second pause")
	}
	op("resume", nil)
	if r := state(); r.State != api.RolloutRunning {
		t.Fatalf("after resume: %s", r.State)
	}
	op("abort", nil)
	if r := state(); r.State != api.RolloutAborted || r.Reason != "aborted in the web console" {
		t.Fatalf("after abort: %s %q", r.State, r.Reason)
	}
	// Rollback to the release before: none below release 1.
	op("rollback", url.Values{"id": {"r1-rollback"}})
	if r := c.get("/console/rollouts/r1"); !strings.Contains(r.body, "Could not rollback rollout r1") {
		t.Fatal("no error message for a rollback without a release below")
	}
	if r := c.post("/console/rollouts/r1/explode", url.Values{"csrf": {c.csrf}}); r.code != http.StatusNotFound {
		t.Fatalf("unknown operation: HTTP %d", r.code)
	}
}

func TestRollbackFromTheConsole(t *testing.T) {
	f := newFixture(t)
	h1, h2 := populate(f)
	if _, err := f.svc.CreateRollout(api.RolloutRequest{ID: "r2", Bundle: h2, Devices: []string{"gw-1"}}); err != nil {
		t.Fatal(err)
	}
	f.svc.Tick()
	// gw-1 runs release 2 and keeps release 1: a rollback may send it back.
	f.deliver(f.svc.Topics().State("gw-1"), &wire.State{Device: "gw-1", Session: 2, Online: true, Health: "ok", AgentVersion: "0.2.0",
		Labels:   map[string]string{"site": "north"},
		Model:    &wire.ModelRef{ID: "vib", Release: 2, Bundle: h2, Install: "committed"},
		Previous: &wire.ModelRef{ID: "vib", Release: 1, Bundle: h1, Install: "committed"}})
	c := f.client().login()
	r := c.get("/console/rollouts/r2")
	if !strings.Contains(r.body, "Roll back to release 1") || !strings.Contains(r.body, `value="r2-rollback"`) {
		t.Fatal("no rollback control on r2")
	}
	r = c.post("/console/rollouts/r2/rollback", url.Values{"csrf": {c.csrf}, "id": {"r2-rollback"}})
	if r.code != http.StatusSeeOther || r.header.Get("Location") != "/console/rollouts/r2-rollback" {
		t.Fatalf("rollback: %d to %q", r.code, r.header.Get("Location"))
	}
	nr, err := f.svc.GetRollout("r2-rollback")
	if err != nil || !nr.Rollback || nr.Release != 1 || !reflect.DeepEqual(nr.Order, []string{"gw-1"}) {
		t.Fatalf("rollback rollout %+v, %v", nr, err)
	}
	if old, _ := f.svc.GetRollout("r2"); old.State != api.RolloutAborted {
		t.Fatalf("the rolled-back rollout is %s", old.State)
	}
}

func TestRolloutPageFollowsDevices(t *testing.T) {
	f := newFixture(t)
	h1, _ := populate(f)
	ro, _ := f.svc.GetRollout("r1")
	first := ro.Order[0]
	seq := ro.Devices[first].Seq
	f.clk.advance(3 * time.Second)
	f.deliver(f.svc.Topics().Events(first), &wire.Event{Device: first, Rollout: "r1", Seq: seq, State: wire.JobSucceeded,
		Bundle: h1, Model: &wire.ModelRef{ID: "vib", Release: 1, Bundle: h1}, Time: f.clk.now().UnixMilli()})
	f.svc.Tick()
	c := f.client().login()
	r := c.get("/console/rollouts/r1?part=live")
	for _, want := range []string{"1 of 2 succeeded", "Not met: 0 of 1 finished devices failed, rejected or timed out (0.0% ≤ 0%).",
		`<span class="badge ph-done">done</span>`, `<span class="badge ph-running">running</span>`, "phase 2", "succeeded: 1"} {
		if !strings.Contains(r.body, want) {
			t.Errorf("live region does not show %q", want)
		}
	}
	// Filter the device table by state.
	r = c.get("/console/rollouts/r1?device_state=succeeded")
	if !strings.Contains(r.body, "/console/devices/"+first) || strings.Contains(r.body, `href="/console/devices/`+ro.Order[1]+`"`) {
		t.Error("the state filter did not filter")
	}
}

// FuzzRolloutForm: any form either makes a request the fleet then checks,
// or says what is wrong; never a panic, never NaN or a negative figure.
// The input is the form's fields joined by "|": id, bundle, selector,
// devices, phases, abort on, threshold, minimum, timeout, retries.
func FuzzRolloutForm(f *testing.F) {
	f.Add("r1|abc|site=north||1, 100%|any|0|1|10m|failed=1")
	f.Add("r2|abc||gw-1 gw-2|||||")
	f.Add("r3|abc|a=b||5,50%,100%|failed|NaN|1e400|-1s|x=")
	f.Fuzz(func(t *testing.T, in string) {
		v := strings.SplitN(in, "|", 10)
		for len(v) < 10 {
			v = append(v, "")
		}
		form := rolloutForm{ID: v[0], Bundle: v[1], Selector: v[2], Devices: v[3], Phases: v[4], AbortOn: v[5],
			Threshold: v[6], MinFinished: v[7], Timeout: v[8], Retries: v[9]}
		req, err := form.request()
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an empty error message")
			}
			return
		}
		if req.ID == "" || req.Bundle == "" || len(req.Selector) > 0 && len(req.Devices) > 0 {
			t.Fatalf("accepted %+v", req)
		}
		for _, p := range req.Pace.Phases {
			if (p.Count > 0) == (p.Percent > 0) || p.Percent < 0 || p.Percent > 100 || p.Percent != p.Percent {
				t.Fatalf("phase %+v", p)
			}
		}
		a := req.Abort
		if a.ThresholdPercent < 0 || a.ThresholdPercent != a.ThresholdPercent || a.MinExecuted < 0 || req.Timeout < 0 {
			t.Fatalf("request %+v", req)
		}
	})
}

// TestSmallFleetRollout is the README's rollout (--phases 5,50%,100%
// --abort-on any --abort-threshold 5 --abort-min 5) on its one device:
// once it completes, the phases that had no device of their own are
// skipped, not waiting, and the abort criterion, which needs more finished
// devices than the rollout has, says it does not apply.
func TestSmallFleetRollout(t *testing.T) {
	f := newFixture(t)
	f.device("gw-1", map[string]string{"site": "lab"}, nil)
	h := f.bundle("vibration", 1, nil)
	if _, err := f.svc.CreateRollout(api.RolloutRequest{ID: "vibration-1", Bundle: h, Selector: map[string]string{"site": "lab"},
		Pace:  api.Pace{Phases: []api.Phase{{Count: 5}, {Percent: 50}, {Percent: 100}}},
		Abort: api.AbortPolicy{On: api.FailureAny, ThresholdPercent: 5, MinExecuted: 5}}); err != nil {
		t.Fatal(err)
	}
	f.svc.Tick()
	c := f.client().login()
	before := c.get("/console/rollouts/vibration-1?part=live").body
	ro, _ := f.svc.GetRollout("vibration-1")
	f.clk.advance(2 * time.Second)
	f.deliver(f.svc.Topics().Events("gw-1"), &wire.Event{Device: "gw-1", Rollout: "vibration-1", Seq: ro.Devices["gw-1"].Seq,
		State: wire.JobSucceeded, Bundle: h, Model: &wire.ModelRef{ID: "vibration", Release: 1, Bundle: h}, Time: f.clk.now().UnixMilli()})
	f.svc.Tick()
	if ro, _ := f.svc.GetRollout("vibration-1"); ro.State != api.RolloutCompleted {
		t.Fatalf("rollout %s", ro.State)
	}
	after := c.get("/console/rollouts/vibration-1?part=live").body
	for name, body := range map[string]string{"running": before, "completed": after} {
		for _, bad := range []string{"ph-waiting", "0 / 0", "Not checked yet"} {
			if strings.Contains(body, bad) {
				t.Errorf("%s: the page shows %q", name, bad)
			}
		}
		if n := strings.Count(body, `<span class="badge ph-skipped">skipped</span>`); n != 2 {
			t.Errorf("%s: %d phases skipped, want phases 2 and 3", name, n)
		}
		for _, want := range []string{"no devices of its own: the phases before it already reach 1 device",
			"Not applicable: the rollout has 1 device, fewer than the 5 finished devices the criterion needs"} {
			if !strings.Contains(body, want) {
				t.Errorf("%s: the page does not say %q", name, want)
			}
		}
	}
	if !strings.Contains(after, `<span class="badge ph-done">done</span>`) {
		t.Error("phase 1 is not done")
	}
}

// TestAbortCriterionWords: where a rollout stands against its abort
// criterion, in each case an operator meets.
func TestAbortCriterionWords(t *testing.T) {
	devices := func(states ...api.DeviceState) *rollout.Rollout {
		r := &rollout.Rollout{Rollout: api.Rollout{State: api.RolloutRunning, Devices: map[string]*api.DeviceProgress{},
			Abort: api.AbortPolicy{On: api.FailureAny, ThresholdPercent: 20, MinExecuted: 3}}}
		for i, st := range states {
			id := fmt.Sprintf("gw-%d", i)
			r.Order = append(r.Order, id)
			r.Devices[id] = &api.DeviceProgress{State: st}
		}
		return r
	}
	ok, bad, wait := api.DeviceSucceeded, api.DeviceFailed, api.DevicePending
	aborted := devices(ok, wait, wait, wait)
	aborted.State = api.RolloutAborted
	for _, tc := range []struct {
		r    *rollout.Rollout
		want string
	}{
		{devices(ok, ok), "Not applicable: the rollout has 2 devices, fewer than the 3 finished devices"},
		{devices(ok, wait, wait, wait), "Not checked yet: 1 of the 3 finished devices it needs."},
		{aborted, "Never checked: 1 of the 3 finished devices it needs had finished when the rollout ended."},
		{devices(ok, ok, ok, ok, bad), "Not met: 1 of 5 finished devices failed, rejected or timed out (20.0% ≤ 20%)."},
		{devices(ok, ok, bad, wait), "Met: 1 of 3 finished devices failed, rejected or timed out (33.3% > 20%)."},
		{&rollout.Rollout{}, "No abort criterion"},
	} {
		if got := newAbortStatus(tc.r).Status; !strings.Contains(got, tc.want) {
			t.Errorf("%v: %q, want %q", tc.r.Order, got, tc.want)
		}
	}
}
