package console

import (
	"fmt"
	"github.com/trit-iot/trit/api"
	"strings"
	"testing"
	"time"

	"github.com/trit-iot/trit/wire"
)

// TestUnknownRate: a calibrated model's confidence report shows on its
// device's page as the unknown rate with its reasons and thresholds.
func TestUnknownRate(t *testing.T) {
	f := newFixture(t)
	h1, _ := populate(f)
	f.deliver(f.svc.Topics().State("gw-9"), &wire.State{Device: "gw-9", Session: 1, Online: true, Health: "ok", AgentVersion: "0.5.0",
		Model: &wire.ModelRef{ID: "vib", Release: 1, Bundle: h1, Install: "committed"}})
	f.deliver(f.svc.Topics().Telemetry("gw-9"), &wire.Telemetry{Device: "gw-9", Session: 1, Seq: 1, From: 1, To: 2, Predictions: 40,
		Counts: map[string]uint64{"normal": 40},
		Confidence: &wire.ConfidenceReport{Unknown: 6, LowConfidence: 2, Novel: 4, Histogram: []uint64{0, 0, 0, 2, 4, 4, 6, 8, 8, 8},
			Mean: 0.72, MinConfidence: 0.47, MaxNovelty: 4221}})
	c := f.client().login()
	page := c.get("/console/devices/gw-9")
	for _, w := range []string{"<h3>Confidence</h3>", "<strong>15.0%</strong> of the latest interval's 40 windows",
		"2 below the minimum confidence of 47%, 4 above the maximum novelty of 4221", "Mean confidence</dt><dd>72%"} {
		if !strings.Contains(page.body, w) {
			t.Errorf("device page does not show %q", w)
		}
	}
}

// TestHealthChart: a device's last 24 hours by minute are drawn on its
// page (unknown share and mean confidence, server-side SVG), and the chart
// is absent without calibrated windows.
func TestHealthChart(t *testing.T) {
	f := newFixture(t)
	h1, _ := populate(f)
	f.deliver(f.svc.Topics().State("gw-9"), &wire.State{Device: "gw-9", Session: 1, Online: true, Health: "ok", AgentVersion: "0.5.0",
		Model: &wire.ModelRef{ID: "vib", Release: 1, Bundle: h1, Install: "committed"}})
	for i, unknown := range []uint64{2, 4, 30} {
		f.clk.t = f.clk.t.Add(time.Minute)
		f.deliver(f.svc.Topics().Telemetry("gw-9"), &wire.Telemetry{Device: "gw-9", Session: 1, Seq: uint64(i + 1), From: 1, To: 2, Predictions: 100,
			Counts:     map[string]uint64{"normal": 100},
			Confidence: &wire.ConfidenceReport{Unknown: unknown, Histogram: []uint64{0, 0, 0, 0, 0, 0, 0, 0, 50, 50}, Mean: 0.9}})
	}
	c := f.client().login()
	page := c.get("/console/devices/gw-9")
	for _, w := range []string{"The last 24 hours", "<polyline class=\"l-failed\"", "<polyline class=\"l-succeeded\"",
		"36 of 300 calibrated windows unknown (12.0%); at the latest minute reported, unknown, % of windows 30, mean confidence, % 90",
		"unknown, % of windows: 30"} {
		if !strings.Contains(page.body, w) {
			t.Errorf("device page does not show %q", w)
		}
	}
	if other := c.get("/console/devices/gw-1"); strings.Contains(other.body, "The last 24 hours") {
		t.Error("a device without calibrated windows has a health chart")
	}
}

// TestGroupHealthCharts: the rollout page draws the model health of the
// rollout's devices and the overview that of the whole fleet, summed
// minute by minute (unknown share, confidence, highest drift, mean shadow
// agreement); a device outside the rollout counts on the overview only.
func TestGroupHealthCharts(t *testing.T) {
	f := newFixture(t)
	populate(f) // rollout r1: gw-1 and gw-2
	c := f.client().login()
	for _, path := range []string{"/console/", "/console/rollouts/r1"} {
		if page := c.get(path).body; !strings.Contains(page, "No calibrated windows, drift or shadow reports") || strings.Contains(page, `class="l-drift"`) {
			t.Errorf("%s draws a health chart before any report", path)
		}
	}
	f.device("gw-9", map[string]string{"site": "south"}, nil)
	f.clk.t = f.clk.t.Add(time.Minute)
	report := func(id string, seq, windows, unknown uint64, mean, drift float64, agree uint64) {
		m := &wire.Telemetry{Device: id, Session: 1, Seq: seq, From: 1, To: 2, Predictions: windows,
			Counts:     map[string]uint64{"normal": windows},
			Confidence: &wire.ConfidenceReport{Unknown: unknown, Histogram: []uint64{0, 0, 0, 0, 0, 0, 0, 0, 0, windows}, Mean: mean}}
		if drift > 0 {
			m.Drift = &wire.DriftReport{Score: drift, Windows: windows}
		}
		if agree > 0 {
			m.Shadow = &wire.ShadowReport{Rollout: "r1", Seq: 1, Bundle: strings.Repeat("a", 64), Windows: 100, Agree: agree}
		}
		f.deliver(f.svc.Topics().Telemetry(id), m)
	}
	report("gw-1", 101, 100, 10, 0.8, 0.25, 90)
	report("gw-2", 101, 100, 30, 0.6, 0.05, 70)
	report("gw-9", 101, 200, 0, 0.9, 0, 0)

	rollout := c.get("/console/rollouts/r1").body
	for _, w := range []string{"Model health of its devices, the last 24 hours", `<polyline class="l-failed"`, `<polyline class="l-succeeded"`,
		`<polyline class="l-drift"`, `<polyline class="l-agreement"`,
		"Model health of the rollout&#39;s devices over the last 24 hours: 40 of 200 calibrated windows unknown (20.0%); " +
			"at the latest minute reported, unknown, % of windows 20, mean confidence, % 70, drift score ×100 25, shadow agreement, % 80",
		"shadow agreement, %: 80</text>", "Model health of the rollout&#39;s devices by minute"} {
		if !strings.Contains(rollout, w) {
			t.Errorf("rollout page does not show %q", w)
		}
	}
	overview := c.get("/console/").body
	for _, w := range []string{"Model health, the last 24 hours", `<polyline class="l-agreement"`,
		"Model health of the whole fleet over the last 24 hours: 40 of 400 calibrated windows unknown (10.0%); " +
			"at the latest minute reported, unknown, % of windows 10, mean confidence, % 80, drift score ×100 25, shadow agreement, % 80"} {
		if !strings.Contains(overview, w) {
			t.Errorf("overview does not show %q", w)
		}
	}
	// The device page draws its own minutes with the same code.
	if dev := c.get("/console/devices/gw-2").body; !strings.Contains(dev, "Model health of this device over the last 24 hours: 30 of 100 calibrated windows unknown (30.0%)") ||
		!strings.Contains(dev, "shadow agreement, % 70") {
		t.Error("the device page does not draw gw-2's own health")
	}
	// Past minuteChartDevices devices the chart is by hour.
	ids := []string{"gw-1", "gw-2"}
	for len(ids) <= minuteChartDevices {
		ids = append(ids, fmt.Sprintf("quiet-%d", len(ids)))
	}
	chart, note := f.console.groupHealth(ids, "many devices")
	if chart == nil || note != "" || chart.XAxisLabel != "the last 24 hours (UTC), one point an hour" ||
		!strings.HasPrefix(chart.Summary, "Model health of many devices over the last 24 hours: 40 of 200 calibrated windows unknown (20.0%); at the latest hour reported, unknown, % of windows 20,") {
		t.Fatalf("%d devices: note %q, chart %+v", len(ids), note, chart)
	}
}

// TestGroupHealthBound: beyond api.MaxGroupHealthDevices the console
// reads no history and says why.
func TestGroupHealthBound(t *testing.T) {
	f := newFixture(t)
	ids := make([]string, api.MaxGroupHealthDevices+1)
	for i := range ids {
		ids[i] = fmt.Sprintf("gw-%d", i)
	}
	chart, note := f.console.groupHealth(ids, "the whole fleet")
	if chart != nil || !strings.Contains(note, "1001 devices: the console draws the model health of at most 1000") {
		t.Fatalf("%d devices: chart %v, note %q", len(ids), chart != nil, note)
	}
}
