package e2e

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet/inventory"
	"github.com/trit-iot/trit/fleet/rollout"
	"github.com/trit-iot/trit/inference/bundle/bundletest"
)

// agentCount is the fleet size of TestRolloutInThreePhases: 200 by default
// (the figure), TRIT_E2E_AGENTS to change it.
func agentCount(t *testing.T, def int) int {
	if s := os.Getenv("TRIT_E2E_AGENTS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("TRIT_E2E_AGENTS=%q", s)
		}
		return n
	}
	return def
}

// TestRolloutInThreePhases: 200 real agents receive a rollout in three
// phases and all report SUCCEEDED; the inventory shows the new model on
// every device, and no phase starts before the one before it finished.
func TestRolloutInThreePhases(t *testing.T) {
	n := agentCount(t, 200)
	w := newWorld(t)
	w.startFleet()
	ids := w.startAgents("gw", n, map[string]string{"site": "north"})
	w.waitInventory("every agent online", 60*time.Second, func(ds map[string]inventory.Device) bool {
		online := 0
		for _, d := range ds {
			if d.Online {
				online++
			}
		}
		return online == n
	})

	hash := w.publish(w.bundle("vib", 1))
	start := time.Now()
	w.rollout(api.RolloutRequest{ID: "three-phases", Bundle: hash, Selector: map[string]string{"site": "north"},
		Pace:  api.Pace{Phases: []api.Phase{{Percent: 5}, {Percent: 50}, {Percent: 100}}},
		Abort: api.AbortPolicy{On: api.FailureAny, ThresholdPercent: 0, MinExecuted: 1}})
	phase1, phase2 := (5*n+99)/100, (50*n+99)/100
	r := w.waitRollout("three-phases", 3*time.Minute, func(r *rollout.Rollout) {
		// Nobody past phase 1 is notified before all of phase 1 finished,
		// and likewise for phase 2.
		notified, finished := 0, 0
		for _, id := range r.Order {
			d := r.Devices[id]
			if d.State != api.DevicePending {
				notified++
			}
			if d.State.Finished() {
				finished++
			}
		}
		if notified > phase1 && finished < phase1 {
			t.Fatalf("phase 2 started with %d of %d phase-1 devices finished", finished, phase1)
		}
		if notified > phase2 && finished < phase2 {
			t.Fatalf("phase 3 started with %d of %d phase-2 devices finished", finished, phase2)
		}
	})
	elapsed := time.Since(start)
	if r.State != api.RolloutCompleted || r.Successes != n {
		t.Fatalf("rollout %s with %d of %d successes (%s): %v", r.State, r.Successes, n, r.Reason, r.Counts())
	}
	t.Logf("%d agents, three phases: rollout completed in %v", n, elapsed.Round(time.Millisecond))
	w.waitInventory("the new model on every device", 30*time.Second, func(ds map[string]inventory.Device) bool {
		for _, id := range ids {
			d := ds[id]
			if d.Model == nil || d.Model.Bundle != hash || d.Model.Release != 1 {
				return false
			}
		}
		return true
	})
}

// TestCanaryHealthFailureRollsBack: a bundle that fails the agents' health
// check trips the abort criterion in the canary phase; the canary agents
// roll back to the previous model by themselves and no device outside the
// canary ever receives the bad bundle.
func TestCanaryHealthFailureRollsBack(t *testing.T) {
	const n = 20
	w := newWorld(t)
	w.startFleet()
	ids := w.startAgents("gw", n, nil)
	w.waitKnown(ids)
	good := w.publish(w.bundle("vib", 1))
	w.rollout(api.RolloutRequest{ID: "good", Bundle: good, Devices: ids})
	if r := w.waitRollout("good", 2*time.Minute, nil); r.State != api.RolloutCompleted {
		t.Fatalf("first rollout %s: %v", r.State, r.Counts())
	}

	bad, err := bundletest.BreakSelfTest(w.bundle("vib", 2), w.releasePriv, w.releaseSet)
	if err != nil {
		t.Fatal(err)
	}
	badHash := w.publish(bad)
	w.rollout(api.RolloutRequest{ID: "bad", Bundle: badHash, Devices: ids,
		Pace:  api.Pace{Phases: []api.Phase{{Count: 2}, {Percent: 100}}},
		Abort: api.AbortPolicy{On: api.FailureFailed, ThresholdPercent: 0, MinExecuted: 1}})
	r := w.waitRollout("bad", 2*time.Minute, nil)
	if r.State != api.RolloutAborted {
		t.Fatalf("bad rollout %s, want aborted: %v", r.State, r.Counts())
	}
	canary := map[string]bool{}
	for _, id := range r.Order {
		d := r.Devices[id]
		switch {
		case d.State == api.DevicePending:
		case d.Attempts > 0:
			canary[id] = true
		}
	}
	if len(canary) != 2 {
		t.Fatalf("%d devices were sent the bad bundle, want the 2 of the canary: %v", len(canary), r.Counts())
	}
	// Every device runs the good model again, the canary by its own
	// rollback; the rest never left it. The abort can come from the first
	// canary to fail while the other is still installing: wait for both.
	var last string
	defer func() {
		if t.Failed() {
			t.Logf("when the inventory was last read: %s", last)
		}
	}()
	w.waitInventory("release 1 everywhere, canary jobs finished", time.Minute, func(ds map[string]inventory.Device) bool {
		for _, id := range ids {
			d := ds[id]
			if d.Model == nil || d.Model.Bundle != good {
				return false
			}
			if canary[id] && (d.LastJob == nil || d.LastJob.Rollout != "bad" || !d.LastJob.State.Terminal()) {
				last = fmt.Sprintf("%s: last job %+v", id, d.LastJob)
				return false
			}
		}
		return true
	})
	ds := w.devices()
	for id := range canary {
		if j := ds[id].LastJob; j == nil || j.Rollout != "bad" || j.State != "FAILED" || j.Code != "self-test" {
			t.Errorf("canary %s: last job %+v, want FAILED self-test in rollout bad", id, j)
		}
	}
	for _, id := range ids {
		if !canary[id] {
			if j := ds[id].LastJob; j == nil || j.Rollout != "good" {
				t.Errorf("%s outside the canary saw rollout %+v", id, j)
			}
		}
	}
}

// TestRolloutSurvivesRestarts: trit-fleet restarted mid-rollout resumes and
// completes it; Mosquitto restarted mid-rollout (with persistence) does not
// stop it either.
func TestRolloutSurvivesRestarts(t *testing.T) {
	const n = 12
	w := newWorld(t)
	w.startFleet()
	ids := w.startAgents("gw", n, nil)
	w.waitKnown(ids)
	hash := w.publish(w.bundle("vib", 1))
	// Phase 2 waits for a start time, so the restarts land mid-rollout.
	phase2 := time.Now().Add(4 * time.Second)
	phase3 := phase2.Add(4 * time.Second)
	w.rollout(api.RolloutRequest{ID: "restarts", Bundle: hash, Devices: ids,
		Pace: api.Pace{Phases: []api.Phase{{Count: 3}, {Count: 6, StartAt: phase2}, {Percent: 100, StartAt: phase3}}}})

	waitSucceeded := func(k int) {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for {
			var r rollout.Rollout
			w.call("GET", "/v1/rollouts/restarts", nil, &r)
			if r.Successes >= k {
				return
			}
			if r.State.Done() || time.Now().After(deadline) {
				t.Fatalf("waiting for %d successes: %s %v", k, r.State, r.Counts())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitSucceeded(3)
	w.restartFleet() // before phase 2 starts
	waitSucceeded(6)
	w.broker.Restart() // before phase 3 starts
	r := w.waitRollout("restarts", 2*time.Minute, nil)
	if r.State != api.RolloutCompleted || r.Successes != n {
		for _, id := range r.Failing() {
			t.Logf("%s: %s %s", id, r.Devices[id].State, r.Devices[id].Reason)
		}
		t.Fatalf("after restarts: %s, %d successes, %v", r.State, r.Successes, r.Counts())
	}
}
