package agent

import (
	"testing"
	"time"

	"github.com/trit-iot/trit/wire"
	"github.com/trit-iot/trit/wire/mqtttest"
)

// These tests run the real agent against a real Mosquitto (wire/mqtttest)
// on a free loopback port; a missing mosquitto fails them.

func TestInstallEndToEnd(t *testing.T) {
	broker := mqtttest.Start(t)
	k := newKeys(t)
	f := newFleet(t, broker.URL(), k)
	cfg := testConfig(t, k, broker.URL())
	startAgent(t, cfg, nil)
	f.waitFor("agent online", 10*time.Second, func() bool {
		for _, s := range f.states {
			if s.Online {
				return true
			}
		}
		return false
	})

	data := makeBundle(t, bundleOpts{release: 1, signer: k.release})
	h := f.publishBundle(data)
	start := time.Now()
	c := f.deploy(h, "r1", cmdOpts{})
	ev := f.terminal(c, 20*time.Second)
	t.Logf("deployment command → SUCCEEDED on loopback: %v", time.Since(start))
	if ev.State != wire.JobSucceeded || ev.Model == nil || ev.Model.Bundle != h || ev.Model.Release != 1 {
		t.Fatalf("terminal event %+v (model %+v), want SUCCEEDED with the bundle", ev, ev.Model)
	}
	// Every state of the job was reported, in order.
	var states []wire.JobState
	f.mu.Lock()
	for _, e := range f.events {
		if e.Rollout == "r1" {
			states = append(states, e.State)
		}
	}
	f.mu.Unlock()
	want := []wire.JobState{wire.JobQueued, wire.JobDownloading, wire.JobInstalling, wire.JobSucceeded}
	if len(states) < len(want) {
		t.Fatalf("events %v, want %v", states, want)
	}
	for i := range want {
		if states[i] != want[i] {
			t.Fatalf("events %v, want %v", states, want)
		}
	}
	f.waitFor("state with the new model", 5*time.Second, func() bool {
		st := latest(f.states)
		return st != nil && st.Online && st.Model != nil && st.Model.Bundle == h && st.Model.Install == "committed"
	})
	f.waitFor("telemetry with predictions by the new model", 10*time.Second, func() bool {
		for _, tm := range f.telemetry {
			if tm.Model != nil && tm.Model.Bundle == h && tm.Predictions > 0 && tm.Latency != nil {
				return true
			}
		}
		return false
	})

	// The retained command is delivered again on reconnect; it must not
	// run again (idempotence by rollout and sequence).
	broker.Restart()
	f.waitFor("a second session", 15*time.Second, func() bool {
		st := latest(f.states)
		return st != nil && st.Online && st.Session >= 2
	})
	time.Sleep(500 * time.Millisecond)
	f.mu.Lock()
	n := 0
	for _, e := range f.events {
		if e.Rollout == "r1" && e.State == wire.JobQueued {
			n++
		}
	}
	f.mu.Unlock()
	if n != 1 {
		t.Errorf("job r1 was queued %d times, want once", n)
	}
}

func latest(states []*wire.State) *wire.State {
	var s *wire.State
	for _, st := range states {
		if s == nil || st.Session > s.Session || (st.Session == s.Session && (st.Online == s.Online || !st.Online)) {
			s = st
		}
	}
	return s
}

func TestRejections(t *testing.T) {
	broker := mqtttest.Start(t)
	k := newKeys(t)
	f := newFleet(t, broker.URL(), k)
	cfg := testConfig(t, k, broker.URL())
	startAgent(t, cfg, nil)

	good := makeBundle(t, bundleOpts{release: 5, signer: k.release})
	goodHash := f.publishBundle(good)
	if ev := f.terminal(f.deploy(goodHash, "base", cmdOpts{}), 20*time.Second); ev.State != wire.JobSucceeded {
		t.Fatalf("baseline install: %+v", ev)
	}

	expectRejected := func(name string, c *wire.Command, codes ...string) {
		t.Helper()
		ev := f.terminal(c, 20*time.Second)
		ok := ev.State == wire.JobRejected
		if ok && len(codes) > 0 {
			ok = false
			for _, code := range codes {
				ok = ok || ev.Code == code
			}
		}
		if !ok {
			t.Errorf("%s: event %s code %q reason %q, want REJECTED with code %v", name, ev.State, ev.Code, ev.Reason, codes)
		}
	}

	// Tampered bundles: one byte flipped at positions spread over the whole
	// bundle (magic, header, weights, key ID, signature).
	positions := []int{0, 3, 4, 5, 9, 17, 40, len(good) / 3, len(good) / 2, 2 * len(good) / 3, len(good) - 80, len(good) - 70, len(good) - 33, len(good) - 1}
	for i, pos := range positions {
		bad := append([]byte(nil), good...)
		bad[pos] ^= 0x5a
		h := f.publishBundle(bad)
		expectRejected("tampered byte", f.deploy(h, "tamper", cmdOpts{}), wire.CodeBundleSignature, wire.CodeBundleInvalid)
		_ = i
	}

	unknown := makeBundle(t, bundleOpts{release: 6, signer: k.other})
	expectRejected("unknown release key", f.deploy(f.publishBundle(unknown), "unknown-key", cmdOpts{}), wire.CodeBundleSignature)

	next := makeBundle(t, bundleOpts{release: 7, signer: k.release})
	nextHash := f.publishBundle(next)
	expectRejected("expired command", f.deploy(nextHash, "expired", cmdOpts{expired: true}), wire.CodeCommandExpired)
	expectRejected("command by an unknown key", f.deploy(nextHash, "forged", cmdOpts{signer: k.other}), wire.CodeCommandSignature)

	lower := makeBundle(t, bundleOpts{release: 4, signer: k.release})
	expectRejected("lower release", f.deploy(f.publishBundle(lower), "lower", cmdOpts{}), wire.CodeReleaseTooOld)

	// Hash mismatch: the bundle topic of a hash carries other bytes.
	other := makeBundle(t, bundleOpts{release: 8, signer: k.release})
	wrongHash := hashOf(makeBundle(t, bundleOpts{release: 9, signer: k.release}))
	f.publish(f.topics.Bundle(wrongHash), other, true)
	expectRejected("hash mismatch", f.deploy(wrongHash, "mismatch", cmdOpts{}), wire.CodeHashMismatch)

	oversize := make([]byte, cfg.Install.MaxBundleBytes+1)
	copy(oversize, good)
	expectRejected("oversize payload", f.deploy(f.publishBundle(oversize), "oversize", cmdOpts{}), wire.CodeOversize)

	wrongHW := makeBundle(t, bundleOpts{release: 10, signer: k.release, hardware: "other-board"})
	expectRejected("other hardware", f.deploy(f.publishBundle(wrongHW), "hw", cmdOpts{}), wire.CodeIncompatible)
	wrongFeat := makeBundle(t, bundleOpts{release: 10, signer: k.release, features: []string{"x1", "nope", "x3"}})
	expectRejected("missing feature", f.deploy(f.publishBundle(wrongFeat), "feat", cmdOpts{}), wire.CodeIncompatible)

	// Through all of it the good model stayed active...
	time.Sleep(300 * time.Millisecond)
	f.waitFor("state still on the baseline model", 5*time.Second, func() bool {
		st := latest(f.states)
		return st != nil && st.Model != nil && st.Model.Bundle == goodHash && st.Model.Release == 5
	})
	// ...and the agent still installs a good bundle afterwards.
	if ev := f.terminal(f.deploy(nextHash, "after", cmdOpts{}), 20*time.Second); ev.State != wire.JobSucceeded {
		t.Fatalf("install after rejections: %+v", ev)
	}
	// A signed rollback may go back to the lower release.
	if ev := f.terminal(f.deploy(goodHash, "rollback", cmdOpts{rollback: true}), 20*time.Second); ev.State != wire.JobSucceeded {
		t.Fatalf("signed rollback: %+v", ev)
	}
}
