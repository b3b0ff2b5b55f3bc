package rollout

import (
	"strings"
	"testing"
	"time"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/wire"
)

const hashB = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// shadowReport is a report of windows windows, agree of them agreeing,
// over two classes with the given histograms.
func shadowReport(r *Rollout, n Notification, windows, agree uint64) *wire.ShadowReport {
	dis := windows - agree
	return &wire.ShadowReport{Rollout: r.ID, Seq: n.Seq, Bundle: hashB, Windows: windows, Agree: agree,
		ActiveClasses: []string{"a", "b"}, CandidateClasses: []string{"a", "b"},
		Confusion: [][]uint64{{agree / 2, dis / 2}, {dis - dis/2, agree - agree/2}}, LowMargin: 0.1}
}

func shadowRollout(t *testing.T, n int, p *api.ShadowPolicy) *Rollout {
	t.Helper()
	r := mustRollout(t, n, api.Pace{Phases: []api.Phase{{Count: 2}, {Percent: 100}}}, api.AbortPolicy{On: api.FailureAny, ThresholdPercent: 0, MinExecuted: 1})
	if err := r.SetShadow(p); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestShadowGateAbortsBeforeAnyActivation(t *testing.T) {
	r := shadowRollout(t, 10, &api.ShadowPolicy{MinWindows: 50, MinAgreement: 0.9})
	ns := r.Step(t0, seq.next)
	if len(ns) != 2 || !ns[0].Shadow || !ns[1].Shadow {
		t.Fatalf("canary notifications %+v, want 2 in shadow mode", ns)
	}
	report(t, r, ns, api.DeviceSucceeded, t0)
	for _, n := range ns {
		if s := r.Devices[n.Device].State; s != api.DeviceShadowing {
			t.Fatalf("%s after its shadow job succeeded: %s, want shadowing", n.Device, s)
		}
	}
	if r.Successes != 0 {
		t.Errorf("a shadow job counted as %d successes", r.Successes)
	}
	// Too few windows: no verdict yet, nothing sent.
	r.ApplyShadow(ns[0].Device, shadowReport(r, ns[0], 20, 5), t0)
	if out := r.Step(t0.Add(time.Second), seq.next); len(out) != 0 || r.State != api.RolloutRunning {
		t.Fatalf("judged before min_windows: %+v %s", out, r.State)
	}
	// One canary agrees on 98%, the other on 60%: abort, nobody promoted.
	r.ApplyShadow(ns[1].Device, shadowReport(r, ns[1], 100, 98), t0)
	r.ApplyShadow(ns[0].Device, shadowReport(r, ns[0], 100, 60), t0)
	if out := r.Step(t0.Add(2*time.Second), seq.next); len(out) != 0 {
		t.Fatalf("commands sent after a failed gate: %+v", out)
	}
	if r.State != api.RolloutAborted || !strings.Contains(r.Reason, "agreement 60.0% < 90%") {
		t.Fatalf("rollout %s: %q, want aborted on agreement", r.State, r.Reason)
	}
	for id, d := range r.Devices {
		if d.Stage == api.StagePromote || d.State == api.DeviceSucceeded {
			t.Errorf("%s was promoted (%s, %s)", id, d.Stage, d.State)
		}
	}
}

func TestShadowPassPromotesThenContinues(t *testing.T) {
	r := shadowRollout(t, 6, &api.ShadowPolicy{MinWindows: 50, MinAgreement: 0.9, MaxDivergence: 0.05, MaxLowMargin: 0.5})
	ns := r.Step(t0, seq.next)
	report(t, r, ns, api.DeviceSucceeded, t0)
	r.ApplyShadow(ns[0].Device, shadowReport(r, ns[0], 100, 100), t0)
	// A report of an older command is ignored.
	stale := shadowReport(r, ns[1], 100, 100)
	stale.Seq--
	if r.ApplyShadow(ns[1].Device, stale, t0) {
		t.Error("a report of another command was applied")
	}
	if out := r.Step(t0.Add(time.Second), seq.next); len(out) != 0 {
		t.Fatalf("promoted with one canary still shadowing: %+v", out)
	}
	if s := r.Devices[ns[0].Device].State; s != api.DeviceShadowPassed {
		t.Fatalf("canary 0: %s, want shadow-passed", s)
	}
	r.ApplyShadow(ns[1].Device, shadowReport(r, ns[1], 80, 79), t0)
	prom := r.Step(t0.Add(2*time.Second), seq.next)
	if len(prom) != 2 || prom[0].Shadow || prom[1].Shadow {
		t.Fatalf("promotion %+v, want both canaries sent an install", prom)
	}
	if !strings.HasPrefix(r.Devices[prom[0].Device].Reason, "gates passed") {
		t.Errorf("verdict not kept: %q", r.Devices[prom[0].Device].Reason)
	}
	report(t, r, prom, api.DeviceSucceeded, t0.Add(3*time.Second))
	rest := r.Step(t0.Add(4*time.Second), seq.next)
	if len(rest) != 4 {
		t.Fatalf("phase 2 notified %d devices, want 4", len(rest))
	}
	for _, n := range rest {
		if n.Shadow {
			t.Errorf("%s of phase 2 sent a shadow command; only phase 1 shadows", n.Device)
		}
	}
	report(t, r, rest, api.DeviceSucceeded, t0.Add(5*time.Second))
	r.Step(t0.Add(6*time.Second), seq.next)
	if r.State != api.RolloutCompleted || r.Successes != 6 {
		t.Fatalf("rollout %s with %d successes", r.State, r.Successes)
	}
	if s := r.ShadowSummary(); s == nil || s.Devices != 2 || s.Windows != 180 {
		t.Errorf("summary %+v", s)
	}
}

func TestShadowGates(t *testing.T) {
	rep := &wire.ShadowReport{Windows: 100, Agree: 95, ActiveClasses: []string{"a", "b"}, CandidateClasses: []string{"a", "b"},
		Confusion: [][]uint64{{50, 0}, {5, 45}}, CandidateLowMargin: 30}
	for _, c := range []struct {
		p    api.ShadowPolicy
		ok   bool
		want string
	}{
		{api.ShadowPolicy{MinAgreement: 0.9}, true, "gates passed"},
		{api.ShadowPolicy{MinAgreement: 0.96}, false, "agreement 95.0% < 96%"},
		{api.ShadowPolicy{MaxDivergence: 0.001}, false, "divergence"},
		{api.ShadowPolicy{MaxDivergence: 0.1}, true, "gates passed"},
		{api.ShadowPolicy{MaxLowMargin: 0.2}, false, "low margin 30.0% > 20%"},
		// The candidate's histogram is a 55, b 45 against training's 50/50.
		{api.ShadowPolicy{MaxTrainDivergence: 0.01}, true, "divergence from training 0.002"},
		{api.ShadowPolicy{MaxTrainDivergence: 0.001}, false, "divergence from training 0.002 > 0.001 bits"},
		// Not calibrated: the unknown gate cannot pass.
		{api.ShadowPolicy{MaxUnknownIncrease: 0.5}, false, "the candidate has no calibration"},
	} {
		decision, verdict := c.p.Judge(rep, map[string]uint64{"a": 50, "b": 50}, true)
		if ok := decision == api.GatePassed; ok != c.ok || !strings.Contains(verdict, c.want) {
			t.Errorf("%+v: %v %q, want %v and %q", c.p, decision, verdict, c.ok, c.want)
		}
	}
	// Before the decisive windows the shares are judged on evidence: 95
	// of 100 agreeing is within chance of 96% and of 92% (undecided), far
	// from 60% (passed); a low-margin share of 30% is past 10% by more
	// than chance (failed).
	for _, c := range []struct {
		p    api.ShadowPolicy
		want api.GateDecision
		text string
	}{
		{api.ShadowPolicy{MinAgreement: 0.96}, api.GateUndecided, "gates undecided: agreement 95.0% is within chance of 96%"},
		{api.ShadowPolicy{MinAgreement: 0.92}, api.GateUndecided, "judged again with more windows"},
		{api.ShadowPolicy{MinAgreement: 0.6}, api.GatePassed, "gates passed"},
		{api.ShadowPolicy{MaxLowMargin: 0.1}, api.GateFailed, "low margin 30.0% > 10%"},
		{api.ShadowPolicy{MaxLowMargin: 0.25}, api.GateUndecided, "low margin 30.0% is within chance of 25%"},
		{api.ShadowPolicy{MinAgreement: 0.96, MaxDivergence: 0.001}, api.GateFailed, "divergence"},
	} {
		decision, verdict := c.p.Judge(rep, nil, false)
		if decision != c.want || !strings.Contains(verdict, c.text) {
			t.Errorf("before the decisive windows, %+v: %v %q, want %v and %q", c.p, decision, verdict, c.want, c.text)
		}
	}
	// No confusion matrix (a model of more than wire.MaxShadowClasses
	// classes, or a report too large to carry it): the divergence is not
	// known, so a gate on it fails and says why; the other gates judge.
	bare := *rep
	bare.ActiveClasses, bare.CandidateClasses, bare.Confusion = nil, nil, nil
	for _, c := range []struct {
		p    api.ShadowPolicy
		ok   bool
		want string
	}{
		{api.ShadowPolicy{MinAgreement: 0.9}, true, "divergence not reported"},
		{api.ShadowPolicy{MaxDivergence: 0.9}, false, "divergence cannot be judged"},
		{api.ShadowPolicy{MaxTrainDivergence: 0.9}, false, "divergence cannot be judged"},
	} {
		decision, verdict := c.p.Judge(&bare, map[string]uint64{"a": 50, "b": 50}, true)
		if ok := decision == api.GatePassed; ok != c.ok || !strings.Contains(verdict, c.want) {
			t.Errorf("no confusion, %+v: %v %q, want %v and %q", c.p, decision, verdict, c.ok, c.want)
		}
	}
	// A calibrated candidate with 12% unknown windows where the active
	// model has 2%: a rise of 10 points.
	cal := *rep
	cal.CandidateCalibrated, cal.ActiveCalibrated, cal.CandidateUnknown, cal.ActiveUnknown = true, true, 12, 2
	for _, c := range []struct {
		max  float64
		ok   bool
		want string
	}{
		{0.05, false, "unknown 12.0% exceeds the active model's 2.0% by more than 5%"},
		{0.1, true, "unknown 12.0% (active 2.0%)"},
	} {
		decision, verdict := (&api.ShadowPolicy{MaxUnknownIncrease: c.max}).Judge(&cal, nil, true)
		if ok := decision == api.GatePassed; ok != c.ok || !strings.Contains(verdict, c.want) {
			t.Errorf("max unknown increase %g: %v %q, want %v and %q", c.max, decision, verdict, c.ok, c.want)
		}
	}
}

func TestShadowPolicyRejects(t *testing.T) {
	for name, p := range map[string]*api.ShadowPolicy{
		"agreement above 1": {MinAgreement: 1.5},
		"unknown above 1":   {MaxUnknownIncrease: 1.5},
		"negative phases":   {Phases: -1},
		"more phases":       {Phases: 3},
	} {
		r := mustRollout(t, 4, api.Pace{Phases: []api.Phase{{Count: 1}, {Percent: 100}}}, api.AbortPolicy{})
		if err := r.SetShadow(p); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	r := mustRollout(t, 4, api.Pace{Rate: &api.Rate{BasePerMinute: 1, Factor: 2, IncreaseAfter: 1}}, api.AbortPolicy{})
	if err := r.SetShadow(&api.ShadowPolicy{}); err == nil {
		t.Error("shadow with a rate: accepted")
	}
	r = mustRollout(t, 4, api.Pace{}, api.AbortPolicy{})
	if err := r.SetShadow(&api.ShadowPolicy{MaxTrainDivergence: 0.1}); err == nil {
		t.Error("a training-divergence gate without training counts: accepted")
	}
}
