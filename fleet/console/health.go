package console

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/trit-iot/trit/api"
)

// healthChart draws a device's last 24 hours by minute (api.DeviceHealth):
// the share of its windows reported unknown and their mean calibrated
// confidence, percent, at each minute with calibrated windows. nil when
// no minute had any (no calibrated model reported).
func healthChart(h *api.DeviceHealth, now time.Time) *lineChart {
	type pt2 struct {
		t       time.Time
		unknown float64
		conf    float64
	}
	var pts []pt2
	var windows, unknown uint64
	for i := range h.Minutes {
		p := &h.Minutes[i]
		u, ok := p.UnknownRate()
		if !ok {
			continue
		}
		c, _ := p.MeanConfidence()
		pts = append(pts, pt2{time.Unix(p.Time, 0), 100 * u, 100 * c})
		windows, unknown = windows+p.Windows, unknown+p.Unknown
	}
	if len(pts) == 0 {
		return nil
	}
	end := now.UTC().Truncate(time.Minute).Add(time.Minute)
	start := end.Add(-24 * time.Hour)
	c := &lineChart{Width: 640, Height: 260, Left: 58, Right: 624, Top: 12, Bot: 200,
		XAxisLabel: "the last 24 hours (UTC), one point a minute", YAxisLabel: "percent of windows"}
	c.PlotWidth, c.PlotHeight = c.Right-c.Left, c.Bot-c.Top
	c.LegendY = c.Bot + 48
	x := func(t time.Time) float64 { return c.Left + c.PlotWidth*float64(t.Sub(start))/float64(end.Sub(start)) }
	y := func(v float64) float64 { return c.Bot - c.PlotHeight*v/100 }
	var up, cp []string
	for _, p := range pts {
		up = append(up, pt(x(p.t), y(p.unknown)))
		cp = append(cp, pt(x(p.t), y(p.conf)))
	}
	last := pts[len(pts)-1]
	c.Series = []series{
		{Class: "l-failed", Name: "unknown, % of the minute's windows", Points: strings.Join(up, " "), Last: int(math.Round(last.unknown))},
		{Class: "l-succeeded", Name: "mean confidence, %", Points: strings.Join(cp, " "), Last: int(math.Round(last.conf))},
	}
	for k := 0; k <= 6; k++ {
		t := start.Add(time.Duration(k) * 4 * time.Hour)
		c.XTicks = append(c.XTicks, tick{Pos: x(t), Label: t.Format("15:04")})
	}
	for v := 0; v <= 100; v += 25 {
		c.YTicks = append(c.YTicks, tick{Pos: y(float64(v)), Label: fmt.Sprintf("%d%%", v)})
	}
	c.Summary = fmt.Sprintf("Over the last 24 hours: %d minutes reported, %s of %s calibrated windows unknown (%.1f%%); the last minute %.0f%% unknown, mean confidence %.0f%%",
		len(pts), thousands(unknown), thousands(windows), 100*float64(unknown)/float64(windows), last.unknown, last.conf)
	return c
}
