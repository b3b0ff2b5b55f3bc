package console

import (
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
		"3 minutes reported, 36 of 300 calibrated windows unknown (12.0%); the last minute 30% unknown, mean confidence 90%",
		"unknown, % of the minute&#39;s windows: 30"} {
		if !strings.Contains(page.body, w) {
			t.Errorf("device page does not show %q", w)
		}
	}
	if other := c.get("/console/devices/gw-1"); strings.Contains(other.body, "The last 24 hours") {
		t.Error("a device without calibrated windows has a health chart")
	}
}
