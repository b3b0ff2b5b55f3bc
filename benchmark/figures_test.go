package benchmark

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// labelled returns the labelled tick values of an axis over its range.
func labelled(a *plot.Axis) []float64 {
	var out []float64
	for _, t := range a.Tick.Marker.Ticks(a.Min, a.Max) {
		if t.Label != "" {
			out = append(out, t.Value)
		}
	}
	return out
}

// isStep125 reports whether s is 1, 2 or 5 times a power of ten.
func isStep125(s float64) bool {
	e := math.Floor(math.Log10(s))
	m := s / math.Pow(10, e)
	for _, want := range []float64{1, 2, 5, 10} {
		if math.Abs(m-want) < 1e-6 {
			return true
		}
	}
	return false
}

// TestLinearTicksRoundSteps: a linear axis is labelled at a 1-2-5 step
// (82, 88, 94 was a step of 6), with at least three labels, none "-0".
func TestLinearTicksRoundSteps(t *testing.T) {
	for _, r := range [][2]float64{{80.8, 95.7}, {79.5, 96.5}, {86.21, 99.76}, {11.35, 97.34}, {-4, 104}, {0, 31}, {0.0315, 0.9}, {83.4, 94.7}} {
		var vals []float64
		for _, tk := range (linearTicks{}).Ticks(r[0], r[1]) {
			if tk.Label != "" {
				vals = append(vals, tk.Value)
				if tk.Label == "-0" {
					t.Errorf("%v: a tick labelled -0", r)
				}
			}
		}
		if len(vals) < 3 {
			t.Errorf("%v: labels at %v", r, vals)
			continue
		}
		step := vals[1] - vals[0]
		for i := 1; i < len(vals); i++ {
			if d := vals[i] - vals[i-1]; math.Abs(d-step) > 1e-9*math.Abs(step) || !isStep125(d) {
				t.Errorf("%v: labels at %v: not a 1-2-5 step", r, vals)
				break
			}
		}
	}
}

// TestAxesFitTheData: after savePlot, every axis of a figure has labelled
// ticks at or past its data on both sides (time_vs_n's last point lay past
// its last tick), and a margin between the outermost data and the frame
// (the top points touched it).
func TestAxesFitTheData(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name   string
		x, y   [2]float64
		setupX func(*figure)
		logY   bool
	}{
		{"acc_vs_p", [2]float64{256, 16384}, [2]float64{80.8, 95.7}, func(f *figure) { logX(f, logTicks{}) }, false},
		{"acc_vs_bytes", [2]float64{1900, 1.7e7}, [2]float64{80.8, 95.7}, func(f *figure) { logX(f, logTicks{}) }, false},
		{"time_vs_n", [2]float64{10000, 464810}, [2]float64{1.0, 220.8}, func(f *figure) { logX(f, logTicks{}) }, true},
		{"peers wall-following", [2]float64{488, 30704}, [2]float64{86.21, 99.76}, func(f *figure) { logX(f, byteTicks{}) }, false},
		{"peers mnist", [2]float64{560, 30488}, [2]float64{11.35, 97.34}, func(f *figure) { logX(f, byteTicks{}) }, false},
		{"init_objective", [2]float64{0, 31}, [2]float64{0.0315, 0.9}, func(*figure) {}, true},
	} {
		f := newPlot(tc.name, "x", "y")
		tc.setupX(f)
		if tc.logY {
			f.Y.Scale, f.Y.Tick.Marker = plot.LogScale{}, logTicks{}
		}
		if err := addLine(f, "trit", "trit", plotter.XYs{{X: tc.x[0], Y: tc.y[0]}, {X: tc.x[1], Y: tc.y[1]}}); err != nil {
			t.Fatal(err)
		}
		if err := savePlot(f, filepath.Join(dir, "f.png")); err != nil {
			t.Fatal(err)
		}
		for _, ax := range []struct {
			name string
			a    *plot.Axis
			data [2]float64
		}{{"x", &f.X, tc.x}, {"y", &f.Y, tc.y}} {
			a, lo, hi := ax.a, ax.data[0], ax.data[1]
			ls := labelled(a)
			if len(ls) < 3 || ls[0] > lo*(1+1e-9) || ls[len(ls)-1] < hi*(1-1e-9) {
				t.Errorf("%s %s: data %g…%g, labels at %v", tc.name, ax.name, lo, hi, ls)
			}
			// The margin, as a share of the axis as drawn.
			norm := func(v float64) float64 { return a.Scale.Normalize(a.Min, a.Max, v) }
			if m := min(norm(lo), 1-norm(hi)); m < 0.02 {
				t.Errorf("%s %s: data %g…%g on an axis %g…%g: only %.1f%% from the frame", tc.name, ax.name, lo, hi, a.Min, a.Max, 100*m)
			}
		}
	}
}

// TestLegendUnderThePlot: acc_vs_bytes's seven entries go in columns under
// the plot, which keeps the figure's whole width (a legend column took a
// third of it), in at most a fifth of its height; every name fits its
// column.
func TestLegendUnderThePlot(t *testing.T) {
	f := newPlot("usps: accuracy against model memory", "bytes", "accuracy")
	names := []string{"trit-ternary (p sweep)", "trit-full (p sweep)", "rfe (p sweep)", "trit-ternary signed bundle",
		"fastfood (p = 2048)", "bjle (p = 2048)", "bcsik (p = 2048)"}
	for i, n := range names {
		if err := addLine(f, n, "rfe", plotter.XYs{{X: 1, Y: float64(i)}, {X: 2, Y: float64(i)}}); err != nil {
			t.Fatal(err)
		}
	}
	lay := f.layout(figWidth)
	if lay.cols < 2 || lay.cols*lay.rows < len(names) || lay.bottom > figHeight/5 {
		t.Fatalf("legend: %d columns × %d rows, %.0f of the figure's %.0f points of height", lay.cols, lay.rows, lay.bottom, figHeight)
	}
	thumb := plot.NewLegend().ThumbnailWidth
	for _, n := range names {
		if w := thumb + f.Legend.TextStyle.Width(n) + vg.Points(6); w > lay.colWidth {
			t.Errorf("%q (%.0f points) does not fit a column of %.0f", n, w, lay.colWidth)
		}
	}
	// Notes wrap to the width.
	f.note("%s", strings.Repeat("a reason why there is no point here, ", 12))
	lay = f.layout(figWidth)
	if len(lay.notes) < 2 {
		t.Fatalf("a long note on %d lines", len(lay.notes))
	}
	for _, l := range lay.notes {
		if noteStyle(f).Width(l) > figWidth {
			t.Errorf("note line wider than the figure: %q", l)
		}
	}
}

// TestPeersFigureSaysWhy: the committed curve (the points of
// docs/BENCHMARKS.md's "Accuracy against bytes") gives a reason for every
// budget at which a method has no point, and the figure says it: mnist's
// trit has none below 8 KiB because its scaler alone takes 3.1 KB.
func TestPeersFigureSaysWhy(t *testing.T) {
	reports, err := readPeersReports("../docs/figures/bench-json/peers-curve.json")
	if err != nil {
		t.Fatal(err)
	}
	var mnist *PeersReport
	for _, r := range reports {
		if r.Dataset == "mnist" {
			mnist = r
		}
		for _, c := range r.Curve {
			if (c.Bytes > 0) == (c.Skipped != "") {
				t.Errorf("%s %s at %d B: a point and a reason, or neither", r.Dataset, c.Method, c.Budget)
			}
		}
	}
	if mnist == nil {
		t.Fatal("no mnist curve")
	}
	var skipped []PeerResult
	for _, c := range mnist.Curve {
		if c.Method == "trit" && c.Skipped != "" {
			skipped = append(skipped, c)
		}
	}
	want := "trit: no model at 512 B, 1 KiB, 2 KiB or 4 KiB: its float16 scaler alone is 3,137 B"
	if got := skippedNote("trit", skipped); got != want {
		t.Errorf("note %q, want %q", got, want)
	}
	dir := t.TempDir()
	paths, err := plotPeersCurves(dir, reports)
	if err != nil || len(paths) != 3 {
		t.Fatalf("%v %v", paths, err)
	}
}

// TestFiguresFromCommittedJSON redraws the figures docs/figures holds from
// the JSON beside them (make figures, without the two that need a
// dataset): they draw, and the redraw is the same picture twice.
func TestFiguresFromCommittedJSON(t *testing.T) {
	j := "../docs/figures/bench-json/"
	args := func(out string) []string {
		return []string{"figures", "--from", j + "usps.json," + j + "covtype-n10000.json," + j + "covtype-n50000.json," + j + "covtype-n100000.json," + j + "covtype.json",
			"--sweep-from", j + "sweep-usps.json", "--peers", j + "peers-curve.json", "--only", "p,bytes,time,circles,peers", "--out", out}
	}
	a, b := t.TempDir(), t.TempDir()
	for _, out := range []string{a, b} {
		var stdout, stderr bytes.Buffer
		if code := run(&env{stdout: &stdout, stderr: &stderr}, args(out)); code != 0 {
			t.Fatalf("trit-bench figures: exit %d: %s", code, stderr.String())
		}
	}
	want := []string{"acc_vs_bytes.png", "acc_vs_p.png", "peers_curve_mnist.png", "peers_curve_usps.png", "peers_curve_wall-following.png",
		"time_vs_n.png", "two_circles_binary.png", "two_circles_ternary.png"}
	entries, _ := os.ReadDir(a)
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
		x, _ := os.ReadFile(filepath.Join(a, e.Name()))
		y, _ := os.ReadFile(filepath.Join(b, e.Name()))
		if !bytes.Equal(x, y) {
			t.Errorf("%s differs between two draws", e.Name())
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("drew %v, want %v", got, want)
	}
}
