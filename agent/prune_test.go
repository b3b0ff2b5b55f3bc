package agent

import (
	"testing"
	"time"

	"github.com/trit-iot/trit/store"
	"github.com/trit-iot/trit/wire"
)

// TestPruneJobsAtStart: finished job records older than
// install.job_retention are deleted when the agent starts, except the
// newest; the retained latest command is still recognised as done, and a
// command with a pruned (lower) sequence is still refused as superseded.
func TestPruneJobsAtStart(t *testing.T) {
	k := newKeys(t)
	f := newFakeFleet(t, k)
	cfg := testConfig(t, k, "tcp://fake:1883")
	stop := startAgent(t, cfg, &Options{Dialer: f.b})
	f.waitOnline()
	h1 := f.bundle(makeBundle(t, bundleOpts{release: 1, signer: k.release}))
	h2 := f.bundle(makeBundle(t, bundleOpts{release: 2, signer: k.release}))
	for i, h := range []string{h1, h2} {
		c := f.deploy(h, []string{"r1", "r2"}[i])
		if ev := f.terminal(c); ev.State != wire.JobSucceeded {
			t.Fatalf("install %s: %+v", c.Rollout, ev)
		}
	}
	stop()

	time.Sleep(20 * time.Millisecond)
	cfg.Install.JobRetention = Duration{Duration: 10 * time.Millisecond}
	var rec logRecorder
	stop = startAgent(t, cfg, &Options{Dialer: f.b, Logger: rec.logger()})
	f.until("the pruning log line", func() bool { return len(rec.records("old job records pruned")) > 0 })
	if n := rec.records("old job records pruned")[0]["count"]; n != float64(1) {
		t.Errorf("pruned %v records, want 1 (r1; r2 is the newest)", n)
	}
	queued := func() int {
		n := 0
		for _, e := range f.events() {
			if e.Rollout == "r2" && e.State == wire.JobQueued {
				n++
			}
		}
		return n
	}
	// The retained r2 command was delivered again on connect: still done.
	f.waitOnline()
	time.Sleep(300 * time.Millisecond)
	if n := queued(); n != 1 {
		t.Errorf("r2 queued %d times, want once (its record must survive pruning)", n)
	}
	f.seq = 0 // the pruned r1's sequence
	if ev := f.terminal(f.deploy(h1, "r1-again")); ev.State != wire.JobRejected || ev.Code != wire.CodeSuperseded {
		t.Errorf("a command with a pruned sequence: %s %q, want REJECTED superseded", ev.State, ev.Code)
	}
	stop()

	db, err := store.Open(cfg.DBPath(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	jobs, err := db.Jobs()
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		if j.RolloutID == "r1" {
			t.Errorf("job r1 not pruned: %+v", j)
		}
	}
	if seq, err := db.HighestJobSeq(); err != nil || seq != 2 {
		t.Errorf("HighestJobSeq = %d, %v; want 2", seq, err)
	}
}
