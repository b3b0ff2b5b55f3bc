package agent

import (
	"crypto/ed25519"
	"testing"
	"time"

	"github.com/trit-iot/trit/inference/bundle"
	"github.com/trit-iot/trit/inference/bundle/bundletest"
	"github.com/trit-iot/trit/store"
	"github.com/trit-iot/trit/wire"
	"github.com/trit-iot/trit/wire/mqtttest"
)

// brokenBundle returns a correctly signed release of the test model that
// fails its self-test on any gateway (bundletest.BreakSelfTest).
func brokenBundle(t *testing.T, k *keys, release uint64) []byte {
	t.Helper()
	trusted, err := bundle.NewKeySet(k.release.Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	broken, err := bundletest.BreakSelfTest(makeBundle(t, bundleOpts{release: release, signer: k.release}), k.release, trusted)
	if err != nil {
		t.Fatal(err)
	}
	return broken
}

// checkRolledBack checks, after the FAILED event of the broken release:
// the retained state shows v1 committed and nothing to roll back to, the
// telemetry after the event carries predictions by v1 and none ever came
// from v2, and the database agrees once the agent stopped.
func checkRolledBack(t *testing.T, f *fleet, cfg *Config, stop func(), failedAt int64, v1, v2 string) {
	t.Helper()
	f.waitFor("state: v1 committed again", 10*time.Second, func() bool {
		st := latest(f.states)
		return st != nil && st.Online && st.Model != nil && st.Model.Bundle == v1 &&
			st.Model.Install == string(store.InstallCommitted) && st.Previous == nil
	})
	f.waitFor("telemetry with predictions by v1 after the rollback", 10*time.Second, func() bool {
		for _, tm := range f.telemetry {
			if tm.From >= failedAt && tm.Model != nil && tm.Model.Bundle == v1 && tm.Predictions > 0 {
				return true
			}
		}
		return false
	})
	f.mu.Lock()
	for _, tm := range f.telemetry {
		if tm.Model != nil && tm.Model.Bundle == v2 && tm.Predictions > 0 {
			t.Errorf("telemetry seq %d: %d predictions by the broken model", tm.Seq, tm.Predictions)
		}
	}
	f.mu.Unlock()

	stop()
	db, err := store.Open(cfg.DBPath(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	active, previous, err := db.Slots()
	if err != nil || active == nil || active.Hash != v1 || active.State != store.InstallCommitted || previous != nil {
		t.Fatalf("slots after rollback: active %+v previous %+v err %v; want v1 committed, no previous", active, previous, err)
	}
	failed, err := db.Failed()
	if err != nil || failed == nil || failed.Hash != v2 {
		t.Fatalf("failed install record %+v, %v; want v2", failed, err)
	}
}

// TestHealthCheckRollback installs a good release 1, then a release 2 that
// verifies like any good bundle but fails its self-test: the agent
// activates it, the health check fails, and the agent rolls back to
// release 1 by itself and reports FAILED (self-test).
func TestHealthCheckRollback(t *testing.T) {
	broker := mqtttest.Start(t)
	k := newKeys(t)
	f := newFleet(t, broker.URL(), k)
	cfg := testConfig(t, k, broker.URL())
	stop := startAgent(t, cfg, nil)

	v1 := f.publishBundle(makeBundle(t, bundleOpts{release: 1, signer: k.release}))
	if ev := f.terminal(f.deploy(v1, "r1", cmdOpts{}), 20*time.Second); ev.State != wire.JobSucceeded {
		t.Fatalf("install v1: %+v", ev)
	}
	v2 := f.publishBundle(brokenBundle(t, k, 2))
	c2 := f.deploy(v2, "r2", cmdOpts{})
	ev := f.terminal(c2, 20*time.Second)
	if ev.State != wire.JobFailed || ev.Code != wire.CodeSelfTest {
		t.Fatalf("broken release: %s code %q reason %q; want FAILED self-test", ev.State, ev.Code, ev.Reason)
	}
	// It got as far as INSTALLING (activation), not refused before.
	f.mu.Lock()
	installing := false
	for _, e := range f.events {
		installing = installing || (e.Rollout == "r2" && e.State == wire.JobInstalling)
	}
	f.mu.Unlock()
	if !installing {
		t.Error("no INSTALLING event for the broken release: it was not activated")
	}
	checkRolledBack(t, f, cfg, stop, ev.Time, v1, v2)
}

// TestCrashDuringFailingHealthCheck kills a real agent process with SIGKILL
// right after it activated a bundle that will fail its health check; the
// restarted agent re-runs the check, rolls back to the old model and
// reports FAILED.
func TestCrashDuringFailingHealthCheck(t *testing.T) {
	f, k, cfg, v1 := withRelease1(t)

	v2 := f.publishBundle(brokenBundle(t, k, 2))
	c2 := f.deploy(v2, "r2", cmdOpts{})
	// A self-test failure ends the health check before its cycles, so the
	// latest point in it is just after activation.
	runChildUntil(t, cfg, "after-activate")

	db, err := store.Open(cfg.DBPath(), nil)
	if err != nil {
		t.Fatal(err)
	}
	active, _, err := db.Slots()
	db.Close()
	if err != nil || active == nil || active.Hash != v2 || active.State != store.InstallPending {
		t.Fatalf("after SIGKILL: active %+v, %v; want v2 pending (the crash point is after activation)", active, err)
	}

	stop := startAgent(t, cfg, nil)
	ev := f.terminal(c2, 20*time.Second)
	if ev.State != wire.JobFailed || ev.Code != wire.CodeSelfTest {
		t.Fatalf("after restart: %s code %q reason %q; want FAILED self-test", ev.State, ev.Code, ev.Reason)
	}
	checkRolledBack(t, f, cfg, stop, ev.Time, v1, v2)
}
