package console

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet/rollout"
)

// Charts are SVG drawn by templates/charts.html from the geometry computed
// here, in viewBox units; colours come from CSS classes (console.css), so
// no inline style is needed. Every chart has a text summary (aria-label)
// for screen readers, and its labels are template text, escaped like any
// other.

// segment is one coloured part of a stacked bar, in percent of its width.
type segment struct {
	Class string // CSS class: s-succeeded, s-failed, s-progress, s-pending
	X, W  float64
	Title string
}

// stackBar is a horizontal bar split by device state.
type stackBar struct {
	Segs  []segment
	Label string // text summary
}

// progress counts a set of rollout devices by outcome.
type progress struct {
	Total, Succeeded, Failed, InProgress, Pending int
}

func (p *progress) add(s api.DeviceState) {
	p.Total++
	switch {
	case s == api.DeviceSucceeded:
		p.Succeeded++
	case s.Finished():
		p.Failed++
	case s.InProgress():
		p.InProgress++
	default:
		p.Pending++
	}
}

// Done is the finished share, in percent.
func (p progress) Done() float64 {
	if p.Total == 0 {
		return 0
	}
	return 100 * float64(p.Succeeded+p.Failed) / float64(p.Total)
}

// bar draws p as a stacked bar.
func (p progress) bar() *stackBar {
	b := &stackBar{Label: fmt.Sprintf("%d of %d succeeded, %d failed, %d in progress, %d pending",
		p.Succeeded, p.Total, p.Failed, p.InProgress, p.Pending)}
	if p.Total == 0 {
		return b
	}
	x := 0.0
	for _, s := range []struct {
		class, what string
		n           int
	}{{"s-succeeded", "succeeded", p.Succeeded}, {"s-failed", "failed", p.Failed}, {"s-progress", "in progress", p.InProgress}, {"s-pending", "pending", p.Pending}} {
		if s.n == 0 {
			continue
		}
		w := 100 * float64(s.n) / float64(p.Total)
		b.Segs = append(b.Segs, segment{Class: s.class, X: x, W: w, Title: fmt.Sprintf("%d %s", s.n, s.what)})
		x += w
	}
	return b
}

// barRow is one bar of a bar chart.
type barRow struct {
	Label string // shown (shortened)
	Full  string // the whole label, in the bar's title
	Y     float64
	W     float64 // bar length in viewBox units
	Value string  // count and share, right of the bar
	VX    float64 // where Value starts
}

// barChart is a horizontal bar chart (the class distribution).
type barChart struct {
	Width, Height float64
	LabelW        float64 // width of the label column
	BarH          float64
	Rows          []barRow
	Summary       string
	Note          string // what the figures are
}

// classCounts are a device's latest class counts, the classes its report
// left out (a model of more classes than a report names) under
// api.HealthOther, as the health history counts them.
func classCounts(d *api.Device) map[string]uint64 {
	o := d.CountsOther
	if o == nil || o.Predictions == 0 {
		return d.Counts
	}
	counts := make(map[string]uint64, len(d.Counts)+1)
	for k, v := range d.Counts {
		counts[k] = v
	}
	counts[api.HealthOther] += o.Predictions
	return counts
}

// classChart draws per-class prediction counts, largest first; nil if
// there are none.
func classChart(counts map[string]uint64, note string) *barChart {
	type kv struct {
		k string
		v uint64
	}
	var rows []kv
	var total uint64
	for k, v := range counts {
		rows = append(rows, kv{k, v})
		total += v
	}
	if len(rows) == 0 || total == 0 {
		return nil
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].v != rows[j].v {
			return rows[i].v > rows[j].v
		}
		return rows[i].k < rows[j].k
	})
	const maxRows = 12
	if len(rows) > maxRows { // the rest in one bar
		var rest uint64
		for _, r := range rows[maxRows-1:] {
			rest += r.v
		}
		rows = append(rows[:maxRows-1], kv{fmt.Sprintf("%d other classes", len(rows)-maxRows+1), rest})
	}
	c := &barChart{Width: 640, LabelW: 170, BarH: 22, Note: note}
	c.Height = float64(len(rows))*(c.BarH+8) + 8
	plot := c.Width - c.LabelW - 130
	var parts []string
	for i, r := range rows {
		w := plot * float64(r.v) / float64(rows[0].v)
		pct := 100 * float64(r.v) / float64(total)
		c.Rows = append(c.Rows, barRow{Label: shorten(r.k, 22), Full: r.k, Y: 8 + float64(i)*(c.BarH+8), W: math.Max(w, 1),
			Value: fmt.Sprintf("%s (%.1f%%)", thousands(r.v), pct), VX: c.LabelW + math.Max(w, 1) + 6})
		parts = append(parts, fmt.Sprintf("%s %.1f%%", r.k, pct))
	}
	c.Summary = "Predictions by class: " + strings.Join(parts, ", ")
	return c
}

// shorten cuts s to at most n runes, with an ellipsis.
func shorten(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// thousands formats n with thin groups: 12,345.
func thousands(n uint64) string {
	s := strconv.FormatUint(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// tick is one axis label.
type tick struct {
	Pos   float64
	Label string
}

// series is one line of a line chart.
type series struct {
	Class  string
	Name   string
	Points string // "x,y x,y …" in viewBox units
	// Gaps, when set, are drawn instead of Points: the line's pieces,
	// broken where it has no value (a minute whose every window was
	// unknown has no confidence of answered windows).
	Pieces []string
	Last   int // the final value
	// KeyX, KeyY place its legend entry (layoutLegend).
	KeyX, KeyY float64
}

// marker is a vertical line with a label (a phase's start).
type marker struct {
	X     float64
	Label string
}

// lineChart is a step chart over time.
type lineChart struct {
	Width, Height          float64
	Left, Right, Top, Bot  float64 // plot area edges
	Series                 []series
	XTicks, YTicks         []tick
	Markers                []marker
	Summary                string
	PlotWidth, PlotHeight  float64
	LegendY                float64
	XAxisLabel, YAxisLabel string
	Caption                string     // what the chart shows, under it
	Views                  []viewLink // other spans of the same chart, links above it
}

// viewLink is one span a chart can show (the health charts' last hour
// and last 24 hours).
type viewLink struct {
	Label, URL string
	Current    bool
}

// layoutLegend places the series' legend entries below the x axis label,
// three to a row, and makes the chart tall enough for them.
func (c *lineChart) layoutLegend() {
	const perRow, colW, rowH = 3, 210, 16
	c.LegendY = c.Bot + 48
	for i := range c.Series {
		c.Series[i].KeyX = c.Left + float64(i%perRow)*colW
		c.Series[i].KeyY = c.LegendY + float64(i/perRow)*rowH
	}
	if n := len(c.Series); n > 0 {
		c.Height = max(c.Height, c.LegendY+float64((n-1)/perRow)*rowH+12)
	}
}

// progressChart draws a rollout's progress over time from its devices'
// timestamps: when each was (last) notified, and when each finished,
// succeeded or not. nil before anything happened.
func progressChart(r *rollout.Rollout, now time.Time) *lineChart {
	start, end := r.Started, now
	if !r.Finished.IsZero() {
		end = r.Finished
	}
	type ev struct {
		t    time.Time
		kind int // 0 notified, 1 succeeded, 2 failed
	}
	var evs []ev
	for _, id := range r.Order {
		d := r.Devices[id]
		if !d.NotifiedAt.IsZero() {
			evs = append(evs, ev{d.NotifiedAt, 0})
		}
		if d.State.Finished() && !d.UpdatedAt.IsZero() {
			k := 1
			if d.State != api.DeviceSucceeded {
				k = 2
			}
			evs = append(evs, ev{d.UpdatedAt, k})
		}
	}
	if len(evs) == 0 {
		return nil
	}
	sort.Slice(evs, func(i, j int) bool { return evs[i].t.Before(evs[j].t) })
	if last := evs[len(evs)-1].t; last.After(end) {
		end = last
	}
	if first := evs[0].t; first.Before(start) {
		start = first
	}
	// The axes end at their last tick, at or past the data: the lines fill
	// the plot and every point lies within labelled ticks.
	xTicks := niceSteps(end.Sub(start))
	span := xTicks[len(xTicks)-1]
	n := len(r.Order)
	yTicks := niceCounts(n)
	top := yTicks[len(yTicks)-1]
	c := &lineChart{Width: 640, Height: 260, Left: 58, Right: 624, Top: 12, Bot: 200,
		XAxisLabel: "time since the rollout started", YAxisLabel: "devices",
		Caption: "Devices over time, from each device's latest attempt: when it was notified, and when it finished."}
	c.PlotWidth, c.PlotHeight = c.Right-c.Left, c.Bot-c.Top
	x := func(t time.Time) float64 { return c.Left + c.PlotWidth*float64(t.Sub(start))/float64(span) }
	y := func(v int) float64 { return c.Bot - c.PlotHeight*float64(v)/float64(top) }

	names := []struct{ class, name string }{{"l-notified", "notified"}, {"l-succeeded", "succeeded"}, {"l-failed", "failed"}}
	for k, nm := range names {
		v := 0
		pts := []string{pt(c.Left, y(0))}
		for _, e := range evs {
			if e.kind != k {
				continue
			}
			px := x(e.t)
			pts = append(pts, pt(px, y(v)))
			v++
			pts = append(pts, pt(px, y(v)))
		}
		pts = append(pts, pt(x(end), y(v)))
		c.Series = append(c.Series, series{Class: nm.class, Name: nm.name, Points: strings.Join(pts, " "), Last: v})
	}
	for _, s := range xTicks {
		c.XTicks = append(c.XTicks, tick{Pos: c.Left + c.PlotWidth*float64(s)/float64(span), Label: shortDuration(s)})
	}
	for _, v := range yTicks {
		c.YTicks = append(c.YTicks, tick{Pos: y(v), Label: strconv.Itoa(v)})
	}
	// Phase starts: when the first device of each later phase was notified.
	prev := 0
	for i := range r.Pace.Phases {
		target := r.PhaseTarget(i)
		if i > 0 && target > prev {
			var first time.Time
			for _, id := range r.Order[prev:target] {
				if t := r.Devices[id].NotifiedAt; !t.IsZero() && (first.IsZero() || t.Before(first)) {
					first = t
				}
			}
			if !first.IsZero() {
				c.Markers = append(c.Markers, marker{X: x(first), Label: fmt.Sprintf("phase %d", i+1)})
			}
		}
		prev = target
	}
	c.layoutLegend()
	c.Summary = fmt.Sprintf("Over %s: %d of %d devices notified, %d succeeded, %d failed",
		spanWords(end.Sub(start)), c.Series[0].Last, n, c.Series[1].Last, c.Series[2].Last)
	return c
}

func pt(x, y float64) string {
	return strconv.FormatFloat(x, 'f', 1, 64) + "," + strconv.FormatFloat(y, 'f', 1, 64)
}

// niceSteps returns x ticks at a round interval from 0 to the first tick
// at or past span: at least two intervals, at most six.
func niceSteps(span time.Duration) []time.Duration {
	steps := []time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 50 * time.Millisecond,
		100 * time.Millisecond, 200 * time.Millisecond, 500 * time.Millisecond,
		time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second,
		time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute,
		time.Hour, 2 * time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour, 48 * time.Hour, 7 * 24 * time.Hour}
	span = max(span, 2*steps[0])
	step := steps[len(steps)-1]
	for _, s := range steps {
		if (span+s-1)/s <= 6 {
			step = s
			break
		}
	}
	n := min(int((span+step-1)/step), 50) // weeks-long rollouts: at most 50 ticks
	out := make([]time.Duration, 0, n+1)
	for i := range n + 1 {
		out = append(out, time.Duration(i)*step)
	}
	return out
}

// niceCounts returns y ticks at a round interval from 0 to the first tick
// at or above n (at least 1).
func niceCounts(n int) []int {
	n = max(n, 1)
	step := 1
	for _, s := range []int{1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000, 2500, 5000, 10000, 20000, 50000, 100000, 200000, 500000, 1000000} {
		step = s
		if (n+s-1)/s <= 5 {
			break
		}
	}
	var out []int
	for v := 0; len(out) < 50; v += step {
		out = append(out, v)
		if v >= n {
			break
		}
	}
	return out
}

// spanWords says how long a span was, for a summary.
func spanWords(d time.Duration) string {
	if d < time.Second {
		return "less than a second"
	}
	return shortDuration(d)
}

// shortDuration formats an axis offset: 0, 45 s, 2 min, 1.5 h, 3 d.
func shortDuration(d time.Duration) string {
	switch {
	case d <= 0:
		return "0"
	case d < time.Second:
		return fmt.Sprintf("%d ms", d.Milliseconds())
	case d < time.Minute:
		if d%time.Second == 0 {
			return fmt.Sprintf("%d s", int(d/time.Second))
		}
		return fmt.Sprintf("%.1f s", d.Seconds())
	case d < time.Hour:
		m := d.Minutes()
		if m == math.Trunc(m) {
			return fmt.Sprintf("%d min", int(m))
		}
		return fmt.Sprintf("%.1f min", m)
	case d < 48*time.Hour:
		h := d.Hours()
		if h == math.Trunc(h) {
			return fmt.Sprintf("%d h", int(h))
		}
		return fmt.Sprintf("%.1f h", h)
	}
	return fmt.Sprintf("%.0f d", d.Hours()/24)
}
