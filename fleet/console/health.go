package console

import (
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet/inventory"
)

// Health chart spans: the last hour (by minute) and the last 24 hours
// (by minute, or by hour for many devices).
const (
	spanHour = time.Hour
	spanDay  = 24 * time.Hour
)

// healthSpan is the span the request asks for (?health=24h), the last
// hour by default: a model gone wrong a few minutes ago must not be a
// pixel at the right edge of a day.
func healthSpan(r *http.Request) time.Duration {
	if r.URL.Query().Get("health") == "24h" {
		return spanDay
	}
	return spanHour
}

// healthViews are the links between a health chart's spans on the page
// at r (its other query parameters kept).
func healthViews(r *http.Request, span time.Duration) []viewLink {
	link := func(v string) string {
		q := r.URL.Query()
		q.Del("part")
		q.Set("health", v)
		return r.URL.Path + "?" + q.Encode() + "#h-health"
	}
	return []viewLink{{Label: "the last hour", URL: link("1h"), Current: span == spanHour},
		{Label: "the last 24 hours", URL: link("24h"), Current: span == spanDay}}
}

// healthQuery is r's health parameter for a live region's URL ("" for
// the default).
func healthQuery(r *http.Request) string {
	if healthSpan(r) == spanDay {
		return "health=24h"
	}
	return ""
}

// healthChart draws model health over span (the last hour or 24 hours)
// by minute, or by hour (api.HealthPoint of a device's, a rollout's
// devices', the fleet's history): the share of the calibrated windows
// reported unknown, percent; the mean confidence of the windows the model
// answered (not reported unknown), percent, at each period that had any —
// a period whose every window was unknown breaks the line, as a model
// that answers nothing has no confidence to show; the highest drift score
// (×100) at each period that reported one; and the agreement with a
// shadow candidate, percent, at each period with a shadow report. whose
// says whose windows they are, for the summary. nil when no period has
// any of these.
func healthChart(points []api.HealthPoint, now time.Time, byHour bool, whose string, span time.Duration) *lineChart {
	if byHour {
		span = spanDay
	}
	end := now.UTC().Truncate(time.Minute).Add(time.Minute)
	start := end.Add(-span)
	period := "minute"
	if byHour {
		period = "hour"
	}
	when := "the last 24 hours"
	if span == spanHour {
		when = "the last hour"
	}
	c := &lineChart{Width: 640, Height: 260, Left: 58, Right: 624, Top: 12, Bot: 200,
		XAxisLabel: when + " (UTC), one point a" + map[bool]string{false: " ", true: "n "}[byHour] + period, YAxisLabel: "percent",
		Caption: "Model health of " + whose + " by " + period + ": unknown share of the calibrated windows, mean confidence of the windows answered (not unknown; none when every window was unknown), the highest drift score (×100), agreement with a shadow candidate."}
	c.PlotWidth, c.PlotHeight = c.Right-c.Left, c.Bot-c.Top
	x := func(t int64) float64 {
		return c.Left + c.PlotWidth*float64(time.Unix(t, 0).Sub(start))/float64(end.Sub(start))
	}
	y := func(v float64) float64 { return c.Bot - c.PlotHeight*min(max(v, 0), 100)/100 }
	type line struct {
		class, name string
		value       func(p *api.HealthPoint) (float64, bool)
		// gap reports a period where the line has no value although the
		// period had windows: the line breaks there.
		gap    func(p *api.HealthPoint) bool
		pieces [][]string
		n      int
		last   float64
	}
	lines := []*line{
		{class: "l-failed", name: "unknown, % of windows", value: func(p *api.HealthPoint) (float64, bool) {
			u, ok := p.UnknownRate()
			return 100 * u, ok
		}},
		{class: "l-succeeded", name: "confidence of answered windows, %", value: func(p *api.HealthPoint) (float64, bool) {
			m, ok := p.AnsweredConfidence()
			return 100 * m, ok
		}, gap: func(p *api.HealthPoint) bool { return p.Windows > 0 && p.Answered == 0 }},
		{class: "l-drift", name: "drift score ×100", value: func(p *api.HealthPoint) (float64, bool) { return 100 * p.Drift, p.Drift > 0 }},
		{class: "l-agreement", name: "shadow agreement, %", value: func(p *api.HealthPoint) (float64, bool) {
			if p.Agreement == nil {
				return 0, false
			}
			return 100 * *p.Agreement, true
		}},
	}
	from := start.Unix()
	var windows, unknown uint64
	for i := range points {
		p := &points[i]
		if p.Time < from {
			continue
		}
		windows, unknown = windows+p.Windows, unknown+p.Unknown
		for _, l := range lines {
			v, ok := l.value(p)
			switch {
			case ok:
				if len(l.pieces) == 0 {
					l.pieces = append(l.pieces, nil)
				}
				l.pieces[len(l.pieces)-1] = append(l.pieces[len(l.pieces)-1], pt(x(p.Time), y(v)))
				l.last, l.n = v, l.n+1
			case l.gap != nil && l.gap(p) && len(l.pieces) > 0 && len(l.pieces[len(l.pieces)-1]) > 0:
				l.pieces = append(l.pieces, nil) // the next value starts a new piece
			}
		}
	}
	var said []string
	for _, l := range lines {
		if l.n == 0 {
			continue
		}
		sr := series{Class: l.class, Name: l.name, Last: int(math.Round(l.last))}
		for _, piece := range l.pieces {
			switch len(piece) {
			case 0:
				continue
			case 1: // a lone period: a zero-length line, drawn as a dot by its round cap
				piece = append(piece, piece[0])
			}
			sr.Pieces = append(sr.Pieces, strings.Join(piece, " "))
		}
		sr.Points = strings.Join(sr.Pieces, " ")
		if len(sr.Pieces) == 1 {
			sr.Pieces = nil
		}
		c.Series = append(c.Series, sr)
		said = append(said, fmt.Sprintf("%s %.0f", l.name, l.last))
	}
	if len(c.Series) == 0 {
		return nil
	}
	step, ticks, format := 4*time.Hour, 6, "15:04"
	if span == spanHour {
		step, ticks = 10*time.Minute, 6
	}
	for k := 0; k <= ticks; k++ {
		t := start.Add(time.Duration(k) * step)
		c.XTicks = append(c.XTicks, tick{Pos: x(t.Unix()), Label: t.Format(format)})
	}
	for v := 0; v <= 100; v += 25 {
		c.YTicks = append(c.YTicks, tick{Pos: y(float64(v)), Label: fmt.Sprintf("%d%%", v)})
	}
	c.layoutLegend()
	c.Summary = fmt.Sprintf("Model health of %s over %s: ", whose, when)
	if windows > 0 {
		c.Summary += fmt.Sprintf("%s of %s calibrated windows unknown (%.1f%%); ", thousands(unknown), thousands(windows), 100*float64(unknown)/float64(windows))
	}
	c.Summary += "at the latest " + period + " reported, " + strings.Join(said, ", ")
	if l := lines[1]; l.n > 0 && len(points) > 0 {
		if p := &points[len(points)-1]; p.Time >= from && l.gap(p) {
			c.Summary += " (the latest " + period + "'s windows were all unknown: no confidence of answered windows)"
		}
	}
	return c
}

// minuteChartDevices is the most devices whose summed health the console
// draws by minute; beyond, by hour. Reading a device's last day by minute
// decodes up to ~200 KB of JSON, by hour up to 7.2 KB.
const minuteChartDevices = 50

// groupHealth draws the summed health of devices ids over the last 24
// hours (inventory.RecentHealth) as healthChart does, by minute for up to
// minuteChartDevices devices, by hour beyond; beyond
// api.MaxGroupHealthDevices it draws none and says why, and a failed read
// says so.
func (c *Console) groupHealth(ids []string, whose string, r *http.Request) (*lineChart, string) {
	if len(ids) > api.MaxGroupHealthDevices {
		return nil, fmt.Sprintf("%d devices: the console draws the model health of at most %d; use GET /v1/health?selector= or tritctl devices health --selector for a group.", len(ids), api.MaxGroupHealthDevices)
	}
	byMinute := len(ids) <= minuteChartDevices
	pts, err := inventory.RecentHealth(c.db, ids, c.opt.Now(), byMinute)
	if err != nil {
		return nil, "The model health history could not be read: " + err.Error()
	}
	span := healthSpan(r)
	ch := healthChart(pts, c.opt.Now(), !byMinute, whose, span)
	if ch != nil && byMinute {
		ch.Views = healthViews(r, span)
	}
	return ch, ""
}
