package fleet

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet/inventory"
	"github.com/trit-iot/trit/fleet/rollout"
	"github.com/trit-iot/trit/inference"
	"github.com/trit-iot/trit/inference/bundle"
	"github.com/trit-iot/trit/wire"
)

// telemetry delivers a telemetry report and handles it.
func (f *fixture) telemetry(t *testing.T, tm *wire.Telemetry) {
	t.Helper()
	raw, err := tm.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	f.svc.Deliver(f.svc.Topics().Telemetry(tm.Device), raw)
	f.svc.Drain()
}

// TestServiceShadowRollout: shadow commands go out signed in shadow mode;
// reports in telemetry reach the rollout and the inventory; a failing gate
// aborts the rollout before any install command is sent.
func TestServiceShadowRollout(t *testing.T) {
	f := newFixture(t)
	for _, id := range []string{"gw-1", "gw-2", "gw-3"} {
		f.online(t, id, nil)
	}
	hash := f.addBundle(t, 2)
	_, err := f.svc.CreateRollout(api.RolloutRequest{ID: "s1", Bundle: hash, Devices: []string{"gw-1", "gw-2", "gw-3"},
		Pace: api.Pace{Phases: []api.Phase{{Count: 1}, {Percent: 100}}}, Shadow: &api.ShadowPolicy{MinWindows: 10, MinAgreement: 0.7}})
	if err != nil {
		t.Fatal(err)
	}
	f.svc.Tick()
	cs := f.commands(t)
	if len(cs) != 1 || cs[0].Mode != wire.ModeShadow {
		t.Fatalf("commands %+v, want one in shadow mode", cs)
	}
	f.report(t, cs[0], wire.JobSucceeded)
	rep := &wire.ShadowReport{Rollout: "s1", Seq: cs[0].Seq, Bundle: hash, Windows: 40, Agree: 20,
		ActiveClasses: []string{"a", "b"}, CandidateClasses: []string{"a", "b"}, Confusion: [][]uint64{{10, 10}, {10, 10}}, LowMargin: 0.1}
	f.telemetry(t, &wire.Telemetry{Device: cs[0].Device, Session: 1, Seq: 1, From: 1, To: 2, Predictions: 40, Shadow: rep})
	if d, _ := inventory.DeviceByID(f.db, cs[0].Device); d.Shadow == nil || d.Shadow.Windows != 40 {
		t.Fatalf("inventory shadow report %+v", d.Shadow)
	}
	f.svc.Tick()
	if more := f.commands(t); len(more) != 0 {
		t.Fatalf("%d commands after a failed gate", len(more))
	}
	r, _ := f.svc.GetRollout("s1")
	if r.State != api.RolloutAborted || !strings.Contains(r.Reason, "agreement 50.0% < 70%") {
		t.Fatalf("rollout %s %q", r.State, r.Reason)
	}
}

// TestDivergenceGateNeedsCountedClasses: devices send a shadow's
// confusion matrix, from which both divergences come, for models of at
// most wire.MaxShadowClasses classes. A divergence gate on a candidate of
// more classes was judged on a divergence of 0 and always passed; the
// rollout is now refused when it is created, saying why, and the same
// rollout without the gate is accepted.
func TestDivergenceGateNeedsCountedClasses(t *testing.T) {
	f := newFixture(t)
	f.online(t, "gw-1", nil)
	const d, p, k = 4, 128, wire.MaxShadowClasses + 8
	classes := make([]string, k)
	w := make([][]int8, k)
	alpha := make([]float32, k)
	for c := range classes {
		classes[c], alpha[c] = fmt.Sprintf("c%d", c), 0.5
		w[c] = make([]int8, p)
		for j := range w[c] {
			w[c][j] = int8((j+c)%3) - 1
		}
	}
	spec, err := inference.NewTernarySpec(inference.TransformSpec{Generator: inference.GeneratorV1, Seed: 1, Sigma: 1, D: d, P: p},
		inference.Scaler{Lo: []float32{-1, -1, -1, -1}, Hi: []float32{1, 1, 1, 1}}, classes, w, alpha)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := bundle.Encode(&bundle.Bundle{Header: bundle.Header{ModelID: "many", Release: 1, CreatedAt: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)},
		Compat: bundle.Compat{MinAgentVersion: "0.1.0"}, Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	info, _ := f.publish(t, raw)
	req := api.RolloutRequest{ID: "s1", Bundle: info.Hash, Devices: []string{"gw-1"}, Shadow: &api.ShadowPolicy{MaxDivergence: 0.2}}
	_, err = f.svc.CreateRollout(req)
	if !errors.Is(err, rollout.ErrInvalid) || !strings.Contains(err.Error(), fmt.Sprintf("a model of %d classes", k)) {
		t.Fatalf("a divergence gate on %d classes: %v, want it refused", k, err)
	}
	req.Shadow = &api.ShadowPolicy{MinAgreement: 0.5}
	if _, err := f.svc.CreateRollout(req); err != nil {
		t.Fatalf("without the divergence gate: %v", err)
	}
}

// TestServiceDriftAlert: a device's drift score past the threshold marks it
// drifting (once, counted); back below clears it.
func TestServiceDriftAlert(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.DriftAlert = 0.1 })
	for i, score := range []float64{0.02, 0.3, 0.4, 0.05} {
		f.telemetry(t, &wire.Telemetry{Device: "gw-1", Session: 1, Seq: uint64(i + 1), From: 1, To: 2,
			Drift: &wire.DriftReport{Score: score, Windows: 100}})
		d, _ := inventory.DeviceByID(f.db, "gw-1")
		if want := score >= 0.1; d.Drifting != want || d.Drift.Score != score {
			t.Errorf("score %v: drifting %v, want %v", score, d.Drifting, want)
		}
	}
	if n := f.svc.metrics.driftAlerts.Load(); n != 1 {
		t.Errorf("%d drift alerts, want 1 (one crossing)", n)
	}
}

func TestTrainCounts(t *testing.T) {
	classes := []string{"a", "b"}
	if got := trainCounts(map[string]string{"train.class_counts": "30, 70"}, classes); got["a"] != 30 || got["b"] != 70 {
		t.Errorf("counts %v", got)
	}
	for _, bad := range []string{"", "30", "30,x", "1,2,3"} {
		if got := trainCounts(map[string]string{"train.class_counts": bad}, classes); got != nil {
			t.Errorf("%q: %v, want nil", bad, got)
		}
	}
}
