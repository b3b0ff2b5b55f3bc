package benchmark

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// The figures' look: 800×560 pixels, the legend in a column right of the
// data, trit in warm colours with thick lines and everything else in
// cool or grey ones, and log axes with labelled 1-2-5 (or power-of-two
// byte) ticks, all in one number format.

const (
	figWidth  = 8 * vg.Inch
	figHeight = 5.6 * vg.Inch
	figDPI    = 100
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

func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = vg.Points(14)
	p.X.Label.Text = x
	p.Y.Label.Text = y
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font.Size = vg.Points(12)
		a.Tick.Label.Font.Size = vg.Points(11)
	}
	p.Legend.TextStyle.Font.Size = vg.Points(11)
	p.Y.Tick.Marker = linearTicks{}
	p.Add(plotter.NewGrid())
	return p
}

// savePlot writes p as an 800×560 PNG with its legend (if any) in a column
// right of the plot, away from the data.
func savePlot(p *plot.Plot, path string) error {
	return savePlotSize(p, path, figWidth, figHeight)
}

// savePlotSize is savePlot at another size.
func savePlotSize(p *plot.Plot, path string, w, h vg.Length) error {
	c := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(figDPI))
	dc := draw.New(c)
	leg := p.Legend
	p.Legend = plot.NewLegend()
	plotArea := dc
	if len(legendEntries(&leg)) > 0 {
		// Rectangle measures the text wider than it is drawn at this DPI:
		// the legend column takes at most 30% of the width.
		r := leg.Rectangle(dc)
		lw := min(r.Max.X-r.Min.X, 0.3*w) + vg.Points(16)
		plotArea = draw.Crop(dc, 0, -lw, 0, 0)
		legArea := draw.Crop(dc, dc.Max.X-dc.Min.X-lw+vg.Points(8), 0, 0, -vg.Points(30))
		leg.Top, leg.Left = true, true
		leg.Draw(legArea)
	}
	p.Draw(plotArea)
	p.Legend = leg
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if _, err := (vgimg.PngCanvas{Canvas: c}).WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return f.Close()
}

// legendEntries reports whether l has entries (Legend keeps them private):
// its rectangle has a height.
func legendEntries(l *plot.Legend) []struct{} {
	c := draw.New(vgimg.New(figWidth, figHeight))
	if r := l.Rectangle(c); r.Max.Y-r.Min.Y > 0 {
		return []struct{}{{}}
	}
	return nil
}

// addLine adds a line with points; trit's series are drawn thicker with
// larger marks.
func addLine(p *plot.Plot, name, method string, pts plotter.XYs) error {
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
	p.Legend.Add(name, l, s)
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

// linearTicks is gonum's default ticks with number's format.
type linearTicks struct{}

func (linearTicks) Ticks(min, max float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(min, max)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = number(ts[i].Value)
		}
	}
	return ts
}

// logTicks labels 1, 2 and 5 times each power of ten within the range
// when it spans at most three decades, else the powers of ten alone
// (minor ticks between), so a log axis always has several labels and they
// never overlap. Labels use SI suffixes: 500, 2k, 10k, 1M.
type logTicks struct{}

func (logTicks) Ticks(min, max float64) []plot.Tick {
	var ts []plot.Tick
	wide := math.Log10(max/min) > 3
	for e := math.Floor(math.Log10(min)); e <= math.Ceil(math.Log10(max)); e++ {
		base := math.Pow(10, e)
		for m := 1; m < 10; m++ {
			v := float64(m) * base
			if v < min*(1-1e-9) || v > max*(1+1e-9) {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || !wide && (m == 2 || m == 5) {
				t.Label = siNumber(v)
			}
			ts = append(ts, t)
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
func logX(p *plot.Plot, t plot.Ticker) {
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = t
}
