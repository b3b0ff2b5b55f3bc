package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet/inventory"
	"github.com/trit-iot/trit/fleet/rollout"
	"github.com/trit-iot/trit/inference"
	"github.com/trit-iot/trit/inference/bundle/bundletest"
)

// specOf is the agents' test model of seed (bundletest.Spec).
func (w *world) specOf(seed uint64) *inference.ModelSpec {
	w.t.Helper()
	spec, err := bundletest.Spec(seed, len(features), 256, []string{"normal", "fault"})
	if err != nil {
		w.t.Fatal(err)
	}
	spec.Features = features
	return spec
}

// signed signs spec as release of model id.
func (w *world) signed(spec *inference.ModelSpec, id string, release uint64) []byte {
	w.t.Helper()
	data, err := bundletest.Signed(spec, id, release, time.Now().Add(-time.Minute), w.releasePriv)
	if err != nil {
		w.t.Fatal(err)
	}
	return data
}

// negated returns spec with every weight's sign flipped: it predicts the
// other class wherever spec's score is not zero.
func negated(spec *inference.ModelSpec) *inference.ModelSpec {
	n := *spec
	n.Sign = make([][]uint64, len(spec.Sign))
	for c := range spec.Sign {
		n.Sign[c] = make([]uint64, len(spec.Sign[c]))
		for i, s := range spec.Sign[c] {
			n.Sign[c][i] = s ^ spec.NonZero[c][i]
		}
	}
	return &n
}

// TestShadowGateAbortsThenGoodCandidatePromoted: 20 agents run release 1.
// A candidate that disagrees with it on most windows is shadowed on the
// canary; the agreement gate aborts the rollout and no device ever
// activates it. A candidate that predicts as release 1 does passes its
// shadow phase and is promoted on every device.
func TestShadowGateAbortsThenGoodCandidatePromoted(t *testing.T) {
	const n = 20
	w := newWorld(t)
	w.startFleet()
	ids := w.startAgents("gw", n, nil)
	w.waitKnown(ids)
	v1 := w.publish(w.signed(w.specOf(1), "vib", 1))
	w.rollout(api.RolloutRequest{ID: "v1", Bundle: v1, Devices: ids})
	if r := w.waitRollout("v1", 2*time.Minute, nil); r.State != api.RolloutCompleted {
		t.Fatalf("first rollout %s: %v", r.State, r.Counts())
	}

	gates := &api.ShadowPolicy{MinWindows: 60, MinAgreement: 0.7, MaxDivergence: 0.2}
	pace := api.Pace{Phases: []api.Phase{{Count: 2}, {Percent: 100}}}
	bad := w.publish(w.signed(negated(w.specOf(1)), "vib", 2))
	w.rollout(api.RolloutRequest{ID: "bad", Bundle: bad, Devices: ids, Pace: pace, Shadow: gates})
	activated := func(r *rollout.Rollout) {
		for id, d := range w.devices() {
			if d.Model != nil && d.Model.Bundle == bad {
				t.Fatalf("%s activated the bad candidate", id)
			}
		}
	}
	r := w.waitRollout("bad", 2*time.Minute, activated)
	if r.State != api.RolloutAborted || !strings.Contains(r.Reason, "agreement") {
		t.Fatalf("bad candidate's rollout %s (%s), want aborted by the agreement gate: %v", r.State, r.Reason, r.Counts())
	}
	shadowed := 0
	for _, id := range r.Order {
		d := r.Devices[id]
		switch {
		case d.State == api.DevicePending:
		case d.Stage == api.StageShadow:
			shadowed++
			if d.Shadow != nil && d.Shadow.Windows >= gates.MinWindows && d.Shadow.Agreement() >= 0.7 {
				t.Errorf("canary %s reports agreement %.2f with a negated model", id, d.Shadow.Agreement())
			}
		default:
			t.Errorf("%s in the bad rollout: stage %q state %s, want only shadowing canaries", id, d.Stage, d.State)
		}
	}
	if shadowed != 2 {
		t.Fatalf("%d devices shadowed the bad candidate, want the 2 of the canary", shadowed)
	}
	t.Logf("bad candidate: %s", r.Reason)
	time.Sleep(time.Second) // a late report must not activate it either
	activated(r)

	good := w.publish(w.signed(w.specOf(1), "vib", 3))
	w.rollout(api.RolloutRequest{ID: "good", Bundle: good, Devices: ids, Pace: pace, Shadow: gates})
	r = w.waitRollout("good", 2*time.Minute, nil)
	if r.State != api.RolloutCompleted || r.Successes != n {
		t.Fatalf("good candidate's rollout %s (%s), %d successes: %v", r.State, r.Reason, r.Successes, r.Counts())
	}
	for _, id := range r.Order[:2] {
		d := r.Devices[id]
		if d.Stage != api.StagePromote || d.Shadow == nil || d.Shadow.Agreement() != 1 {
			t.Errorf("canary %s: stage %q, report %+v: want promoted after agreeing on every window", id, d.Stage, d.Shadow)
		}
	}
	t.Logf("good candidate: canary %s: %s", r.Order[0], r.Devices[r.Order[0]].Reason)
	w.waitInventory("the good candidate on every device", 30*time.Second, func(ds map[string]inventory.Device) bool {
		for _, id := range ids {
			if d := ds[id]; d.Model == nil || d.Model.Bundle != good {
				return false
			}
		}
		return true
	})
	if m := w.rawCall("/metrics"); !strings.Contains(m, "trit_fleet_devices_drifting") {
		t.Errorf("/metrics lacks the drift gauge")
	}
}
