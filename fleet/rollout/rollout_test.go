package rollout

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/trit-iot/trit/api"
)

var t0 = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// counter stands in for the devices' sequence counters (one shared
// counter also grows per device).
type counter struct{ n uint64 }

func (c *counter) next(string) uint64 { c.n++; return c.n }

var seq = &counter{}

func deviceIDs(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("gw-%03d", i)
	}
	return out
}

func mustRollout(t *testing.T, n int, pace api.Pace, abort api.AbortPolicy) *Rollout {
	t.Helper()
	r, err := New("r1", "ab12", deviceIDs(n), pace, abort, t0)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// report answers every notification with the given final state.
func report(t *testing.T, r *Rollout, ns []Notification, s api.DeviceState, now time.Time) {
	t.Helper()
	for _, n := range ns {
		if !r.Apply(Report{Device: n.Device, Seq: n.Seq, State: s}, now) {
			t.Fatalf("report %s for %s seq %d ignored", s, n.Device, n.Seq)
		}
	}
}

func TestPhasedRolloutWaitsForEachPhase(t *testing.T) {
	r := mustRollout(t, 20, api.Pace{Phases: []api.Phase{{Percent: 10}, {Percent: 50}, {Percent: 100}}}, api.AbortPolicy{})
	n1 := r.Step(t0, seq.next)
	if len(n1) != 2 {
		t.Fatalf("phase 1 notified %d devices, want 2", len(n1))
	}
	if again := r.Step(t0.Add(time.Second), seq.next); len(again) != 0 {
		t.Fatalf("phase 2 started before phase 1 finished: %v", again)
	}
	report(t, r, n1[:1], api.DeviceSucceeded, t0)
	if again := r.Step(t0.Add(time.Second), seq.next); len(again) != 0 {
		t.Fatalf("phase 2 started with one phase-1 device unfinished: %v", again)
	}
	report(t, r, n1[1:], api.DeviceSucceeded, t0)
	n2 := r.Step(t0.Add(2*time.Second), seq.next)
	if len(n2) != 8 {
		t.Fatalf("phase 2 notified %d devices, want 8 (to 50%%)", len(n2))
	}
	report(t, r, n2, api.DeviceSucceeded, t0)
	n3 := r.Step(t0.Add(3*time.Second), seq.next)
	if len(n3) != 10 {
		t.Fatalf("phase 3 notified %d devices, want 10", len(n3))
	}
	seen := map[uint64]bool{}
	for _, n := range append(append(n1, n2...), n3...) {
		if seen[n.Seq] {
			t.Fatalf("sequence %d reused", n.Seq)
		}
		seen[n.Seq] = true
	}
	report(t, r, n3, api.DeviceSucceeded, t0)
	r.Step(t0.Add(4*time.Second), seq.next)
	if r.State != api.RolloutCompleted || r.Successes != 20 {
		t.Fatalf("state %s with %d successes, want completed with 20", r.State, r.Successes)
	}
	if more := r.Step(t0.Add(time.Hour), seq.next); more != nil {
		t.Fatalf("completed rollout notified %v", more)
	}
}

func TestPhaseStartTime(t *testing.T) {
	r := mustRollout(t, 10, api.Pace{Phases: []api.Phase{{Count: 1}, {Percent: 100, StartAt: t0.Add(time.Hour)}}}, api.AbortPolicy{})
	report(t, r, r.Step(t0, seq.next), api.DeviceSucceeded, t0)
	if n := r.Step(t0.Add(59*time.Minute), seq.next); len(n) != 0 {
		t.Fatalf("phase 2 started before its start time: %d devices", len(n))
	}
	if n := r.Step(t0.Add(time.Hour), seq.next); len(n) != 9 {
		t.Fatalf("phase 2 notified %d at its start time, want 9", len(n))
	}
}

// A canary phase whose devices fail trips the abort criterion, and nobody
// outside the canary is ever notified.
func TestCanaryAbortKeepsBundleFromOthers(t *testing.T) {
	r := mustRollout(t, 50, api.Pace{Phases: []api.Phase{{Count: 5}, {Percent: 100}}},
		api.AbortPolicy{On: api.FailureFailed, ThresholdPercent: 20, MinExecuted: 5})
	canary := r.Step(t0, seq.next)
	if len(canary) != 5 {
		t.Fatalf("canary of %d, want 5", len(canary))
	}
	report(t, r, canary[:3], api.DeviceSucceeded, t0)
	report(t, r, canary[3:], api.DeviceFailed, t0) // 2 of 5 = 40% > 20%
	if n := r.Step(t0.Add(time.Second), seq.next); n != nil {
		t.Fatalf("aborted rollout notified %d devices", len(n))
	}
	if r.State != api.RolloutAborted || r.Reason == "" {
		t.Fatalf("state %s (%q), want aborted with a reason", r.State, r.Reason)
	}
	if got := r.Counts()[api.DevicePending]; got != 45 {
		t.Fatalf("%d devices pending, want 45 untouched", got)
	}
	if f := r.Failing(); !reflect.DeepEqual(f, []string{canary[3].Device, canary[4].Device}) {
		t.Fatalf("failing %v", f)
	}
}

func TestAbortWaitsForMinExecuted(t *testing.T) {
	r := mustRollout(t, 10, api.Pace{}, api.AbortPolicy{On: api.FailureAny, ThresholdPercent: 10, MinExecuted: 3})
	all := r.Step(t0, seq.next)
	report(t, r, all[:1], api.DeviceRejected, t0)
	r.Step(t0, seq.next)
	if r.State != api.RolloutRunning {
		t.Fatalf("aborted after 1 of a minimum 3 executed")
	}
	report(t, r, all[1:3], api.DeviceSucceeded, t0)
	r.Step(t0, seq.next)
	if r.State != api.RolloutAborted {
		t.Fatalf("1 of 3 rejected (33%% > 10%%) did not abort: %s", r.State)
	}
}

func TestTimeoutAndRetry(t *testing.T) {
	r := mustRollout(t, 1, api.Pace{}, api.AbortPolicy{})
	if err := r.SetTimeout(time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := r.SetRetries(map[string]int{api.FailureTimedOut: 1}); err != nil {
		t.Fatal(err)
	}
	first := r.Step(t0, seq.next)
	r.Apply(Report{Device: first[0].Device, Seq: first[0].Seq, State: api.DeviceDownloading}, t0)
	if n := r.Step(t0.Add(time.Minute), seq.next); len(n) != 0 {
		t.Fatalf("timed out at exactly the timeout")
	}
	retry := r.Step(t0.Add(time.Minute+time.Second), seq.next)
	if len(retry) != 1 || retry[0].Seq <= first[0].Seq {
		t.Fatalf("retry %v after timeout of %v", retry, first)
	}
	// A late answer to the first command is ignored.
	if r.Apply(Report{Device: first[0].Device, Seq: first[0].Seq, State: api.DeviceSucceeded}, t0) {
		t.Fatal("stale report applied")
	}
	// The retry times out too: no retries left, the rollout ends — failed,
	// since its only device never succeeded.
	if n := r.Step(t0.Add(3*time.Minute), seq.next); len(n) != 0 {
		t.Fatalf("second retry sent: %v", n)
	}
	if r.State != api.RolloutFailed || r.Devices[first[0].Device].State != api.DeviceTimedOut {
		t.Fatalf("state %s, device %s", r.State, r.Devices[first[0].Device].State)
	}
}

// A rollout whose devices all finished reads as success only if one of
// them succeeded: completed (with a count of the others in Reason when
// some did not), or failed when none did.
func TestRolloutOutcome(t *testing.T) {
	for _, c := range []struct {
		name    string
		results []api.DeviceState
		state   api.RolloutState
		reason  string
	}{
		{"all succeeded", []api.DeviceState{api.DeviceSucceeded, api.DeviceSucceeded, api.DeviceSucceeded}, api.RolloutCompleted, ""},
		{"partial", []api.DeviceState{api.DeviceSucceeded, api.DeviceRejected, api.DeviceFailed}, api.RolloutCompleted, "2 of 3 devices did not succeed (1 failed, 1 rejected)"},
		{"all rejected", []api.DeviceState{api.DeviceRejected, api.DeviceRejected, api.DeviceRejected}, api.RolloutFailed, "no device succeeded: 3 rejected"},
		{"none succeeded", []api.DeviceState{api.DeviceFailed, api.DeviceRejected, api.DeviceFailed}, api.RolloutFailed, "no device succeeded: 2 failed, 1 rejected"},
	} {
		r := mustRollout(t, len(c.results), api.Pace{}, api.AbortPolicy{})
		ns := r.Step(t0, seq.next)
		for i, n := range ns {
			if !r.Apply(Report{Device: n.Device, Seq: n.Seq, State: c.results[i]}, t0) {
				t.Fatalf("%s: report ignored", c.name)
			}
		}
		r.Step(t0, seq.next)
		if r.State != c.state || r.Reason != c.reason || !r.State.Done() {
			t.Errorf("%s: %s (%q), want %s (%q)", c.name, r.State, r.Reason, c.state, c.reason)
		}
	}
}

// A device that refuses its command as superseded (the fleet's counter was
// behind) is sent it again with a new sequence: no failure, no retry used,
// the same attempt; a device that keeps refusing stops being resent.
func TestResendOnSuperseded(t *testing.T) {
	r := mustRollout(t, 2, api.Pace{}, api.AbortPolicy{On: api.FailureAny, ThresholdPercent: 0, MinExecuted: 1})
	first := r.Step(t0, seq.next)
	n := first[0]
	if !r.Apply(Report{Device: n.Device, Seq: n.Seq, State: api.DeviceRejected, Reason: "superseded", Resend: true}, t0) {
		t.Fatal("superseded report ignored")
	}
	if d := r.Devices[n.Device]; d.State.Finished() || !d.Resend {
		t.Fatalf("device after superseded: %+v", d)
	}
	if r.Apply(Report{Device: n.Device, Seq: n.Seq, State: api.DeviceRejected, Resend: true}, t0) || r.Devices[n.Device].Resends != 1 {
		t.Fatal("a re-sent superseded event counted again")
	}
	again := r.Step(t0.Add(time.Second), seq.next)
	if r.State != api.RolloutRunning || len(again) != 1 || again[0].Device != n.Device || again[0].Seq <= n.Seq {
		t.Fatalf("resend %v (state %s)", again, r.State)
	}
	if d := r.Devices[n.Device]; d.Attempts != 1 || d.Resend || d.State != api.DeviceNotified {
		t.Fatalf("device after the resend: %+v", d)
	}
	// The old command's report is stale now.
	if r.Apply(Report{Device: n.Device, Seq: n.Seq, State: api.DeviceRejected, Resend: true}, t0) {
		t.Fatal("report of the superseded command applied")
	}
	for i := 1; i < maxResends; i++ {
		last := again[0]
		r.Apply(Report{Device: last.Device, Seq: last.Seq, State: api.DeviceRejected, Resend: true}, t0)
		if again = r.Step(t0.Add(time.Second), seq.next); len(again) != 1 {
			t.Fatalf("resend %d: %v", i, again)
		}
	}
	last := again[0]
	r.Apply(Report{Device: last.Device, Seq: last.Seq, State: api.DeviceRejected, Resend: true}, t0)
	if d := r.Devices[n.Device]; d.State != api.DeviceRejected {
		t.Fatalf("after %d resends the device is %s, want rejected", maxResends, d.State)
	}
}

func TestApplyIgnoresDuplicatesAndBackwardProgress(t *testing.T) {
	r := mustRollout(t, 1, api.Pace{}, api.AbortPolicy{})
	n := r.Step(t0, seq.next)[0]
	apply := func(s api.DeviceState) bool { return r.Apply(Report{Device: n.Device, Seq: n.Seq, State: s}, t0) }
	if !apply(api.DeviceInstalling) || apply(api.DeviceDownloading) || apply(api.DeviceInstalling) {
		t.Fatal("progress must only move forward")
	}
	if !apply(api.DeviceSucceeded) || apply(api.DeviceSucceeded) || apply(api.DeviceFailed) {
		t.Fatal("a finished attempt must ignore further reports")
	}
	if r.Successes != 1 {
		t.Fatalf("%d successes counted", r.Successes)
	}
	if r.Apply(Report{Device: "nobody", Seq: 1, State: api.DeviceSucceeded}, t0) {
		t.Fatal("report from a device outside the rollout applied")
	}
}

func TestRatePacing(t *testing.T) {
	r := mustRollout(t, 100, api.Pace{Rate: &api.Rate{BasePerMinute: 2, Factor: 2, IncreaseAfter: 2}}, api.AbortPolicy{})
	first := r.Step(t0, seq.next)
	if len(first) != 2 {
		t.Fatalf("first minute: %d devices, want 2", len(first))
	}
	if n := r.Step(t0.Add(29*time.Second), seq.next); len(n) != 0 {
		t.Fatalf("%d devices before the rate allows one", len(n))
	}
	if n := r.Step(t0.Add(30*time.Second), seq.next); len(n) != 1 {
		t.Fatalf("after 30 s at 2/min: %d devices, want 1", len(n))
	}
	report(t, r, first, api.DeviceSucceeded, t0.Add(30*time.Second)) // 2 successes: rate doubles
	if n := r.Step(t0.Add(60*time.Second), seq.next); len(n) != 2 {
		t.Fatalf("30 s at 4/min: %d devices, want 2", len(n))
	}
}

func TestPauseResumeAbort(t *testing.T) {
	r := mustRollout(t, 4, api.Pace{Phases: []api.Phase{{Count: 1}, {Count: 4}}}, api.AbortPolicy{})
	report(t, r, r.Step(t0, seq.next), api.DeviceSucceeded, t0)
	if err := r.Pause("operator", t0); err != nil {
		t.Fatal(err)
	}
	if n := r.Step(t0, seq.next); len(n) != 0 {
		t.Fatalf("paused rollout notified %d", len(n))
	}
	if err := r.Pause("again", t0); !errors.Is(err, ErrInvalid) {
		t.Fatalf("pausing twice: %v", err)
	}
	if err := r.Resume(t0); err != nil {
		t.Fatal(err)
	}
	if n := r.Step(t0, seq.next); len(n) != 3 {
		t.Fatalf("resumed rollout notified %d, want 3", len(n))
	}
	if err := r.AbortNow("operator", t0); err != nil || r.State != api.RolloutAborted {
		t.Fatalf("abort: %v, state %s", err, r.State)
	}
	if err := r.Resume(t0); !errors.Is(err, ErrInvalid) {
		t.Fatalf("resuming an aborted rollout: %v", err)
	}
}

// A rollout persisted as JSON and loaded again (a fleet restart) makes the
// same decisions as the one that stayed in memory.
func TestRolloutSurvivesJSONRoundTrip(t *testing.T) {
	mk := func() *Rollout {
		return mustRollout(t, 30, api.Pace{Rate: &api.Rate{BasePerMinute: 3, Factor: 1.5, IncreaseAfter: 3}},
			api.AbortPolicy{On: api.FailureAny, ThresholdPercent: 50, MinExecuted: 4})
	}
	a := mk()
	now := t0
	ca := &counter{} // the persisted fleet counter, for a and for the reloaded copy
	for step := range 40 {
		now = now.Add(17 * time.Second)
		raw, err := json.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		var b Rollout
		if err := json.Unmarshal(raw, &b); err != nil {
			t.Fatal(err)
		}
		cb := *ca
		na, nb := a.Step(now, ca.next), b.Step(now, cb.next)
		if !reflect.DeepEqual(na, nb) {
			t.Fatalf("step %d: in memory %v, reloaded %v", step, na, nb)
		}
		for i, n := range na {
			s := api.DeviceSucceeded
			if (step+i)%7 == 0 {
				s = api.DeviceFailed
			}
			a.Apply(Report{Device: n.Device, Seq: n.Seq, State: s}, now)
		}
	}
	if a.State != api.RolloutCompleted {
		t.Fatalf("rollout did not complete: %s, counts %v", a.State, a.Counts())
	}
}

func TestNewRolloutRejects(t *testing.T) {
	for name, c := range map[string]struct {
		devices []string
		pace    api.Pace
		abort   api.AbortPolicy
	}{
		"no devices":      {nil, api.Pace{}, api.AbortPolicy{}},
		"duplicate":       {[]string{"a", "a"}, api.Pace{}, api.AbortPolicy{}},
		"empty ID":        {[]string{""}, api.Pace{}, api.AbortPolicy{}},
		"both paces":      {[]string{"a"}, api.Pace{Phases: []api.Phase{{Count: 1}}, Rate: &api.Rate{BasePerMinute: 1, Factor: 1, IncreaseAfter: 1}}, api.AbortPolicy{}},
		"phase shrinks":   {[]string{"a", "b"}, api.Pace{Phases: []api.Phase{{Count: 2}, {Count: 1}}}, api.AbortPolicy{}},
		"percent shrinks": {[]string{"a", "b"}, api.Pace{Phases: []api.Phase{{Percent: 50}, {Percent: 10}}}, api.AbortPolicy{}},
		"percent+count":   {[]string{"a"}, api.Pace{Phases: []api.Phase{{Count: 1, Percent: 5}}}, api.AbortPolicy{}},
		"bad rate":        {[]string{"a"}, api.Pace{Rate: &api.Rate{BasePerMinute: 0, Factor: 1, IncreaseAfter: 1}}, api.AbortPolicy{}},
		"bad abort kind":  {[]string{"a"}, api.Pace{}, api.AbortPolicy{On: "sometimes"}},
		"bad threshold":   {[]string{"a"}, api.Pace{}, api.AbortPolicy{On: api.FailureAny, ThresholdPercent: 101}},
	} {
		if _, err := New("r", "b", c.devices, c.pace, c.abort, t0); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
}

// TestPhasesOnSmallFleets: the README's --phases 5,50%,100% works on any
// fleet size. It failed below 10 devices ("phase 2 covers 1 devices, fewer
// than the 2 before it"); a phase now covers at least what the one before
// it did.
func TestPhasesOnSmallFleets(t *testing.T) {
	pace := api.Pace{Phases: []api.Phase{{Count: 5}, {Percent: 50}, {Percent: 100}}}
	for n, want := range map[int][]int{
		1:  {1, 1, 1},
		3:  {3, 3, 3},
		8:  {5, 5, 8},
		20: {5, 10, 20},
	} {
		r, err := New("r1", "ab12", deviceIDs(n), pace, api.AbortPolicy{}, t0)
		if err != nil {
			t.Errorf("%d devices: %v", n, err)
			continue
		}
		var got []int
		for i := range pace.Phases {
			got = append(got, r.PhaseTarget(i))
		}
		if !slices.Equal(got, want) {
			t.Errorf("%d devices: phase targets %v, want %v", n, got, want)
		}
	}
	// On 3 devices the rollout reaches every device and completes.
	r := mustRollout(t, 3, pace, api.AbortPolicy{})
	for now := t0; r.State == api.RolloutRunning; now = now.Add(time.Second) {
		report(t, r, r.Step(now, seq.next), api.DeviceSucceeded, now)
		if now.Sub(t0) > time.Hour {
			t.Fatalf("rollout stuck: %s %v", r.State, r.Counts())
		}
	}
	if r.State != api.RolloutCompleted || r.Successes != 3 {
		t.Fatalf("rollout %s with %d successes, want completed with 3", r.State, r.Successes)
	}
}

// TestAbortStatusCountsFailureKinds: the criterion counts a finished device
// by its failure kind, not its state's name: a gate-failed device is a
// failure only to FailureAny, and a device still in progress counts for
// nothing.
func TestAbortStatusCountsFailureKinds(t *testing.T) {
	states := []api.DeviceState{api.DeviceSucceeded, api.DeviceFailed, api.DeviceRejected, api.DeviceTimedOut, api.DeviceGateFailed, api.DeviceInstalling}
	for _, tc := range []struct {
		on     string
		failed int
	}{{api.FailureAny, 4}, {api.FailureFailed, 1}, {api.FailureRejected, 1}, {api.FailureTimedOut, 1}} {
		r, err := New("r", "b", deviceIDs(len(states)), api.Pace{}, api.AbortPolicy{On: tc.on, ThresholdPercent: 50, MinExecuted: 5}, t0)
		if err != nil {
			t.Fatal(err)
		}
		for i, id := range r.Order {
			r.Devices[id].State = states[i]
		}
		st := r.AbortStatus()
		want := AbortStatus{Policy: r.Abort, Need: 5, Executed: 5, Failed: tc.failed, Pct: 100 * float64(tc.failed) / 5,
			Checked: true, Met: 100*float64(tc.failed)/5 > 50}
		if st != want {
			t.Errorf("on %s: %+v, want %+v", tc.on, st, want)
		}
	}
	r, _ := New("r", "b", deviceIDs(1), api.Pace{}, api.AbortPolicy{}, t0)
	if st := r.AbortStatus(); st.Enabled() || st.Checked || st.Met {
		t.Errorf("no criterion: %+v", st)
	}
}
