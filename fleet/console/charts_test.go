package console

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet/rollout"
	"github.com/trit-iot/trit/wire"
)

func TestProgressChart(t *testing.T) {
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	r, err := rollout.New("r", "b", []string{"a", "b", "c", "d"}, api.Pace{Phases: []api.Phase{{Count: 1}, {Percent: 100}}}, api.AbortPolicy{}, t0)
	if err != nil {
		t.Fatal(err)
	}
	set := func(id string, st api.DeviceState, notified, updated float64) {
		d := r.Devices[id]
		d.State, d.NotifiedAt, d.UpdatedAt = st, at(notified), at(updated)
	}
	if progressChart(r, at(5)) != nil {
		t.Fatal("a chart before anyone was notified")
	}
	set("a", api.DeviceSucceeded, 1, 10)
	set("b", api.DeviceFailed, 12, 20)
	set("c", api.DeviceInstalling, 12, 15)
	c := progressChart(r, at(60))
	if c == nil {
		t.Fatal("no chart")
	}
	last := map[string]int{}
	for _, s := range c.Series {
		last[s.Name] = s.Last
		// Step lines: x never goes back, y (a count, drawn downwards) never
		// goes down.
		px, py := -1.0, 1e9
		for _, p := range strings.Fields(s.Points) {
			xs, ys, _ := strings.Cut(p, ",")
			x, _ := strconv.ParseFloat(xs, 64)
			y, _ := strconv.ParseFloat(ys, 64)
			if x < px || y > py || x < c.Left || x > c.Right+0.1 || y < c.Top-0.1 || y > c.Bot {
				t.Fatalf("%s: point %s after (%g,%g), plot [%g,%g]×[%g,%g]", s.Name, p, px, py, c.Left, c.Right, c.Top, c.Bot)
			}
			px, py = x, y
		}
	}
	if last["notified"] != 3 || last["succeeded"] != 1 || last["failed"] != 1 {
		t.Fatalf("final values %v", last)
	}
	// The second phase began when b and c were notified, 12 s of 60.
	if len(c.Markers) != 1 || c.Markers[0].Label != "phase 2" {
		t.Fatalf("markers %+v", c.Markers)
	}
	if want := c.Left + c.PlotWidth*12/60; c.Markers[0].X < want-0.01 || c.Markers[0].X > want+0.01 {
		t.Fatalf("phase 2 marker at x=%g, want %g", c.Markers[0].X, want)
	}
	if c.XTicks[0].Label != "0" || c.XTicks[len(c.XTicks)-1].Label != "1 min" || c.YTicks[len(c.YTicks)-1].Label != "4" {
		t.Fatalf("ticks %v %v", c.XTicks, c.YTicks)
	}
	if !strings.Contains(c.Summary, "3 of 4 devices notified, 1 succeeded, 1 failed") {
		t.Fatalf("summary %q", c.Summary)
	}
}

func TestClassChart(t *testing.T) {
	if classChart(nil, "") != nil || classChart(map[string]uint64{"a": 0}, "") != nil {
		t.Fatal("a chart of nothing")
	}
	c := classChart(map[string]uint64{"normal": 60, "fault": 30, "unknown": 10}, "x")
	if len(c.Rows) != 3 || c.Rows[0].Full != "normal" || c.Rows[2].Full != "unknown" || c.Rows[0].Value != "60 (60.0%)" {
		t.Fatalf("rows %+v", c.Rows)
	}
	if c.Rows[1].W*2 < c.Rows[0].W-1 || c.Rows[1].W*2 > c.Rows[0].W+1 {
		t.Fatalf("bars not to scale: %g vs %g", c.Rows[0].W, c.Rows[1].W)
	}
	many := map[string]uint64{}
	for i := range 30 {
		many["class-"+strconv.Itoa(i)] = uint64(100 - i)
	}
	c = classChart(many, "x")
	if len(c.Rows) != 12 || c.Rows[11].Full != "19 other classes" {
		t.Fatalf("%d rows, last %q", len(c.Rows), c.Rows[len(c.Rows)-1].Full)
	}
	// A report that left classes out: they are one bar, and the shares
	// are of every prediction.
	d := &api.Device{Counts: map[string]uint64{"a": 30, "b": 20}, CountsOther: &wire.OtherCounts{Classes: 300, Predictions: 50}}
	c = classChart(classCounts(d), "x")
	if len(c.Rows) != 3 || c.Rows[0].Full != api.HealthOther || c.Rows[0].Value != "50 (50.0%)" || c.Rows[1].Value != "30 (30.0%)" {
		t.Fatalf("rows %+v", c.Rows)
	}
	long := strings.Repeat("é", 40)
	c = classChart(map[string]uint64{long: 1}, "x")
	if c.Rows[0].Full != long || len([]rune(c.Rows[0].Label)) != 22 || !strings.HasSuffix(c.Rows[0].Label, "…") {
		t.Fatalf("label %q", c.Rows[0].Label)
	}
}

func TestProgressBar(t *testing.T) {
	var p progress
	for _, s := range []api.DeviceState{api.DeviceSucceeded, api.DeviceSucceeded, api.DeviceTimedOut, api.DeviceDownloading, api.DevicePending} {
		p.add(s)
	}
	b := p.bar()
	if p != (progress{Total: 5, Succeeded: 2, Failed: 1, InProgress: 1, Pending: 1}) || len(b.Segs) != 4 {
		t.Fatalf("%+v %+v", p, b)
	}
	end := 0.0
	for _, s := range b.Segs {
		if s.X < end-1e-9 || s.X > end+1e-9 {
			t.Fatalf("segments not contiguous: %+v", b.Segs)
		}
		end = s.X + s.W
	}
	if end < 100-1e-9 || end > 100+1e-9 {
		t.Fatalf("segments end at %g", end)
	}
}

// TestProgressChartAxesFitTheData: whatever a rollout's length and size,
// the x axis starts at 0 and its last labelled tick is at or past the last
// event (a 1.9 s rollout is not drawn on ticks 0 and "1 s"), the lines
// reach the right half of the plot, the y axis has a labelled tick at or
// above the device count, and ticks are evenly spaced and distinct.
func TestProgressChartAxesFitTheData(t *testing.T) {
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		span    time.Duration
		devices int
	}{
		{300 * time.Millisecond, 1}, {600 * time.Millisecond, 3}, {1900 * time.Millisecond, 7}, {3 * time.Second, 2},
		{61 * time.Second, 12}, {7*time.Minute + 10*time.Second, 101}, {26 * time.Hour, 1000}, {40 * 24 * time.Hour, 3},
	} {
		ids := make([]string, tc.devices)
		for i := range ids {
			ids[i] = "gw-" + strconv.Itoa(i)
		}
		r, err := rollout.New("r", "b", ids, api.Pace{}, api.AbortPolicy{}, t0)
		if err != nil {
			t.Fatal(err)
		}
		for i, id := range ids {
			d := r.Devices[id]
			d.State, d.NotifiedAt = api.DeviceSucceeded, t0
			d.UpdatedAt = t0.Add(tc.span * time.Duration(i+1) / time.Duration(len(ids)))
		}
		r.State, r.Finished = api.RolloutCompleted, t0.Add(tc.span)
		c := progressChart(r, t0.Add(time.Hour*24*365))
		name := tc.span.String()
		xs, ys := c.XTicks, c.YTicks
		if len(xs) < 3 || len(xs) > 51 || xs[0].Label != "0" || xs[0].Pos != c.Left || xs[len(xs)-1].Pos != c.Right {
			t.Errorf("%s: x ticks %v do not run from 0 at the left edge to the right edge", name, xs)
		}
		// The last tick's value, read back from its position, covers the span.
		lastX := 0.0
		for _, s := range c.Series {
			for _, p := range strings.Fields(s.Points) {
				x, _ := strconv.ParseFloat(strings.Split(p, ",")[0], 64)
				lastX = max(lastX, x)
			}
		}
		if lastX > c.Right+0.1 || lastX < c.Left+c.PlotWidth/2 {
			t.Errorf("%s: the lines end at x=%g of the plot's %g…%g", name, lastX, c.Left, c.Right)
		}
		if len(ys) < 2 || ys[0].Label != "0" || ys[len(ys)-1].Pos > c.Top+0.1 {
			t.Errorf("%s: y ticks %v", name, ys)
		}
		if top, _ := strconv.Atoi(ys[len(ys)-1].Label); top < tc.devices {
			t.Errorf("%s: the top y tick %d is below the %d devices", name, top, tc.devices)
		}
		seen := map[string]bool{}
		for i, tk := range xs {
			if seen[tk.Label] {
				t.Errorf("%s: x tick label %q twice: %v", name, tk.Label, xs)
			}
			seen[tk.Label] = true
			if i > 1 && (tk.Pos-xs[i-1].Pos)-(xs[1].Pos-xs[0].Pos) > 0.01 {
				t.Errorf("%s: uneven x ticks %v", name, xs)
			}
		}
	}
	if got := shortDuration(1500 * time.Millisecond); got != "1.5 s" {
		t.Errorf("1.5 s is shown as %q", got)
	}
	if got := shortDuration(200 * time.Millisecond); got != "200 ms" {
		t.Errorf("200 ms is shown as %q", got)
	}
}
