package agent

import (
	"testing"
	"time"

	"github.com/trit-iot/trit/sensors"
	"github.com/trit-iot/trit/sensors/features"
	"github.com/trit-iot/trit/store"
	"github.com/trit-iot/trit/wire"
	"github.com/trit-iot/trit/wire/mqtttest"
)

// TestShadowThenPromote: a shadow command stores and scores the candidate
// beside the active model without changing what runs; its reports arrive
// in telemetry; a later install command of the same bundle promotes it
// without downloading it again.
func TestShadowThenPromote(t *testing.T) {
	f, k, cfg, v1 := withRelease1(t)
	v2 := f.publishBundle(makeBundle(t, bundleOpts{release: 2, signer: k.release}))
	startAgent(t, cfg, nil)
	c := f.deploy(v2, "shadow-2", cmdOpts{mode: wire.ModeShadow})
	ev := f.terminal(c, 20*time.Second)
	if ev.State != wire.JobSucceeded || ev.Model != nil {
		t.Fatalf("shadow job: %+v, want SUCCEEDED without a model", ev)
	}
	var rep *wire.ShadowReport
	f.waitFor("a shadow report with 50 windows", 20*time.Second, func() bool {
		for _, tm := range f.telemetry {
			if tm.Shadow != nil && tm.Shadow.Windows >= 50 {
				if tm.Model == nil || tm.Model.Bundle != v1 {
					t.Fatalf("while shadowing, telemetry says the active model is %+v, want v1", tm.Model)
				}
				rep = tm.Shadow
				return true
			}
		}
		return false
	})
	if rep.Bundle != v2 || rep.Rollout != "shadow-2" || rep.Seq != c.Seq {
		t.Errorf("report names %s %s/%d, want v2 shadow-2/%d", rep.Bundle, rep.Rollout, rep.Seq, c.Seq)
	}
	var sum uint64
	for _, row := range rep.Confusion {
		for _, n := range row {
			sum += n
		}
	}
	if sum != rep.Windows || rep.Agree > rep.Windows || len(rep.ActiveClasses) != 2 {
		t.Errorf("report inconsistent: %+v", rep)
	}
	// The two test models differ (other weights): both agreement and
	// disagreement must have been seen on 50 random windows.
	if rep.Agree == 0 || rep.Agree == rep.Windows {
		t.Errorf("agreement %d of %d windows: the models differ, want some of each", rep.Agree, rep.Windows)
	}
	f.waitFor("state with the shadow candidate", 10*time.Second, func() bool {
		st := latestLocked(f.states)
		return st != nil && st.Shadow != nil && st.Shadow.Bundle == v2 && st.Model != nil && st.Model.Bundle == v1
	})

	// Promotion: the bundle is stored, so no download happens.
	p := f.deploy(v2, "promote-2", cmdOpts{})
	if ev := f.terminal(p, 20*time.Second); ev.State != wire.JobSucceeded || ev.Model == nil || ev.Model.Bundle != v2 {
		t.Fatalf("promotion: %+v", ev)
	}
	f.mu.Lock()
	for _, e := range f.events {
		if e.Rollout == "promote-2" && e.State == wire.JobDownloading {
			t.Errorf("promotion downloaded the bundle again")
		}
	}
	f.mu.Unlock()
	f.waitFor("state with v2 active and no shadow", 10*time.Second, func() bool {
		st := latestLocked(f.states)
		return st != nil && st.Shadow == nil && st.Model != nil && st.Model.Bundle == v2
	})
}

// latestLocked is lastState for callers holding f.mu.
func latestLocked(states []*wire.State) *wire.State {
	var s *wire.State
	for _, st := range states {
		if s == nil || st.Session > s.Session || (st.Session == s.Session && (st.Online == s.Online || !st.Online)) {
			s = st
		}
	}
	return s
}

// TestShadowRejected: a shadow command for a bundle that is not properly
// signed, or on a device without an active model, is REJECTED with a
// reason code, and nothing is shadowed.
func TestShadowRejected(t *testing.T) {
	broker := mqtttest.Start(t)
	k := newKeys(t)
	f := newFleet(t, broker.URL(), k)
	cfg := testConfig(t, k, broker.URL())
	startAgent(t, cfg, nil)
	v1 := f.publishBundle(makeBundle(t, bundleOpts{release: 1, signer: k.release}))
	if ev := f.terminal(f.deploy(v1, "s0", cmdOpts{mode: wire.ModeShadow}), 20*time.Second); ev.State != wire.JobRejected || ev.Code != wire.CodeNoActive {
		t.Errorf("shadow without an active model: %+v, want REJECTED %s", ev, wire.CodeNoActive)
	}
	if ev := f.terminal(f.deploy(v1, "r1", cmdOpts{}), 20*time.Second); ev.State != wire.JobSucceeded {
		t.Fatalf("install v1: %+v", ev)
	}
	for name, signer := range map[string][]byte{"untrusted key": k.other, "unsigned": nil} {
		var data []byte
		if signer == nil {
			data = makeBundle(t, bundleOpts{release: 2, signer: k.release})
			copy(data[len(data)-72:], make([]byte, 72)) // zero trailer: unsigned
		} else {
			data = makeBundle(t, bundleOpts{release: 2, signer: k.other})
		}
		h := f.publishBundle(data)
		ev := f.terminal(f.deploy(h, "s-"+map[string]string{"untrusted key": "other", "unsigned": "unsigned"}[name], cmdOpts{mode: wire.ModeShadow}), 20*time.Second)
		if ev.State != wire.JobRejected || ev.Code != wire.CodeBundleSignature {
			t.Errorf("%s: %+v, want REJECTED %s", name, ev, wire.CodeBundleSignature)
		}
	}
	if ev := f.terminal(f.deploy(v1, "s-active", cmdOpts{mode: wire.ModeShadow}), 20*time.Second); ev.State != wire.JobRejected || ev.Code != wire.CodeCommandInvalid {
		t.Errorf("shadow of the active bundle: %+v, want REJECTED %s", ev, wire.CodeCommandInvalid)
	}
	time.Sleep(500 * time.Millisecond) // a telemetry interval or two
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, tm := range f.telemetry {
		if tm.Shadow != nil {
			t.Fatalf("telemetry reports a shadow after only refused commands: %+v", tm.Shadow)
		}
	}
}

// TestCrashDuringPromotion kills a real agent process with SIGKILL at each
// point of promoting a shadowed candidate: afterwards the old model is
// active with the candidate still in the shadow slot, or the candidate is
// active and the shadow slot empty — never neither, never both.
func TestCrashDuringPromotion(t *testing.T) {
	for _, point := range []string{"before-activate", "after-activate", "during-health", "after-commit"} {
		t.Run(point, func(t *testing.T) {
			f, k, cfg, v1 := withRelease1(t)
			v2 := f.publishBundle(makeBundle(t, bundleOpts{release: 2, signer: k.release}))
			stop := startAgent(t, cfg, nil)
			if ev := f.terminal(f.deploy(v2, "shadow-2", cmdOpts{mode: wire.ModeShadow}), 20*time.Second); ev.State != wire.JobSucceeded {
				t.Fatalf("shadow: %+v", ev)
			}
			stop()
			p := f.deploy(v2, "promote-2", cmdOpts{})
			runChildUntil(t, cfg, point)

			db, err := store.Open(cfg.DBPath(), nil)
			if err != nil {
				t.Fatalf("reopen after SIGKILL: %v", err)
			}
			active, _, err := db.Slots()
			if err != nil || active == nil {
				t.Fatalf("after SIGKILL at %s: active %v, err %v: no model", point, active, err)
			}
			shadow, err := db.Shadow()
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case active.Hash == v1 && shadow != nil && shadow.Hash == v2:
				t.Logf("SIGKILL at %s: v1 active, v2 still in shadow", point)
			case active.Hash == v2 && shadow == nil:
				t.Logf("SIGKILL at %s: v2 active (%s)", point, active.State)
			default:
				t.Fatalf("after SIGKILL at %s: active %s, shadow %+v: want v1 with v2 shadowed, or v2 alone", point, active.Hash[:12], shadow)
			}
			if _, err := db.Bundle(v2); err != nil {
				t.Fatalf("candidate bundle lost: %v", err)
			}
			db.Close()
			startAgent(t, cfg, nil)
			if ev := f.terminal(p, 20*time.Second); ev.State != wire.JobSucceeded {
				t.Fatalf("after restart: %+v", ev)
			}
		})
	}
}

// TestShadowWithPipeline: with a windowed feature pipeline, the candidate's
// windows end on the same readings as the active model's, however late
// the shadow starts: a candidate that is the same model (another release)
// agrees on every window.
func TestShadowWithPipeline(t *testing.T) {
	k := newKeys(t)
	f := newFakeFleet(t, k)
	cfg := testConfig(t, k, "tcp://fake:1883")
	cfg.Sensors = []sensors.Config{{Kind: "synthetic", Name: "accel", Rate: 1000, Seed: 7}}
	cfg.Features = &features.PipelineSpec{Rate: 1000, Hop: 8, Features: []features.Spec{
		{Channel: "accel.x", Window: 16, Stats: []string{features.StatRMS, features.StatP2P}},
		{Channel: "accel.y", Window: 16, Stats: []string{features.StatRMS}},
	}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	names, err := cfg.Features.FeatureNames()
	if err != nil {
		t.Fatal(err)
	}
	startAgent(t, cfg, &Options{Dialer: f.b})
	f.waitOnline()
	v1 := f.bundle(makeBundle(t, bundleOpts{release: 1, signer: k.release, features: names}))
	if ev := f.terminal(f.deploy(v1, "r1")); ev.State != wire.JobSucceeded {
		t.Fatalf("install: %+v", ev)
	}
	time.Sleep(37 * time.Millisecond) // the shadow starts mid-window
	// The same weights and transform as release 1.
	v2 := f.bundle(makeBundle(t, bundleOpts{release: 2, weights: 1, signer: k.release, features: names}))
	if ev := f.terminal(f.deployMode(v2, "s2", wire.ModeShadow)); ev.State != wire.JobSucceeded {
		t.Fatalf("shadow: %+v", ev)
	}
	var rep *wire.ShadowReport
	f.until("a shadow report of 100 windows", func() bool {
		for _, tm := range f.telemetry() {
			if tm.Shadow != nil && tm.Shadow.Windows >= 100 {
				rep = tm.Shadow
				return true
			}
		}
		return false
	})
	if rep.Agree != rep.Windows {
		t.Errorf("the same model in shadow agreed on %d of %d windows: its windows are not the active model's", rep.Agree, rep.Windows)
	}
}
