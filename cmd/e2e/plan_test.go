package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/trit-iot/trit/api"
)

// TestPlanByReplay: agents that keep a window history score candidates on
// it without activating them: a candidate that predicts as the active
// model changes nothing, a negated one nearly every prediction; a device
// without a history says so; no device's model changes.
func TestPlanByReplay(t *testing.T) {
	w := newWorld(t)
	w.startFleet()
	ids := w.startAgentsTuned("hist", 2, map[string]string{"site": "east"}, func(a *agentTuning) { a.history = 64 << 10 })
	bare := w.startAgentsTuned("bare", 1, map[string]string{"site": "east"}, nil)
	all := append(ids, bare...)
	w.waitKnown(all)
	v1 := w.publish(w.signed(w.specOf(1), "vib", 1))
	w.rollout(api.RolloutRequest{ID: "v1", Bundle: v1, Devices: all})
	if r := w.waitRollout("v1", time.Minute, nil); r.State != api.RolloutCompleted {
		t.Fatalf("rollout %s: %v", r.State, r.Counts())
	}
	time.Sleep(3 * time.Second) // windows into the histories (20 Hz)
	same := w.publish(w.signed(w.specOf(1), "vib", 2))
	neg := w.publish(w.signed(negated(w.specOf(1)), "vib", 3))
	plan := func(hash string) *api.PlanResult {
		raw, _ := json.Marshal(api.PlanRequest{Bundle: hash, Selector: map[string]string{"site": "east"}, Wait: 10 * time.Second})
		var res api.PlanResult
		w.call("POST", "/v1/plan", raw, &res)
		return &res
	}
	p := plan(same)
	if p.Answered != 2 || p.Windows < 40 || p.Changed != 0 {
		t.Errorf("same model: %d answered, %d of %d windows changed; want 2 devices, none changed: %+v", p.Answered, p.Changed, p.Windows, p.Devices)
	}
	p = plan(neg)
	if p.Answered != 2 || float64(p.Changed) < 0.9*float64(p.Windows) {
		t.Errorf("negated model: %d of %d windows changed on %d devices, want nearly all", p.Changed, p.Windows, p.Answered)
	}
	for _, d := range p.Devices {
		if d.Device == bare[0] && !strings.Contains(d.Error, "history") {
			t.Errorf("device without a history: %+v", d)
		}
	}
	t.Logf("negated candidate: %d of %d predictions would change", p.Changed, p.Windows)
	for id, d := range w.devices() {
		if d.Model == nil || d.Model.Bundle != v1 {
			t.Errorf("%s runs %+v after the plans, want v1", id, d.Model)
		}
	}
}
