package console

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet"
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

// TestHealthChart: a device's last hour by minute is drawn on its page
// (unknown share and the confidence of the answered windows,
// server-side SVG), and the chart is absent without calibrated windows.
func TestHealthChart(t *testing.T) {
	f := newFixture(t)
	h1, _ := populate(f)
	f.deliver(f.svc.Topics().State("gw-9"), &wire.State{Device: "gw-9", Session: 1, Online: true, Health: "ok", AgentVersion: "0.5.0",
		Model: &wire.ModelRef{ID: "vib", Release: 1, Bundle: h1, Install: "committed"}})
	for i, unknown := range []uint64{2, 4, 30} {
		f.clk.t = f.clk.t.Add(time.Minute)
		f.deliver(f.svc.Topics().Telemetry("gw-9"), &wire.Telemetry{Device: "gw-9", Session: 1, Seq: uint64(i + 1), From: 1, To: 2, Predictions: 100,
			Counts:     map[string]uint64{"normal": 100},
			Confidence: &wire.ConfidenceReport{Unknown: unknown, Histogram: []uint64{0, 0, 0, 0, 0, 0, 0, 0, 50, 50}, Mean: 0.9, AnsweredMean: new(0.9)}})
	}
	c := f.client().login()
	page := c.get("/console/devices/gw-9")
	for _, w := range []string{"Over time", "<polyline class=\"l-failed\"", "<polyline class=\"l-succeeded\"",
		"36 of 300 calibrated windows unknown (12.0%); at the latest minute reported, unknown, % of windows 30, confidence of answered windows, % 90",
		"unknown, % of windows: 30"} {
		if !strings.Contains(page.body, w) {
			t.Errorf("device page does not show %q", w)
		}
	}
	if other := c.get("/console/devices/gw-1"); strings.Contains(other.body, "Over time") {
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
			Confidence: &wire.ConfidenceReport{Unknown: unknown, Histogram: []uint64{0, 0, 0, 0, 0, 0, 0, 0, 0, windows}, Mean: mean, AnsweredMean: new(mean)}}
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
	for _, w := range []string{"Model health of its devices", `<polyline class="l-failed"`, `<polyline class="l-succeeded"`,
		`<polyline class="l-drift"`, `<polyline class="l-agreement"`,
		"Model health of the rollout&#39;s devices over the last hour: 40 of 200 calibrated windows unknown (20.0%); " +
			"at the latest minute reported, unknown, % of windows 20, confidence of answered windows, % 71, drift score ×100 25, shadow agreement, % 80",
		"shadow agreement, %: 80</text>", "Model health of the rollout&#39;s devices by minute"} {
		if !strings.Contains(rollout, w) {
			t.Errorf("rollout page does not show %q", w)
		}
	}
	overview := c.get("/console/").body
	for _, w := range []string{"Model health", `<polyline class="l-agreement"`,
		"Model health of the whole fleet over the last hour: 40 of 400 calibrated windows unknown (10.0%); " +
			"at the latest minute reported, unknown, % of windows 10, confidence of answered windows, % 82, drift score ×100 25, shadow agreement, % 80"} {
		if !strings.Contains(overview, w) {
			t.Errorf("overview does not show %q", w)
		}
	}
	// The device page draws its own minutes with the same code.
	if dev := c.get("/console/devices/gw-2?health=24h").body; !strings.Contains(dev, "Model health of this device over the last 24 hours: 30 of 100 calibrated windows unknown (30.0%)") ||
		!strings.Contains(dev, "shadow agreement, % 70") {
		t.Error("the device page does not draw gw-2's own health")
	}
	// Past minuteChartDevices devices the chart is by hour.
	ids := []string{"gw-1", "gw-2"}
	for len(ids) <= minuteChartDevices {
		ids = append(ids, fmt.Sprintf("quiet-%d", len(ids)))
	}
	chart, note := f.console.groupHealth(ids, "many devices", httptest.NewRequest("GET", "/console/", nil))
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
	chart, note := f.console.groupHealth(ids, "the whole fleet", httptest.NewRequest("GET", "/console/", nil))
	if chart != nil || !strings.Contains(note, "1001 devices: the console draws the model health of at most 1000") {
		t.Fatalf("%d devices: chart %v, note %q", len(ids), chart != nil, note)
	}
}

// A model that answers nothing has no confidence to plot: during a
// minute whose every window was unknown the confidence line breaks (issue
// 38's chart drew 100% there), the unknown line shows 100%; the last
// hour is the default view, and the last 24 hours one link away, each
// with its own axis.
func TestHealthChartAnsweredOnly(t *testing.T) {
	f := newFixture(t)
	h1, _ := populate(f)
	f.deliver(f.svc.Topics().State("gw-9"), &wire.State{Device: "gw-9", Session: 1, Online: true, Health: "ok", AgentVersion: "0.5.0",
		Model: &wire.ModelRef{ID: "vib", Release: 1, Bundle: h1, Install: "committed"}})
	for i, allUnknown := range []bool{false, false, true, true, false} {
		f.clk.t = f.clk.t.Add(time.Minute)
		rep := &wire.ConfidenceReport{Histogram: []uint64{0, 0, 0, 0, 0, 0, 0, 0, 0, 50}, Mean: 0.95, AnsweredMean: new(0.7)}
		if allUnknown {
			rep.Unknown, rep.AnsweredMean = 50, nil
		}
		f.deliver(f.svc.Topics().Telemetry("gw-9"), &wire.Telemetry{Device: "gw-9", Session: 1, Seq: uint64(i + 1), From: 1, To: 2, Predictions: 50,
			Counts: map[string]uint64{"normal": 50}, Confidence: rep})
	}
	c := f.client().login()
	page := c.get("/console/devices/gw-9").body
	if n := strings.Count(page, `<polyline class="l-succeeded"`); n != 2 {
		t.Errorf("the confidence line is drawn in %d pieces, want 2 (broken over the two all-unknown minutes)", n)
	}
	if strings.Contains(page, "% 95") || !strings.Contains(page, "confidence of answered windows, % 70") {
		t.Error("the chart plots the mean confidence of unknown windows")
	}
	for _, w := range []string{"the last hour (UTC), one point a minute", `<strong aria-current="true">the last hour</strong>`,
		`<a href="/console/devices/gw-9?health=24h#h-health">the last 24 hours</a>`} {
		if !strings.Contains(page, w) {
			t.Errorf("the device page lacks %q", w)
		}
	}
	day := c.get("/console/devices/gw-9?health=24h").body
	if !strings.Contains(day, "the last 24 hours (UTC), one point a minute") || !strings.Contains(day, `<a href="/console/devices/gw-9?health=1h#h-health">the last hour</a>`) {
		t.Error("the 24-hour view")
	}
	// The x axis of the last hour spans 60 minutes: its ticks are 10
	// minutes apart, where a day's are 4 hours.
	hour := healthChart([]api.HealthPoint{{Time: f.clk.t.Unix(), Windows: 1, Unknown: 1}}, f.clk.t, false, "x", spanHour)
	dayc := healthChart([]api.HealthPoint{{Time: f.clk.t.Unix(), Windows: 1, Unknown: 1}}, f.clk.t, false, "x", spanDay)
	if len(hour.XTicks) != 7 || len(dayc.XTicks) != 7 {
		t.Fatalf("ticks %d %d", len(hour.XTicks), len(dayc.XTicks))
	}
	if d := hour.XTicks[1].Pos - hour.XTicks[0].Pos; d < 80 || d > 100 {
		t.Errorf("the hour's ticks are %.1f apart, want about a sixth of the plot", d)
	}
}

// Uncertain devices are an overview alert, as drifting ones are (issue
// 38: trit_fleet_devices_uncertain was 3 and the overview said nothing),
// and the devices list shows each device's unknown share and filters the
// uncertain ones.
func TestUncertainAlertAndColumn(t *testing.T) {
	f := newFixtureWith(t, func(o *fleet.Options) { o.UnknownAlert = 0.2 })
	h1, _ := populate(f)
	for i, id := range []string{"gw-8", "gw-9"} {
		f.deliver(f.svc.Topics().State(id), &wire.State{Device: id, Session: 1, Online: true, Health: "ok", AgentVersion: "0.5.0",
			Model: &wire.ModelRef{ID: "vib", Release: 1, Bundle: h1, Install: "committed"}})
		unknown := []uint64{5, 50}[i]
		f.deliver(f.svc.Topics().Telemetry(id), &wire.Telemetry{Device: id, Session: 1, Seq: 1, From: 1, To: 2, Predictions: 50,
			Counts:     map[string]uint64{"normal": 50},
			Confidence: &wire.ConfidenceReport{Unknown: unknown, Histogram: []uint64{0, 0, 0, 0, 0, 0, 0, 0, 0, 50}, Mean: 0.9}})
	}
	c := f.client().login()
	overview := c.get("/console/").body
	if !strings.Contains(overview, "1 device is past the unknown alert threshold (20% of an interval&#39;s windows reported unknown") || !strings.Contains(overview, "gw-9") {
		t.Errorf("the overview does not alert for the uncertain device:\n%.2000s", overview)
	}
	list := c.get("/console/devices").body
	for _, w := range []string{`<th scope="col">Unknown</th>`, "10.0%", `100.0% <span class="badge h-degraded">uncertain</span>`} {
		if !strings.Contains(list, w) {
			t.Errorf("the devices list lacks %q", w)
		}
	}
	only := c.get("/console/devices?health=uncertain").body
	if !strings.Contains(only, "gw-9") || strings.Contains(only, `id="dev-gw-8"`) {
		t.Error("the uncertain filter")
	}
}

// A device a rollout named with unknown devices allowed, which never
// reported, is "never reported", not an offline device last seen in the
// year 1 (issue 38).
func TestNeverReportedDevice(t *testing.T) {
	f := newFixture(t)
	h1, _ := populate(f)
	if _, err := f.svc.CreateRollout(api.RolloutRequest{ID: "ahead", Bundle: h1, Devices: []string{"gw-new"}, AllowUnknown: true}); err != nil {
		t.Fatal(err)
	}
	f.svc.Tick()
	c := f.client().login()
	list := c.get("/console/devices").body
	if !strings.Contains(list, `never reported</span>`) || strings.Contains(list, "0001-01-01") {
		t.Errorf("the devices list shows the device that never reported wrong")
	}
	page := c.get("/console/devices/gw-new").body
	if !strings.Contains(page, "never: a rollout named it") || strings.Contains(page, "0001") {
		t.Errorf("the device page shows a year-1 last seen")
	}
	if ov := c.get("/console/").body; !strings.Contains(ov, "1 device was named by a rollout with unknown devices allowed and never reported") {
		t.Error("the overview does not say a device never reported")
	}
}
