package console

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/inference"
	"github.com/trit-iot/trit/inference/bundle"
	"github.com/trit-iot/trit/internal/buildinfo"
	"github.com/trit-iot/trit/store"
	"github.com/trit-iot/trit/wire"
)

// The demo fleet: what the console's screenshots show (make screenshots,
// screenshots_test.go), seeded through the fleet's own intake as agents
// would report it, on a fixed clock so the pictures change only when the
// console does. Twelve gateways on simulated machines (the vibration
// pipeline of scripts/demo.sh) at two sites and a lab; three releases of
// one model (random features with threshold tests, boosted trees, and a
// kernel candidate); the README's rollout on the lab's one gateway; a
// three-phase rollout that completed; one stopped by its abort criterion
// at its canary; a shadow rollout scoring the candidate; one gateway
// drifting, one with a failed sensor, one offline.

// demoFeatures are the vibration pipeline's features (scripts/demo.sh).
var demoFeatures = func() []string {
	var out []string
	for _, axis := range []string{"x", "y", "z"} {
		for _, f := range []string{"rms", "p2p", "band_0_50", "band_50_150", "band_150_500"} {
			out = append(out, "accel."+axis+"."+f)
		}
	}
	return append(out, "accel.temperature.mean")
}()

var demoClasses = []string{"normal", "imbalance", "bearing-fault"}

// demoWeights returns ternary weights for cols columns with a fixed
// pattern, a third of them zero, and their scales.
func demoWeights(classes, cols int, seed uint64) ([][]int8, []float32) {
	r := rand.New(rand.NewPCG(seed, 7))
	nv := inference.Vectors(classes)
	w := make([][]int8, nv)
	alpha := make([]float32, nv)
	for v := range w {
		w[v] = make([]int8, cols)
		for j := range w[v] {
			w[v][j] = int8(r.IntN(3)) - 1
		}
		alpha[v] = 0.2 + float32(v)/10
	}
	return w, alpha
}

func demoScaler(d int) inference.Scaler {
	lo, hi := make([]float32, d), make([]float32, d)
	for i := range d {
		lo[i], hi[i] = -1, 1
	}
	return inference.Scaler{Lo: lo, Hi: hi, Clip: true}
}

// mixedSpec: three threshold tests on every feature and 256 random
// features, with a drift fingerprint over every fourth kept column.
func mixedSpec(t testing.TB) *inference.ModelSpec {
	d := len(demoFeatures)
	th := make([][]float32, d)
	for i := range th {
		th[i] = []float32{-0.5, 0, 0.5}
	}
	base := &inference.ModelSpec{Classes: demoClasses, Features: demoFeatures, Scaler: demoScaler(d), Thresholds: bundle.CompactThresholds(th),
		Transform: inference.TransformSpec{Generator: inference.GeneratorV1, Seed: 11, Sigma: 1.3, D: d, P: 256}}
	w, alpha := demoWeights(len(demoClasses), base.Columns(), 1)
	spec, err := inference.NewSpec(base, w, alpha)
	if err != nil {
		t.Fatal(err)
	}
	fp := &inference.Fingerprint{}
	for c := 0; c < len(spec.Kept); c += 4 {
		fp.Columns = append(fp.Columns, int32(c))
		fp.Rates = append(fp.Rates, uint8(40+c%150))
	}
	spec.Fingerprint = fp
	return spec
}

// treeSpec: 48 boosted trees of depth 4 over the features.
func treeSpec(t testing.TB) *inference.ModelSpec {
	const trees, depth = 48, 4
	d := len(demoFeatures)
	tr := &inference.Trees{Depth: depth}
	for i := range trees * depth {
		tr.Feature = append(tr.Feature, uint16((i*7)%d))
		tr.Value = append(tr.Value, float32(i%9-4)/5)
	}
	base := &inference.ModelSpec{Classes: demoClasses, Features: demoFeatures, Scaler: demoScaler(d), Trees: bundle.CompactTrees(tr)}
	w, alpha := demoWeights(len(demoClasses), base.Columns(), 2)
	spec, err := inference.NewSpec(base, w, alpha)
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// kernelSpec: 1,024 random features, σ = 2.5.
func kernelSpec(t testing.TB) *inference.ModelSpec {
	d := len(demoFeatures)
	w, alpha := demoWeights(len(demoClasses), 1024, 3)
	spec, err := inference.NewTernarySpec(inference.TransformSpec{Generator: inference.GeneratorV1, Seed: 12, Sigma: 2.5, D: d, P: 1024},
		demoScaler(d), demoClasses, w, alpha)
	if err != nil {
		t.Fatal(err)
	}
	spec.Features = demoFeatures
	return spec
}

// registerSpec signs and registers spec as release of model id.
func (f *fixture) registerSpec(id string, release uint64, spec *inference.ModelSpec, minAgent string, info map[string]string) string {
	f.t.Helper()
	raw, err := bundle.Encode(&bundle.Bundle{Header: bundle.Header{ModelID: id, Release: release, CreatedAt: f.clk.now().Add(-time.Hour)},
		Compat: bundle.Compat{Features: spec.Features, MinAgentVersion: minAgent}, Spec: spec, Info: info})
	if err != nil {
		f.t.Fatal(err)
	}
	signed, err := bundle.Sign(raw, f.release)
	if err != nil {
		f.t.Fatal(err)
	}
	b, err := f.svc.Registry().Add(signed)
	if err != nil {
		f.t.Fatal(err)
	}
	return b.Hash
}

// gateway is one simulated agent of the demo fleet: what it reports.
type gateway struct {
	f       *fixture
	id      string
	labels  map[string]string
	model   *wire.ModelRef
	prev    *wire.ModelRef
	health  string
	sensors []wire.SensorHealth
	seq     uint64 // telemetry
	online  bool
}

func (f *fixture) gateway(id string, labels map[string]string) *gateway {
	g := &gateway{f: f, id: id, labels: labels, health: "ok", online: true,
		sensors: []wire.SensorHealth{{Sensor: "accel", State: wire.SensorOK, Since: f.clk.now().Add(-3 * time.Hour).Unix()}}}
	g.state()
	return g
}

// state publishes the gateway's retained state.
func (g *gateway) state() {
	g.f.t.Helper()
	g.f.deliver(g.f.svc.Topics().State(g.id), &wire.State{Device: g.id, Session: 1, Online: g.online, Time: g.f.clk.now().Unix(),
		Labels: g.labels, Health: g.health, AgentVersion: buildinfo.Version, Hardware: "raspberrypi-4b", Sensors: g.sensors,
		Model: g.model, Previous: g.prev})
}

// telemetry publishes one interval's predictions (n windows, the share of
// each class), with a drift and a shadow report if given.
func (g *gateway) telemetry(n uint64, shares []float64, drift *wire.DriftReport, shadow *wire.ShadowReport) {
	g.f.t.Helper()
	g.seq++
	now := g.f.clk.now().UnixMilli()
	counts := map[string]uint64{}
	last := demoClasses[0]
	for i, s := range shares {
		if c := uint64(float64(n) * s); c > 0 {
			counts[demoClasses[i]] = c
		}
		if s > 0.3 && i > 0 {
			last = demoClasses[i]
		}
	}
	g.f.deliver(g.f.svc.Topics().Telemetry(g.id), &wire.Telemetry{Device: g.id, Session: 1, Seq: g.seq, From: now - 10000, To: now,
		Model: g.model, Predictions: n, Counts: counts, Last: &wire.Prediction{Class: last, Time: now - 120},
		Latency: &wire.Latency{P50: 38, P90: 44, P99: 61, Max: 90}, Drift: drift, Shadow: shadow})
}

// job answers the gateway's command in rollout r: it installs hash as
// model/release (state SUCCEEDED) or fails with reason.
func (g *gateway) job(rollout string, state wire.JobState, hash, model string, release uint64, code, reason string) {
	g.f.t.Helper()
	ro, err := g.f.svc.GetRollout(rollout)
	if err != nil {
		g.f.t.Fatal(err)
	}
	p := ro.Devices[g.id]
	if p == nil || p.Seq == 0 {
		g.f.t.Fatalf("%s was not notified in %s", g.id, rollout)
	}
	ev := &wire.Event{Device: g.id, Rollout: rollout, Seq: p.Seq, State: state, Bundle: hash, Code: code, Reason: reason, Time: g.f.clk.now().UnixMilli()}
	if state == wire.JobSucceeded && p.Stage != api.StageShadow {
		ref := &wire.ModelRef{ID: model, Release: release, Bundle: hash, Install: "committed"}
		ev.Model = ref
		g.prev, g.model = g.model, ref
	}
	g.f.deliver(g.f.svc.Topics().Events(g.id), ev)
	if state == wire.JobSucceeded && ev.Model != nil {
		g.state()
	}
}

// demoFleet seeds f with the demo fleet and returns its gateways by ID.
func demoFleet(f *fixture) map[string]*gateway {
	f.t.Helper()
	t := f.t
	gws := map[string]*gateway{}
	var north, south []*gateway
	for i := 1; i <= 12; i++ {
		id := fmt.Sprintf("gw-%02d", i)
		labels := map[string]string{"site": "north", "line": "a"}
		switch {
		case i == 12:
			id, labels = "lab-1", map[string]string{"site": "lab"}
		case i > 6:
			labels = map[string]string{"site": "south", "line": "b"}
		}
		g := f.gateway(id, labels)
		gws[id] = g
		switch labels["site"] {
		case "north":
			north = append(north, g)
		case "south":
			south = append(south, g)
		}
	}
	info := func(bal, rows, counts, validation string) map[string]string {
		return map[string]string{bundle.InfoBalanced: bal, bundle.InfoRows: rows, bundle.InfoClassCounts: counts,
			bundle.InfoValidation: validation, bundle.InfoRead: "csv header=1 delimiter=,"}
	}
	h1 := f.registerSpec("vibration", 1, mixedSpec(t), "0.2.0",
		info("97.12", "1800", "1200,360,240", "forward folds over time: 3 folds of the last 30% of the rows"))
	h2 := f.registerSpec("vibration", 2, treeSpec(t), "0.3.0",
		info("98.64", "5400", "3600,1080,720", "forward folds over time: 3 folds of the last 30% of the rows"))
	h3 := f.registerSpec("vibration", 3, kernelSpec(t), "0.2.0",
		info("98.90", "9000", "6000,1800,1200", "forward folds over time: 3 folds of the last 30% of the rows"))
	f.clk.advance(10 * time.Minute)

	// Release 1 everywhere, at once, a day ago.
	var all []string
	for _, g := range gws {
		all = append(all, g.id)
	}
	f.create(api.RolloutRequest{ID: "vibration-1", Bundle: h1, Devices: all})
	for _, g := range gws {
		f.clk.advance(150 * time.Millisecond)
		g.job("vibration-1", wire.JobSucceeded, h1, "vibration", 1, "", "")
	}
	f.svc.Tick()
	f.clk.advance(20 * time.Hour)

	// Release 2 to the north in three phases, with a pause between them.
	f.create(api.RolloutRequest{ID: "vibration-2-north", Bundle: h2, Selector: map[string]string{"site": "north"},
		Pace:  api.Pace{Phases: []api.Phase{{Count: 1}, {Percent: 50}, {Percent: 100}}},
		Abort: api.AbortPolicy{On: api.FailureAny, ThresholdPercent: 20, MinExecuted: 2}})
	for phase, ids := range [][]int{{0}, {1, 2}, {3, 4, 5}} {
		for _, i := range ids {
			f.clk.advance(2 * time.Second)
			north[i].job("vibration-2-north", wire.JobDownloading, h2, "", 0, "", "")
			f.clk.advance(time.Duration(3+i) * time.Second)
			north[i].job("vibration-2-north", wire.JobSucceeded, h2, "vibration", 2, "", "")
		}
		f.clk.advance(time.Duration(4+phase) * time.Second)
		f.svc.Tick()
	}
	f.clk.advance(30 * time.Minute)

	// Release 2 to the south: its canary fails the health check, and the
	// abort criterion stops the rollout there.
	f.create(api.RolloutRequest{ID: "vibration-2-south", Bundle: h2, Selector: map[string]string{"site": "south"},
		Pace:  api.Pace{Phases: []api.Phase{{Count: 1}, {Percent: 100}}},
		Abort: api.AbortPolicy{On: api.FailureFailed, ThresholdPercent: 0, MinExecuted: 1}})
	f.clk.advance(4 * time.Second)
	south[0].job("vibration-2-south", wire.JobFailed, h2, "", 0, "health_check", "health check failed: 2 of 3 cycles had inference errors; release 1 restored")
	f.svc.Tick()
	f.clk.advance(25 * time.Minute)
	south[4].online = false // its Last Will
	south[4].state()
	f.clk.advance(15 * time.Minute)

	// The README's rollout, on the lab's one gateway.
	f.create(api.RolloutRequest{ID: "lab-vibration-2", Bundle: h2, Selector: map[string]string{"site": "lab"},
		Pace:  api.Pace{Phases: []api.Phase{{Count: 5}, {Percent: 50}, {Percent: 100}}},
		Abort: api.AbortPolicy{On: api.FailureAny, ThresholdPercent: 5, MinExecuted: 5}})
	f.clk.advance(1200 * time.Millisecond)
	gws["lab-1"].job("lab-vibration-2", wire.JobSucceeded, h2, "vibration", 2, "", "")
	f.svc.Tick()
	f.clk.advance(50 * time.Minute)

	// Release 3 in shadow on the north, still running: two gateways score
	// it beside release 2.
	f.create(api.RolloutRequest{ID: "vibration-3-shadow", Bundle: h3, Selector: map[string]string{"site": "north"},
		Pace:   api.Pace{Phases: []api.Phase{{Count: 2}, {Percent: 100}}},
		Abort:  api.AbortPolicy{On: api.FailureAny, ThresholdPercent: 10, MinExecuted: 2},
		Shadow: &api.ShadowPolicy{MinWindows: 1000, MinAgreement: 0.9, MaxLowMargin: 0.2}})
	for _, g := range north[:2] {
		f.clk.advance(3 * time.Second)
		g.job("vibration-3-shadow", wire.JobSucceeded, h3, "vibration", 3, "", "")
	}
	f.svc.Tick()
	f.clk.advance(4 * time.Minute)

	// Health: a failed sensor, a gateway offline.
	south[2].health = "degraded"
	south[2].sensors = []wire.SensorHealth{{Sensor: "accel", State: wire.SensorFailed, Since: f.clk.now().Add(-7 * time.Minute).Unix(), Failures: 42,
		LastError: "read accel: i2c: no ACK from 0x53"}}
	south[2].state()

	// The latest telemetry: predictions, drift, and the shadow scores.
	for _, g := range gws {
		if !g.online || g.health != "ok" {
			continue
		}
		shares := []float64{0.86, 0.1, 0.04}
		drift := &wire.DriftReport{Score: 0.004, Windows: 512, Top: []wire.DriftBit{{Column: 12, Train: 0.4, Now: 0.43, JS: 0.002}}}
		var shadow *wire.ShadowReport
		switch g.id {
		case "gw-07": // its machine changed: inputs unlike the training data
			shares = []float64{0.55, 0.41, 0.04}
			drift = &wire.DriftReport{Score: 0.081, Windows: 512, Top: []wire.DriftBit{
				{Column: 44, Feature: "accel.temperature.mean", Train: 0.22, Now: 0.91, JS: 0.31},
				{Column: 36, Feature: "accel.z.band_50_150", Train: 0.35, Now: 0.74, JS: 0.12},
				{Column: 100, Train: 0.48, Now: 0.71, JS: 0.04}, {Column: 140, Train: 0.51, Now: 0.69, JS: 0.03},
				{Column: 4, Feature: "accel.x.p2p", Train: 0.5, Now: 0.64, JS: 0.02}}}
		case north[0].id, north[1].id:
			ro, _ := f.svc.GetRollout("vibration-3-shadow")
			agree := uint64(map[bool]int{true: 571, false: 590}[g.id == north[0].id])
			shadow = &wire.ShadowReport{Rollout: "vibration-3-shadow", Seq: ro.Devices[g.id].Seq, Bundle: h3, Windows: 600, Agree: agree,
				ActiveClasses: demoClasses, CandidateClasses: demoClasses,
				Confusion:       [][]uint64{{500 - (600 - agree), 600 - agree, 0}, {0, 62, 0}, {0, 0, 38}},
				ActiveLowMargin: 31, CandidateLowMargin: 22, LowMargin: 0.1}
		}
		if g.model != nil && g.model.Release == 2 {
			drift = nil // the trees carry no fingerprint here
		}
		g.telemetry(600, shares, drift, shadow)
	}
	f.svc.Tick()
	demoAudit(f)
	return gws
}

// demoAudit is what the operators of the demo fleet did, as the audit
// trail records it.
func demoAudit(f *fixture) {
	at := f.clk.now().Add(-3 * time.Hour)
	for _, r := range []store.AuditRecord{
		{Who: "local:root", Role: "admin", Agent: "cli", Action: "operator.add", Object: "operator/ann", Outcome: store.AuditOK, Detail: "role admin"},
		{Who: "ann", Role: "admin", Remote: "10.0.4.2", Agent: "tritctl/0.5.0", Action: "operator.add", Object: "operator/otto", Outcome: store.AuditOK, Status: 200, Detail: "role operator"},
		{Who: "ann", Role: "admin", Remote: "10.0.4.2", Agent: "tritctl/0.5.0", Action: "operator.add", Object: "operator/vera", Outcome: store.AuditOK, Status: 200, Detail: "role viewer"},
		{Who: "ci", Role: "release-manager", Remote: "10.0.9.14", Agent: "tritctl/0.5.0", Action: "bundle.publish", Object: "bundle/9bfde1ddfeafb566561e8be248069d7bbd8a5d93f3557d49a4eb80a160376226", Outcome: store.AuditOK, Status: 200, Detail: "model vibration release 2"},
		{Who: "otto", Role: "operator", Remote: "10.0.4.7", Agent: "Mozilla/5.0 (X11; Linux x86_64) Chrome/131", Action: "rollout.create", Object: "rollout/vibration-2-north", Outcome: store.AuditOK, Status: 200, Detail: "web console; bundle 9bfde1ddfeaf"},
		{Who: "vera", Role: "viewer", Remote: "10.0.4.9", Agent: "tritctl/0.5.0", Action: "rollout.abort", Object: "rollout/vibration-2-north", Outcome: store.AuditRefused, Status: 403},
		{Who: "otto", Role: "operator", Remote: "10.0.4.7", Agent: "tritctl/0.5.0", Action: "device.reset", Object: "device/gw-07", Outcome: store.AuditOK, Status: 200},
		{Who: "SIGHUP", Agent: "signal", Action: "config.reload", Object: "config//etc/trit/fleet.toml", Outcome: store.AuditOK, Detail: "log_level info, 1 release keys"},
	} {
		at = at.Add(17 * time.Minute)
		r.Time = at
		f.svc.Audit().Record(r)
	}
}

// create creates a rollout and notifies its first devices.
func (f *fixture) create(req api.RolloutRequest) {
	f.t.Helper()
	if _, err := f.svc.CreateRollout(req); err != nil {
		f.t.Fatalf("rollout %s: %v", req.ID, err)
	}
	f.svc.Tick()
}

// TestDemoFleetPages: the demo fleet the screenshots show is what it says
// (make screenshots would otherwise picture something else), and every
// page of it renders.
func TestDemoFleetPages(t *testing.T) {
	f := newFixtureNamed(t, "demo", 0.05)
	demoFleet(f)
	c := f.client().login()
	for _, tc := range []struct {
		path string
		want []string
	}{
		{"/console/", []string{"1 device is past the drift alert threshold (0.05", "Rollout vibration-2-south", "vibration-3-shadow"}},
		{"/console/devices", []string{"Devices 1–12 of 12", "degraded"}},
		{"/console/devices/gw-07", []string{"<code>accel.temperature.mean</code>", "2 random features", "drifting"}},
		{"/console/rollouts", []string{"vibration-2-north", "completed", "aborted", "running"}},
		{"/console/rollouts/vibration-2-north", []string{"6 of 6 succeeded", "phase 3", "Who did what", "rollout.abort"}},
		{"/console/audit", []string{"vera", "refused", "config.reload", "operator/otto"}},
		{"/console/rollouts/lab-vibration-2", []string{"ph-skipped", "Not applicable"}},
		{"/console/rollouts/vibration-3-shadow", []string{"Shadow gates", "95%"}},
		{"/console/bundles", []string{"48 boosted trees of depth 4", "256 random features (Gaussian kernel, σ = 1.3)", "1,024 random features"}},
	} {
		r := c.get(tc.path)
		if r.code != http.StatusOK {
			t.Errorf("%s: HTTP %d", tc.path, r.code)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(r.body, w) {
				t.Errorf("%s does not show %q", tc.path, w)
			}
		}
	}
}
