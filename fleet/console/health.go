package console

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet"
)

// healthChart draws model health over the last 24 hours by minute, or by
// hour (api.HealthPoint of a device's, a rollout's devices', the fleet's
// history): the share of the calibrated windows reported unknown and
// their mean confidence, percent, at each period that had any; the
// highest drift score (×100) at each period that reported one; and the
// agreement with a shadow candidate, percent, at each period with a
// shadow report. whose says whose windows they are, for the summary. nil
// when no period has any of these.
func healthChart(points []api.HealthPoint, now time.Time, byHour bool, whose string) *lineChart {
	end := now.UTC().Truncate(time.Minute).Add(time.Minute)
	start := end.Add(-24 * time.Hour)
	period := "minute"
	if byHour {
		period = "hour"
	}
	c := &lineChart{Width: 640, Height: 260, Left: 58, Right: 624, Top: 12, Bot: 200,
		XAxisLabel: "the last 24 hours (UTC), one point a" + map[bool]string{false: " ", true: "n "}[byHour] + period, YAxisLabel: "percent",
		Caption: "Model health of " + whose + " by " + period + ": unknown share and mean confidence of the calibrated windows, the highest drift score (×100), agreement with a shadow candidate."}
	c.PlotWidth, c.PlotHeight = c.Right-c.Left, c.Bot-c.Top
	x := func(t int64) float64 {
		return c.Left + c.PlotWidth*float64(time.Unix(t, 0).Sub(start))/float64(end.Sub(start))
	}
	y := func(v float64) float64 { return c.Bot - c.PlotHeight*min(max(v, 0), 100)/100 }
	type line struct {
		class, name string
		value       func(p *api.HealthPoint) (float64, bool)
		pts         []string
		last        float64
	}
	lines := []*line{
		{class: "l-failed", name: "unknown, % of windows", value: func(p *api.HealthPoint) (float64, bool) {
			u, ok := p.UnknownRate()
			return 100 * u, ok
		}},
		{class: "l-succeeded", name: "mean confidence, %", value: func(p *api.HealthPoint) (float64, bool) {
			m, ok := p.MeanConfidence()
			return 100 * m, ok
		}},
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
			if v, ok := l.value(p); ok {
				l.pts = append(l.pts, pt(x(p.Time), y(v)))
				l.last = v
			}
		}
	}
	var said []string
	for _, l := range lines {
		switch len(l.pts) {
		case 0:
			continue
		case 1: // a lone minute: a zero-length line, drawn as a dot by its round cap
			l.pts = append(l.pts, l.pts[0])
		}
		c.Series = append(c.Series, series{Class: l.class, Name: l.name, Points: strings.Join(l.pts, " "), Last: int(math.Round(l.last))})
		said = append(said, fmt.Sprintf("%s %.0f", l.name, l.last))
	}
	if len(c.Series) == 0 {
		return nil
	}
	for k := 0; k <= 6; k++ {
		t := start.Add(time.Duration(k) * 4 * time.Hour)
		c.XTicks = append(c.XTicks, tick{Pos: x(t.Unix()), Label: t.Format("15:04")})
	}
	for v := 0; v <= 100; v += 25 {
		c.YTicks = append(c.YTicks, tick{Pos: y(float64(v)), Label: fmt.Sprintf("%d%%", v)})
	}
	c.layoutLegend()
	c.Summary = fmt.Sprintf("Model health of %s over the last 24 hours: ", whose)
	if windows > 0 {
		c.Summary += fmt.Sprintf("%s of %s calibrated windows unknown (%.1f%%); ", thousands(unknown), thousands(windows), 100*float64(unknown)/float64(windows))
	}
	c.Summary += "at the latest " + period + " reported, " + strings.Join(said, ", ")
	return c
}

// minuteChartDevices is the most devices whose summed health the console
// draws by minute; beyond, by hour. Reading a device's last day by minute
// decodes up to ~200 KB of JSON, by hour up to 7.2 KB.
const minuteChartDevices = 50

// groupHealth draws the summed health of devices ids over the last 24
// hours (fleet.RecentHealth) as healthChart does, by minute for up to
// minuteChartDevices devices, by hour beyond; beyond
// api.MaxGroupHealthDevices it draws none and says why, and a failed read
// says so.
func (c *Console) groupHealth(ids []string, whose string) (*lineChart, string) {
	if len(ids) > api.MaxGroupHealthDevices {
		return nil, fmt.Sprintf("%d devices: the console draws the model health of at most %d; use GET /v1/health?selector= or tritctl devices health --selector for a group.", len(ids), api.MaxGroupHealthDevices)
	}
	byMinute := len(ids) <= minuteChartDevices
	pts, err := fleet.RecentHealth(c.db, ids, c.opt.Now(), byMinute)
	if err != nil {
		return nil, "The model health history could not be read: " + err.Error()
	}
	return healthChart(pts, c.opt.Now(), !byMinute, whose), ""
}
