package rollout

import (
	"strings"
	"testing"
	"time"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/wire"
)

// The shadow rollout's gates include the confidence gate by default:
// a candidate that reports every window unknown fails it, with no
// max_unknown_increase given.
func TestConfidenceGateInShadow(t *testing.T) {
	r, err := New("s", strings.Repeat("a", 64), []string{"gw-1"}, api.Pace{}, api.AbortPolicy{}, t0)
	if err != nil {
		t.Fatal(err)
	}
	r.Shadow = &api.ShadowPolicy{MinWindows: 10}
	g := api.DefaultConfidenceGate
	r.Gate = &g
	rep := &wire.ShadowReport{Rollout: "s", Windows: 50, Agree: 50, ActiveUnknown: 1, CandidateUnknown: 50, ActiveCalibrated: true, CandidateCalibrated: true,
		ActiveConfidence: 49 * 230, ConfidenceReported: true}
	decision, verdict := r.judgeShadowConfidence(rep, false)
	if decision != api.GateFailed || !strings.Contains(verdict, "unknown 100.0% exceeds the active model's 2.0%") || !strings.Contains(verdict, "confidence of answered windows none answered (active 90.2%)") {
		t.Fatalf("%v %s", decision, verdict)
	}
	rep.CandidateUnknown, rep.CandidateConfidence = 1, 49*100
	if decision, verdict := r.judgeShadowConfidence(rep, false); decision != api.GateFailed || !strings.Contains(verdict, "confidence of answered windows 39.2% is below the active model's 90.2% by more than 20%") {
		t.Fatalf("a less confident candidate: %v %s", decision, verdict)
	}
}

// TestShadowConfidenceUndecided: a candidate unknown on 9 of 100 shadow
// windows where the active model is on 2 is 7 points up, within chance of
// the 10-point limit: the device keeps shadowing with the undecided
// verdict as its reason, nothing is promoted, and at 4 × the shadow's
// 100 windows the counts decide. A clear pass at the first judgement is
// not delayed.
func TestShadowConfidenceUndecided(t *testing.T) {
	r := shadowRollout(t, 4, &api.ShadowPolicy{MinWindows: 100, MinAgreement: 0.5})
	g := api.DefaultConfidenceGate
	r.Gate = &g
	ns := r.Step(t0, seq.next)
	report(t, r, ns, api.DeviceSucceeded, t0)
	calibrated := func(n Notification, windows, active, cand uint64) *wire.ShadowReport {
		rep := shadowReport(r, n, windows, windows)
		rep.ActiveCalibrated, rep.CandidateCalibrated, rep.ActiveUnknown, rep.CandidateUnknown = true, true, active, cand
		return rep
	}
	r.ApplyShadow(ns[0].Device, calibrated(ns[0], 100, 2, 9), t0)
	r.ApplyShadow(ns[1].Device, calibrated(ns[1], 100, 2, 2), t0)
	if out := r.Step(t0.Add(time.Second), seq.next); len(out) != 0 {
		t.Fatalf("promoted while undecided: %+v", out)
	}
	d0, d1 := r.Devices[ns[0].Device], r.Devices[ns[1].Device]
	if d0.State != api.DeviceShadowing || !strings.Contains(d0.Reason, "gates passed") || !strings.Contains(d0.Reason, "confidence gate undecided: unknown 9.0% is within chance") {
		t.Fatalf("near the limit: %s %q", d0.State, d0.Reason)
	}
	if d1.State != api.DeviceShadowPassed {
		t.Fatalf("a clear pass: %s %q", d1.State, d1.Reason)
	}
	// Still 9% at 390 windows: undecided; at 400 the counts decide, 7
	// points up passes and the phase is promoted.
	r.ApplyShadow(ns[0].Device, calibrated(ns[0], 390, 8, 35), t0)
	if out := r.Step(t0.Add(2*time.Second), seq.next); len(out) != 0 || d0.State != api.DeviceShadowing {
		t.Fatalf("at 390 windows: %+v %s %q", out, d0.State, d0.Reason)
	}
	r.ApplyShadow(ns[0].Device, calibrated(ns[0], 400, 8, 36), t0)
	out := r.Step(t0.Add(3*time.Second), seq.next)
	if len(out) != 2 || !strings.Contains(d0.Reason, "confidence gate passed: 400 windows, unknown 9.0% (active 2.0% of 400)") {
		t.Fatalf("at 400 windows: %d notified, %s %q", len(out), d0.State, d0.Reason)
	}
}

// TestCanaryUndecidedAtTimeout: a canary near the limit that cannot
// report enough windows to decide within the per-device timeout is
// decided as counted when its time is up — not timed out, which would
// count as a failure against the rollout; one that reported too few
// windows times out, saying how many.
func TestCanaryUndecidedAtTimeout(t *testing.T) {
	r := mustRollout(t, 2, api.Pace{}, api.AbortPolicy{})
	g := api.DefaultConfidenceGate
	r.Gate = &g
	ns := r.Step(t0, seq.next)
	report(t, r, ns, api.DeviceSucceeded, t0)
	near, few := r.Devices[ns[0].Device], r.Devices[ns[1].Device]
	if near.State != api.DeviceVerifying || few.State != api.DeviceVerifying {
		t.Fatalf("after the install: %s, %s", near.State, few.State)
	}
	near.Verify.BaseWindows, near.Verify.BaseUnknown = 360, 7 // 1.9%
	for _, c := range []struct {
		device string
		n, unk uint64
	}{{ns[0].Device, 54, 6}, {ns[1].Device, 20, 0}} {
		tel := &wire.Telemetry{Model: &wire.ModelRef{Bundle: r.Bundle}, Confidence: &wire.ConfidenceReport{Histogram: []uint64{c.n}, Unknown: c.unk}}
		if !r.ApplyTelemetry(c.device, tel, t0) {
			t.Fatal("telemetry not applied")
		}
	}
	r.Step(t0.Add(time.Second), seq.next)
	if near.State != api.DeviceVerifying || !strings.Contains(near.Reason, "confidence gate undecided") {
		t.Fatalf("11%% of 54 windows against 1.9%%: %s %q", near.State, near.Reason)
	}
	r.Step(t0.Add(r.Timeout+time.Second), seq.next)
	if near.State != api.DeviceSucceeded || !strings.Contains(near.Reason, "confidence gate passed: 54 windows, unknown 11.1% (active 1.9% of 360)") {
		t.Fatalf("near the limit at the timeout: %s %q", near.State, near.Reason)
	}
	if few.State != api.DeviceTimedOut || !strings.Contains(few.Reason, "confidence gate: 20 of the 50 windows it needs reported with the new model within 10m0s") {
		t.Fatalf("too few windows at the timeout: %s %q", few.State, few.Reason)
	}
}

// TestShadowUndecidedAtTimeout: a shadowing device whose agreement is
// within chance of its limit when its time is up is judged as counted
// (92 of 100 against 90%: passed), and the phase is promoted.
func TestShadowUndecidedAtTimeout(t *testing.T) {
	r := shadowRollout(t, 4, &api.ShadowPolicy{MinWindows: 100, MinAgreement: 0.9})
	ns := r.Step(t0, seq.next)
	report(t, r, ns, api.DeviceSucceeded, t0)
	for _, n := range ns {
		r.ApplyShadow(n.Device, shadowReport(r, n, 100, 92), t0)
	}
	r.Step(t0.Add(time.Second), seq.next)
	d := r.Devices[ns[0].Device]
	if d.State != api.DeviceShadowing || !strings.Contains(d.Reason, "gates undecided: agreement 92.0% is within chance of 90%") {
		t.Fatalf("before the timeout: %s %q", d.State, d.Reason)
	}
	out := r.Step(t0.Add(r.Timeout+time.Second), seq.next)
	if len(out) != 2 || !strings.Contains(d.Reason, "gates passed: 100 windows, agreement 92.0%") {
		t.Fatalf("at the timeout: %d promoted, %s %q", len(out), d.State, d.Reason)
	}
}
