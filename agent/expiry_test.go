package agent

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/trit-iot/trit/wire"
)

// TestExpiredModelKeepsRunning: expiry gates installs, not the running
// model. After the active bundle's expiry passes the agent keeps
// predicting with it, also across a restart, and says so in its log; an
// expired bundle is still refused at install.
func TestExpiredModelKeepsRunning(t *testing.T) {
	var skew atomic.Int64 // the agent's clock runs this far ahead
	now := func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	k := newKeys(t)
	f := newFakeFleet(t, k)
	f.now = now
	cfg := testConfig(t, k, "tcp://fake:1883")
	var rec logRecorder
	stop := startAgent(t, cfg, &Options{Dialer: f.b, Now: now, Logger: rec.logger()})
	f.waitOnline()

	h := f.bundle(makeBundle(t, bundleOpts{release: 1, signer: k.release, expires: time.Now().Add(time.Hour)}))
	if ev := f.terminal(f.deploy(h, "r1")); ev.State != wire.JobSucceeded {
		t.Fatalf("install: %s %q %q", ev.State, ev.Code, ev.Reason)
	}
	predictsAfter := func(what string, from time.Time) {
		t.Helper()
		f.until(what, func() bool {
			for _, tm := range f.telemetry() {
				if tm.From >= from.UnixMilli() && tm.Model != nil && tm.Model.Bundle == h && tm.Predictions > 0 {
					return true
				}
			}
			return false
		})
	}
	const expired = "the running model's bundle has expired; it keeps running (expiry only refuses installs): deploy a newer release"
	if n := len(rec.records(expired)); n != 0 {
		t.Fatalf("expiry warning before the expiry")
	}

	skew.Store(int64(2 * time.Hour))
	f.until("the expiry warning", func() bool { return len(rec.records(expired)) == 1 })
	predictsAfter("predictions after the expiry", time.Now())

	stop()
	rec2 := &logRecorder{}
	startAgent(t, cfg, &Options{Dialer: f.b, Now: now, Logger: rec2.logger()})
	predictsAfter("predictions after a restart past the expiry", time.Now())
	if len(rec2.records("model loaded")) != 1 || len(rec2.records(expired)) != 1 {
		t.Errorf("after restart: %d 'model loaded', %d expiry warnings; want 1 and 1",
			len(rec2.records("model loaded")), len(rec2.records(expired)))
	}

	// An expired bundle is refused at install, and the old model stays.
	old := f.bundle(makeBundle(t, bundleOpts{release: 2, signer: k.release, expires: time.Now().Add(time.Hour)}))
	if ev := f.terminal(f.deploy(old, "r2")); ev.State != wire.JobRejected || ev.Code != wire.CodeBundleInvalid {
		t.Errorf("expired bundle: %s %q %q, want REJECTED bundle-invalid", ev.State, ev.Code, ev.Reason)
	}
	predictsAfter("predictions by the expired model after the refusal", time.Now())
}
