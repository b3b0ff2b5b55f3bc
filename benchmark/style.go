package benchmark

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// The figures' look: 800×560 pixels; the data get the whole width, with
// the legend in columns under the plot and, under it, notes on what the
// figure leaves out and why; trit in warm colours with thick lines and
// everything else in cool or grey ones; axes that end at a labelled round
// tick at or past the data, with a margin so no point touches the frame;
// linear ticks at 1-2-5 steps, log ticks at 1-2-5 values (or powers of
// two for bytes), all in one number format.

const (
	figWidth  = 8 * vg.Inch
	figHeight = 5.6 * vg.Inch
	figDPI    = 100
	// axisMargin is the room left beyond the outer ticks, as a share of
	// the axis: 4% of the plot's height keeps a 4-point mark off the frame.
	axisMargin = 0.04
)

// methodColors: trit's series red and orange; the paper's baselines and
// the peers in blues, greens, purple and grey.
var methodColors = map[string]color.Color{
	"trit-ternary": color.RGBA{0xd6, 0x27, 0x28, 0xff}, // red
	"trit":         color.RGBA{0xd6, 0x27, 0x28, 0xff},
	"trit-full":    color.RGBA{0xff, 0x7f, 0x0e, 0xff}, // orange
	"rfe":          color.RGBA{0x1f, 0x77, 0xb4, 0xff}, // blue
	"fastfood":     color.RGBA{0x17, 0xbe, 0xcf, 0xff}, // cyan
	"bjle":         color.RGBA{0x2c, 0xa0, 0x2c, 0xff}, // green
	"bcsik":        color.RGBA{0x94, 0x67, 0xbd, 0xff}, // purple
	"mlp-int8":     color.RGBA{0x1f, 0x77, 0xb4, 0xff}, // blue
	"xgboost":      color.RGBA{0x2c, 0xa0, 0x2c, 0xff}, // green
	"linear-svm":   color.RGBA{0x94, 0x67, 0xbd, 0xff}, // purple
	"rbf-svm":      color.RGBA{0x7f, 0x7f, 0x7f, 0xff}, // grey
}

func isTrit(method string) bool {
	return method == "trit" || method == "trit-ternary" || method == "trit-full"
}

// figure is a plot with its legend entries and notes, which savePlot
// draws under it.
type figure struct {
	*plot.Plot
	entries []legendEntry
	notes   []string // what the figure leaves out and why
	// fixed keeps the axes as the data set them (a heat map fills its
	// own range).
	fixed bool
}

type legendEntry struct {
	name   string
	thumbs []plot.Thumbnailer
}

// legend adds a legend entry.
func (f *figure) legend(name string, thumbs ...plot.Thumbnailer) {
	f.entries = append(f.entries, legendEntry{name, thumbs})
}

// note adds a line under the legend.
func (f *figure) note(format string, args ...any) {
	f.notes = append(f.notes, fmt.Sprintf(format, args...))
}

func newPlot(title, x, y string) *figure {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = vg.Points(14)
	p.X.Label.Text = x
	p.Y.Label.Text = y
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font.Size = vg.Points(12)
		a.Tick.Label.Font.Size = vg.Points(11)
		a.Tick.Marker = linearTicks{}
	}
	p.Legend.TextStyle.Font.Size = vg.Points(11)
	p.Add(plotter.NewGrid())
	return &figure{Plot: p}
}

// savePlot writes f as an 800×560 PNG.
func savePlot(f *figure, path string) error {
	return savePlotSize(f, path, figWidth, figHeight)
}

// savePlotSize is savePlot at another size: the axes fitted to the data,
// the plot above, the legend in columns under it, the notes under that.
func savePlotSize(f *figure, path string, w, h vg.Length) error {
	c := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(figDPI))
	dc := draw.New(c)
	if !f.fixed {
		fitAxis(&f.X)
		fitAxis(&f.Y)
	}
	lay := f.layout(w)
	f.Plot.Draw(draw.Crop(dc, 0, 0, lay.bottom, -vg.Points(4))) // the title off the top edge
	pad := vg.Points(8)
	for i, e := range f.entries {
		row, col := i/lay.cols, i%lay.cols
		x := dc.Min.X + pad + vg.Length(col)*lay.colWidth
		top := dc.Min.Y + lay.bottom - pad/2 - vg.Length(row)*lay.line
		cell := draw.Canvas{Canvas: dc.Canvas, Rectangle: vg.Rectangle{Min: vg.Point{X: x, Y: top - lay.line}, Max: vg.Point{X: x + lay.colWidth, Y: top}}}
		leg := plot.NewLegend()
		leg.TextStyle = f.Legend.TextStyle
		leg.Top, leg.Left = true, true
		leg.Add(e.name, e.thumbs...)
		leg.Draw(cell)
	}
	ns := noteStyle(f)
	for i, line := range lay.notes {
		y := dc.Min.Y + lay.bottom - pad/2 - vg.Length(lay.rows)*lay.line - vg.Length(i+1)*lay.noteLine
		dc.FillText(ns, vg.Point{X: dc.Min.X + pad, Y: y + lay.noteLine/4}, line)
	}
	out, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if _, err := (vgimg.PngCanvas{Canvas: c}).WriteTo(out); err != nil {
		out.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return out.Close()
}

// figLayout is where savePlot puts the legend and the notes.
type figLayout struct {
	cols, rows     int
	colWidth       vg.Length
	line, noteLine vg.Length // heights of a legend row and a note line
	notes          []string  // wrapped to the width
	bottom         vg.Length // height under the plot: legend and notes
}

// layout puts the legend entries in as many columns as their widest name
// allows (at most 4), rows filled left to right, and wraps the notes.
func (f *figure) layout(w vg.Length) figLayout {
	pad := vg.Points(8)
	ts := f.Legend.TextStyle
	lay := figLayout{line: ts.Font.Size * 1.5}
	usable := w - 2*pad
	if n := len(f.entries); n > 0 {
		widest := vg.Length(0)
		for _, e := range f.entries {
			widest = max(widest, ts.Width(e.name))
		}
		thumb := plot.NewLegend().ThumbnailWidth
		cell := thumb + vg.Points(6) + widest + vg.Points(18)
		lay.cols = max(1, min(4, n, int(usable/cell)))
		lay.rows = (n + lay.cols - 1) / lay.cols
		lay.cols = (n + lay.rows - 1) / lay.rows // as even as the rows allow
		lay.colWidth = usable / vg.Length(lay.cols)
	}
	ns := noteStyle(f)
	lay.noteLine = ns.Font.Size * 1.45
	for _, n := range f.notes {
		lay.notes = append(lay.notes, wrapText(n, ns, usable)...)
	}
	if lay.rows > 0 || len(lay.notes) > 0 {
		lay.bottom = vg.Length(lay.rows)*lay.line + vg.Length(len(lay.notes))*lay.noteLine + pad
	}
	return lay
}

// noteStyle is the notes' text: smaller than the legend's, grey.
func noteStyle(f *figure) draw.TextStyle {
	ns := f.Legend.TextStyle
	ns.Font.Size = vg.Points(10)
	ns.Color = color.Gray{Y: 0x55}
	ns.XAlign, ns.YAlign = draw.XLeft, draw.YBottom
	return ns
}

// wrapText breaks s into lines no wider than w.
func wrapText(s string, ts draw.TextStyle, w vg.Length) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(s) {
		next := word
		if line != "" {
			next = line + " " + word
		}
		if line != "" && ts.Width(next) > w {
			lines = append(lines, line)
			next = word
		}
		line = next
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}

// fitAxis sets an axis' range from its data's: out to the ticks at or
// past the data (round steps on a linear axis, 1-2-5 values or powers of
// two on a log one), then axisMargin more, so every point lies within
// labelled ticks and none touches the frame.
func fitAxis(a *plot.Axis) {
	lo, hi := a.Min, a.Max
	if math.IsNaN(lo) || math.IsNaN(hi) || math.IsInf(lo, 0) || math.IsInf(hi, 0) || hi < lo {
		return
	}
	if _, ok := a.Scale.(plot.LogScale); ok {
		if lo <= 0 {
			return
		}
		if _, bytes := a.Tick.Marker.(byteTicks); bytes {
			lo, hi = math.Exp2(math.Floor(math.Log2(lo)+1e-9)), math.Exp2(math.Ceil(math.Log2(hi)-1e-9))
		} else {
			lo, hi = grid125(lo, false), grid125(hi, true)
		}
		m := math.Pow(hi/lo, axisMargin)
		if hi == lo {
			m = 1.2
		}
		a.Min, a.Max = lo/m, hi*m
		return
	}
	if _, ok := a.Tick.Marker.(linearTicks); !ok {
		return
	}
	if hi == lo {
		lo, hi = lo-1, hi+1
	}
	step := niceStep(hi - lo)
	lo, hi = math.Floor(lo/step+1e-9)*step, math.Ceil(hi/step-1e-9)*step
	m := axisMargin * (hi - lo)
	a.Min, a.Max = lo-m, hi+m
	a.Tick.Marker = linearTicks{step: step}
}

// niceStep is the 1-2-5 step that cuts span into at most 8 intervals.
func niceStep(span float64) float64 {
	e := math.Floor(math.Log10(span / 8))
	for {
		for _, m := range []float64{1, 2, 5} {
			if s := m * math.Pow(10, e); span/s <= 8+1e-9 {
				return s
			}
		}
		e++
	}
}

// grid125 returns the nearest value of the form {1, 2, 5}·10^k at or
// below v (at or above it when up).
func grid125(v float64, up bool) float64 {
	e := math.Floor(math.Log10(v))
	best := 0.0
	for k := e - 1; k <= e+1; k++ {
		for _, m := range []float64{1, 2, 5} {
			g := m * math.Pow(10, k)
			switch {
			case up && g >= v*(1-1e-9) && (best == 0 || g < best):
				best = g
			case !up && g <= v*(1+1e-9) && g > best:
				best = g
			}
		}
	}
	return best
}

// addLine adds a line with points; trit's series are drawn thicker with
// larger marks.
func addLine(p *figure, name, method string, pts plotter.XYs) error {
	l, s, err := plotter.NewLinePoints(pts)
	if err != nil {
		return err
	}
	c := methodColors[method]
	if c == nil {
		c = color.Black
	}
	l.Color, s.Color = c, c
	l.Width, s.Radius = vg.Points(1.5), vg.Points(3)
	if isTrit(method) {
		l.Width, s.Radius = vg.Points(3), vg.Points(4)
		s.Shape = draw.CircleGlyph{}
	} else {
		s.Shape = draw.BoxGlyph{}
		l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
	}
	p.Add(l, s)
	p.legend(name, l, s)
	return nil
}

// number formats a tick value the same way on every axis: plain digits,
// no exponent, at most three significant decimals.
func number(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// linearTicks labels the multiples of a 1-2-5 step (step; 0: the step
// that cuts the range into at most 8) in number's format.
type linearTicks struct{ step float64 }

func (t linearTicks) Ticks(min, max float64) []plot.Tick {
	if !(max > min) {
		return nil
	}
	step := t.step
	if step <= 0 {
		step = niceStep(max - min)
	}
	decimals := 0 // enough for the step: 0.5 → 1, 0.02 → 2
	if e := int(-math.Floor(math.Log10(step) + 1e-9)); e > 0 {
		decimals = e
	}
	var ts []plot.Tick
	for k := math.Ceil(min/step - 1e-9); k*step <= max+step*1e-9 && len(ts) < 100; k++ {
		v := k * step
		if v == 0 {
			v = 0 // not -0
		}
		ts = append(ts, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', decimals, 64)})
	}
	return ts
}

// logTicks marks 1…9 times each power of ten within the range and labels
// 1, 2 and 5 times it when the range spans at most three decades, else the
// powers of ten alone; the first and last 1-2-5 values in the range are
// labelled either way (fitAxis ends the axis there), so the data lie
// within labels. Labels use SI suffixes: 500, 2k, 10k, 1M.
type logTicks struct{}

func (logTicks) Ticks(min, max float64) []plot.Tick {
	var ts []plot.Tick
	wide := math.Log10(max/min) > 3
	first, last := -1, -1
	for e := math.Floor(math.Log10(min)); e <= math.Ceil(math.Log10(max)); e++ {
		base := math.Pow(10, e)
		for m := 1; m < 10; m++ {
			v := float64(m) * base
			if v < min*(1-1e-9) || v > max*(1+1e-9) {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || m == 2 || m == 5 {
				if first < 0 {
					first = len(ts)
				}
				last = len(ts)
				if m == 1 || !wide {
					t.Label = siNumber(v)
				}
			}
			ts = append(ts, t)
		}
	}
	for _, i := range []int{first, last} {
		if i >= 0 {
			ts[i].Label = siNumber(ts[i].Value)
		}
	}
	return ts
}

// siNumber formats v with an SI suffix from 1000 up: 2k, 10k, 1.5M.
func siNumber(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1e9:
		return number(v/1e9) + "G"
	case a >= 1e6:
		return number(v/1e6) + "M"
	case a >= 1e3:
		return number(v/1e3) + "k"
	}
	return number(v)
}

// byteTicks labels powers of two within the range in bytes and KiB.
type byteTicks struct{}

func (byteTicks) Ticks(min, max float64) []plot.Tick {
	var ts []plot.Tick
	for e := math.Floor(math.Log2(min)); e <= math.Ceil(math.Log2(max)); e++ {
		v := math.Exp2(e)
		if v < min*(1-1e-9) || v > max*(1+1e-9) {
			continue
		}
		ts = append(ts, plot.Tick{Value: v, Label: byteLabel(v)})
	}
	return ts
}

func byteLabel(v float64) string {
	if v < 1024 {
		return number(v) + " B"
	}
	return number(v/1024) + " KiB"
}

// logX makes p's x axis logarithmic with ticks t.
func logX(p *figure, t plot.Ticker) {
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = t
}
