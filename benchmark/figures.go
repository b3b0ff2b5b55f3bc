package benchmark

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/trit-iot/trit/inference"
	"github.com/trit-iot/trit/training"
	"github.com/trit-iot/trit/training/baseline"
	"github.com/trit-iot/trit/training/data"
	"github.com/trit-iot/trit/training/linear"
	"github.com/trit-iot/trit/training/ternary"
)

type figureFlags struct {
	dataDir  string
	dataset  string
	from     string
	out      string
	ps       string
	only     string
	maxIter  int
	seed     uint64
	workers  int
	sweepOut string
	sweepIn  string
	peers    string
}

func newFiguresCmd(e *env) *cobra.Command {
	f := &figureFlags{}
	cmd := &cobra.Command{
		Use:   "figures [flags]",
		Short: "Draw the paper's figures as PNGs from bench results and new runs",
		Long: `Draw, into --out:
  acc_vs_p.png        test accuracy against p for trit-ternary, trit-full and RFE
                      (each refitted at every p with the σ and C its bench row chose at
                      p = 2048; --ps lists the p values)
  acc_vs_bytes.png    accuracy against model bytes (the paper's accounting) for all
                      six methods, plus trit-ternary's real signed bundles
  init_objective.png  trit-ternary's objective per solver step (first weight vector),
                      linear-SVM initialisation against random initialisation
  two_circles_binary.png, two_circles_ternary.png
                      the decision boundary on the two-circles data with binary
                      {-1,+1} and ternary {-1,0,+1} coefficients
  time_vs_n.png       training time against training rows, from bench rows of one
                      dataset at several --train-rows (if --from has them)
  peers_curve_D.png  accuracy against bytes for trit, mlp-int8 and xgboost, one file
                      per dataset D of --peers (JSON written by 'trit-bench peers -o'
                      with --curve); drawn only when --peers is given
  coverage_D.png      accuracy on the most confident test windows against coverage:
                      trit's calibrated confidence and the int8 MLP's softmax, one
                      file per dataset D of --peers whose results have the curve
--from lists JSON files written by 'trit-bench paper --json'; the first three
figures use its rows for --dataset (default usps). Figures go to --out
(default ./figures); docs/figures holds the committed ones.`,
		Args: cobra.NoArgs,
		Example: `  trit-bench figures --from usps.json --out figures
  trit-bench figures --peers peers-curve.json --out docs/figures   # the peers' curves only`,
		RunE: func(cmd *cobra.Command, args []string) error { return runFigures(e, f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.dataDir, "data-dir", defaultDataDir(), "directory of the standard datasets (env TRIT_DATA)")
	fl.StringVar(&f.dataset, "dataset", "usps", "standard dataset of the accuracy figures")
	fl.StringVar(&f.from, "from", "", "comma-separated 'trit-bench paper --json' outputs (needed by p, bytes, init and time)")
	fl.StringVar(&f.peers, "peers", "", "comma-separated 'trit-bench peers -o' outputs with a curve (the peers figure)")
	fl.StringVarP(&f.out, "out", "o", "figures", "directory for the PNG files (docs/figures holds the committed ones: give it explicitly to replace them)")
	fl.StringVar(&f.ps, "ps", "256,512,1024,2048,4096,8192,16384", "p values of acc_vs_p")
	fl.StringVar(&f.only, "only", "", "comma-separated subset: p, bytes, init, circles, time (default all)")
	fl.IntVar(&f.maxIter, "max-iter", 0, "linear SVM passes at most (0: the solver's default)")
	fl.Uint64Var(&f.seed, "seed", 1, "seed")
	fl.IntVar(&f.workers, "workers", 0, "goroutines (0: all cores)")
	fl.StringVar(&f.sweepOut, "sweep-json", "", "also write the p sweep's measurements to this JSON file")
	fl.StringVar(&f.sweepIn, "sweep-from", "", "reuse a p sweep written by --sweep-json instead of refitting")
	return cmd
}

// sweepPoint is one fit of the p sweep.
type sweepPoint struct {
	Method   string  `json:"method"`
	P        int     `json:"p"`
	Sigma    float64 `json:"sigma"`
	C        float64 `json:"c"`
	Accuracy float64 `json:"accuracy"`
	Bytes    int64   `json:"memory_total"`
	Bundle   int     `json:"bundle_bytes,omitempty"`
	TrainSec float64 `json:"train_seconds"`
}

func runFigures(e *env, f *figureFlags) error {
	want := map[string]bool{}
	for _, s := range strings.Split(f.only, ",") {
		if s = strings.TrimSpace(s); s != "" {
			if !slices.Contains([]string{"p", "bytes", "init", "circles", "time", "peers"}, s) {
				return usagef("--only %q: want p, bytes, init, circles, time or peers", s)
			}
			want[s] = true
		}
	}
	all := len(want) == 0
	if all && f.from == "" && f.peers != "" {
		all, want["peers"] = false, true // only the peers figure has its data
	}
	var rows []*benchRow
	for _, path := range strings.Split(f.from, ",") {
		if path = strings.TrimSpace(path); path == "" {
			continue
		}
		rs, err := readBenchRows(path)
		if err != nil {
			return err
		}
		rows = append(rows, rs...)
	}
	needRows := all || want["p"] || want["bytes"] || want["init"] || want["time"]
	if needRows && len(rows) == 0 {
		return usagef("--from is required for the p, bytes, init and time figures")
	}
	if err := os.MkdirAll(f.out, 0o755); err != nil {
		return err
	}
	var ds []*benchRow // rows of --dataset at the table's p
	for _, r := range rows {
		if r.Dataset == f.dataset && (len(ds) == 0 || r.P == ds[0].P) {
			ds = append(ds, r)
		}
	}
	var sweep []sweepPoint
	if all || want["p"] || want["bytes"] {
		if len(ds) == 0 {
			return fmt.Errorf("no bench rows for dataset %s in --from", f.dataset)
		}
		var err error
		if f.sweepIn != "" {
			b, err := os.ReadFile(f.sweepIn)
			if err != nil {
				return err
			}
			if err := json.Unmarshal(b, &sweep); err != nil {
				return fmt.Errorf("%s: not a --sweep-json output: %w", f.sweepIn, err)
			}
		} else if sweep, err = f.sweepP(e, ds); err != nil {
			return err
		}
		if f.sweepOut != "" {
			b, _ := json.MarshalIndent(sweep, "", "  ")
			if err := os.WriteFile(f.sweepOut, append(b, '\n'), 0o644); err != nil {
				return err
			}
		}
	}
	if all || want["p"] {
		if err := plotAccVsP(filepath.Join(f.out, "acc_vs_p.png"), f.dataset, sweep); err != nil {
			return err
		}
	}
	if all || want["bytes"] {
		if err := plotAccVsBytes(filepath.Join(f.out, "acc_vs_bytes.png"), f.dataset, ds, sweep); err != nil {
			return err
		}
	}
	if all || want["init"] {
		if err := f.plotInit(e, filepath.Join(f.out, "init_objective.png"), ds); err != nil {
			return err
		}
	}
	if all || want["circles"] {
		if err := f.plotCircles(e); err != nil {
			return err
		}
	}
	if all || want["time"] {
		if err := plotTimeVsN(e, filepath.Join(f.out, "time_vs_n.png"), rows); err != nil {
			return err
		}
	}
	if want["peers"] || all && f.peers != "" {
		if f.peers == "" {
			return usagef("--peers is required for the peers figure")
		}
		var reports []*PeersReport
		for _, path := range strings.Split(f.peers, ",") {
			if path = strings.TrimSpace(path); path == "" {
				continue
			}
			rs, err := readPeersReports(path)
			if err != nil {
				return err
			}
			reports = append(reports, rs...)
		}
		curves, err := plotPeersCurves(f.out, reports)
		coverage, cerr := plotCoverageCurves(f.out, reports)
		if len(curves) == 0 && len(coverage) == 0 {
			return errors.Join(err, cerr)
		}
	}
	return nil
}

func findRow(rows []*benchRow, m baseline.Method) *benchRow {
	for _, r := range rows {
		if r.Method == m.String() {
			return r
		}
	}
	return nil
}

// sweepP refits trit-ternary, trit-full and RFE at each p with the σ and C
// their bench rows chose.
func (f *figureFlags) sweepP(e *env, rows []*benchRow) ([]sweepPoint, error) {
	var ps []int
	for _, s := range strings.Split(f.ps, ",") {
		p, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || p < 1 {
			return nil, usagef("--ps: %q is not a positive integer", s)
		}
		ps = append(ps, p)
	}
	train, test, err := data.LoadStandard(f.dataDir, f.dataset)
	if err != nil {
		return nil, err
	}
	var out []sweepPoint
	for _, m := range []baseline.Method{baseline.TritTernary, baseline.TritFull, baseline.RFE} {
		r := findRow(rows, m)
		if r == nil {
			fmt.Fprintf(e.stderr, "figures: no %s row for %s; %s left out of the p sweep\n", m, f.dataset, m)
			continue
		}
		for _, p := range ps {
			res, err := baseline.Fit(m, train, &baseline.Config{P: p, Sigma: r.Sigma, C: r.C, MaxIter: f.maxIter, Seed: f.seed, Workers: f.workers})
			if err != nil {
				return nil, fmt.Errorf("%s p=%d: %w", m, p, err)
			}
			acc, err := baseline.Accuracy(res.Classifier, test, f.workers)
			if err != nil {
				return nil, err
			}
			pt := sweepPoint{Method: m.String(), P: p, Sigma: r.Sigma, C: r.C, Accuracy: acc, Bytes: res.Memory.Total(), TrainSec: res.TrainSeconds}
			if res.Spec != nil {
				if pt.Bundle, err = signedBundleSize(res, f.dataset); err != nil {
					return nil, err
				}
			}
			fmt.Fprintf(e.stderr, "figures: %s %s p=%d: %.2f%% (%.1f s)\n", f.dataset, m, p, acc, res.TrainSeconds)
			out = append(out, pt)
		}
	}
	return out, nil
}

func plotAccVsP(path, dataset string, sweep []sweepPoint) error {
	p := newPlot(dataset+": test accuracy against p", "p (embedding dimension, log scale)", "test accuracy (%)")
	logX(p, logTicks{})
	for _, m := range []string{"trit-ternary", "trit-full", "rfe"} {
		var pts plotter.XYs
		for _, s := range sweep {
			if s.Method == m {
				pts = append(pts, plotter.XY{X: float64(s.P), Y: s.Accuracy})
			}
		}
		if len(pts) == 0 {
			continue
		}
		if err := addLine(p, m, m, pts); err != nil {
			return err
		}
	}
	return savePlot(p, path)
}

func plotAccVsBytes(path, dataset string, rows []*benchRow, sweep []sweepPoint) error {
	p := newPlot(dataset+": accuracy against model memory", "bytes (paper's accounting, log scale)", "test accuracy (%)")
	logX(p, logTicks{})
	for _, m := range []string{"trit-ternary", "trit-full", "rfe"} {
		var pts plotter.XYs
		for _, s := range sweep {
			if s.Method == m {
				pts = append(pts, plotter.XY{X: float64(s.Bytes), Y: s.Accuracy})
			}
		}
		if len(pts) > 0 {
			if err := addLine(p, m+" (p sweep)", m, pts); err != nil {
				return err
			}
		}
	}
	var bundles plotter.XYs
	for _, s := range sweep {
		if s.Bundle > 0 {
			bundles = append(bundles, plotter.XY{X: float64(s.Bundle), Y: s.Accuracy})
		}
	}
	if len(bundles) > 0 {
		sc, err := plotter.NewScatter(bundles)
		if err != nil {
			return err
		}
		sc.Color = methodColors["trit-ternary"]
		sc.Shape = draw.CrossGlyph{}
		sc.Radius = vg.Points(4)
		p.Add(sc)
		p.legend("trit-ternary signed bundle", sc)
	}
	for _, r := range rows {
		if r.Method == "trit-ternary" || r.Method == "trit-full" || r.Method == "rfe" {
			continue // on the sweep lines
		}
		sc, err := plotter.NewScatter(plotter.XYs{{X: float64(r.MemoryTotal), Y: r.Accuracy}})
		if err != nil {
			return err
		}
		sc.Color = methodColors[r.Method]
		sc.Radius = vg.Points(4)
		p.Add(sc)
		p.legend(fmt.Sprintf("%s (p = %d)", r.Method, r.P), sc)
	}
	return savePlot(p, path)
}

// plotInit trains trit-ternary twice on the dataset with its bench σ and C,
// from the linear-SVM and from a random initialisation, and plots the first
// weight vector's objective per solver step.
func (f *figureFlags) plotInit(e *env, path string, rows []*benchRow) error {
	r := findRow(rows, baseline.TritTernary)
	if r == nil {
		return fmt.Errorf("no trit-ternary row for %s in --from", f.dataset)
	}
	train, test, err := data.LoadStandard(f.dataDir, f.dataset)
	if err != nil {
		return err
	}
	p := newPlot(fmt.Sprintf("%s: objective per step (weight vector 0, σ=%g, C=%g)", f.dataset, r.Sigma, r.C),
		"solver step (α-steps and coordinate sweeps)", "objective (log scale)")
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = logTicks{}
	for _, init := range []string{"svm", "random"} {
		res, err := training.Train(train, &training.Config{P: r.P, Sigma: r.Sigma, C: r.C, Init: init, Seed: f.seed, Workers: f.workers})
		if err != nil {
			return err
		}
		ev, err := training.Evaluate(res.Model, test, f.workers)
		if err != nil {
			return err
		}
		var pts plotter.XYs
		for k, s := range res.History[0] {
			pts = append(pts, plotter.XY{X: float64(k), Y: s.Objective})
		}
		method := "trit-ternary"
		if init == "random" {
			method = "rfe"
		}
		name := fmt.Sprintf("%s init (test %.2f%%)", init, ev.Accuracy)
		if init == "svm" {
			name = fmt.Sprintf("linear-SVM init (test %.2f%%)", ev.Accuracy)
		}
		fmt.Fprintf(e.stderr, "figures: %s init %s: test %.2f%%, final objective %.4g after %d steps\n",
			f.dataset, init, ev.Accuracy, pts[len(pts)-1].Y, len(pts))
		if err := addLine(p, name, method, pts); err != nil {
			return err
		}
	}
	return savePlot(p, path)
}

// plotCircles draws the decision regions of binary- and ternary-coefficient
// models on the two-circles data (the paper's last figure).
func (f *figureFlags) plotCircles(e *env) error {
	ds := training.TwoCircles(400, 0.5, 0.08, f.seed)
	const p, sigma, cv = 256, 0.25, 1.0
	sc := data.FitScaler(ds)
	ts := inference.TransformSpec{Generator: inference.GeneratorV1, Seed: f.seed, Sigma: sigma, D: ds.D, P: p}
	tr, err := inference.NewTransform(ts)
	if err != nil {
		return err
	}
	// Embed every (scaled) point; the full-precision SVM on ±1 features
	// gives the initial signs, as in training.Train.
	cols := ternary.NewColumns(ds.N, p)
	dense := make([]float32, ds.N*p)
	ws := tr.NewWorkspace()
	xs := make([]float32, ds.D)
	rowsBits := make([][]uint64, 0, 64)
	for i := range ds.N {
		if err := sc.Apply(xs, ds.Row(i)); err != nil {
			return err
		}
		bits := make([]uint64, (p+63)/64)
		tr.Embed(bits, xs, ws)
		for j := range p {
			dense[i*p+j] = float32(2*int(bits[j/64]>>(j%64)&1) - 1)
		}
		rowsBits = append(rowsBits, bits)
		if len(rowsBits) == 64 || i == ds.N-1 {
			cols.SetRows64(i+1-len(rowsBits), rowsBits)
			rowsBits = rowsBits[:0]
		}
	}
	y := make([]int8, ds.N)
	for i, l := range ds.Y {
		y[i] = int8(2*l - 1)
	}
	lambda := 1 / (2 * float64(ds.N) * cv)
	full, err := linear.Train(dense, ds.N, p, y, &linear.Options{C: linear.CFromLambda(lambda, ds.N), Seed: f.seed})
	if err != nil {
		return err
	}
	w0 := make([]int8, p)
	var l1 float64
	for j, v := range full.W {
		l1 += math.Abs(v)
		if v > 0 {
			w0[j] = 1
		} else if v < 0 {
			w0[j] = -1
		}
	}
	for _, binary := range []bool{true, false} {
		res, err := ternary.Solve(cols, ternary.LabelBits(y), w0, l1/p, &ternary.Options{Lambda: lambda, Binary: binary})
		if err != nil {
			return err
		}
		spec, err := inference.NewTernarySpec(ts, sc, ds.Classes, [][]int8{res.W}, []float32{float32(res.Alpha)})
		if err != nil {
			return err
		}
		m, err := inference.New(spec)
		if err != nil {
			return err
		}
		ev, err := training.Evaluate(m, ds, 1)
		if err != nil {
			return err
		}
		nz := 0
		for _, v := range res.W {
			if v != 0 {
				nz++
			}
		}
		kind, file := "ternary {-1,0,+1}", "two_circles_ternary.png"
		if binary {
			kind, file = "binary {-1,+1}", "two_circles_binary.png"
		}
		title := fmt.Sprintf("two circles, %s coefficients: %d of %d non-zero, train %.1f%%", kind, nz, p, ev.Accuracy)
		fmt.Fprintf(e.stderr, "figures: %s\n", title)
		if err := plotRegions(filepath.Join(f.out, file), title, m, ds); err != nil {
			return err
		}
	}
	return nil
}

// regionGrid is the predicted class of m over a square grid.
type regionGrid struct {
	n      int
	lo, hi float64
	z      []float64
}

func (g *regionGrid) Dims() (int, int)   { return g.n, g.n }
func (g *regionGrid) Z(c, r int) float64 { return g.z[r*g.n+c] }
func (g *regionGrid) X(c int) float64    { return g.lo + (g.hi-g.lo)*float64(c)/float64(g.n-1) }
func (g *regionGrid) Y(r int) float64    { return g.lo + (g.hi-g.lo)*float64(r)/float64(g.n-1) }

type twoColors []color.Color

func (t twoColors) Colors() []color.Color { return t }

func plotRegions(path, title string, m *inference.Model, ds *data.Dataset) error {
	g := &regionGrid{n: 160, lo: -1.4, hi: 1.4}
	g.z = make([]float64, g.n*g.n)
	for r := range g.n {
		for c := range g.n {
			k, err := m.Predict(nil, []float32{float32(g.X(c)), float32(g.Y(r))})
			if err != nil {
				return err
			}
			g.z[r*g.n+c] = float64(k)
		}
	}
	p := newPlot(title, "x", "y")
	hm := plotter.NewHeatMap(g, twoColors{color.RGBA{0xfb, 0xd5, 0xd5, 0xff}, color.RGBA{0xd0, 0xe1, 0xf5, 0xff}})
	hm.Min, hm.Max = 0, 1
	p.Add(hm)
	for cls, col := range []color.Color{color.RGBA{0xd6, 0x27, 0x28, 0xff}, color.RGBA{0x1f, 0x77, 0xb4, 0xff}} {
		var pts plotter.XYs
		for i := range ds.N {
			if int(ds.Y[i]) == cls {
				pts = append(pts, plotter.XY{X: float64(ds.Row(i)[0]), Y: float64(ds.Row(i)[1])})
			}
		}
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			return err
		}
		sc.Color = col
		sc.Radius = vg.Points(1.5)
		p.Add(sc)
		p.legend(ds.Classes[cls], sc)
	}
	p.Title.TextStyle.Font.Size = vg.Points(12) // the title is long
	p.fixed = true                              // the heat map fills its square
	p.X.Tick.Marker, p.Y.Tick.Marker = plot.DefaultTicks{}, plot.DefaultTicks{}
	return savePlotSize(p, path, 7*vg.Inch, 6*vg.Inch)
}

// plotTimeVsN plots training time (final fit) against training rows for
// every method, for the dataset with bench rows at the most distinct
// --train-rows values.
func plotTimeVsN(e *env, path string, rows []*benchRow) error {
	byData := map[string]map[int]bool{}
	for _, r := range rows {
		if byData[r.Dataset] == nil {
			byData[r.Dataset] = map[int]bool{}
		}
		byData[r.Dataset][r.TrainRows] = true
	}
	best, most := "", 1
	for d, ns := range byData {
		if len(ns) > most || len(ns) == most && best != "" && d < best {
			best, most = d, len(ns)
		}
	}
	if best == "" {
		fmt.Fprintln(e.stderr, "figures: no dataset with bench rows at several --train-rows; time_vs_n.png not drawn")
		return nil
	}
	p := newPlot(best+": training time against training rows (fixed σ, C)", "training rows (log scale)", "training time, s (log scale)")
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = logTicks{}, logTicks{}
	for _, m := range baseline.Methods() {
		var pts plotter.XYs
		for _, r := range rows {
			if r.Dataset == best && r.Method == m.String() && r.TrainSeconds > 0 {
				pts = append(pts, plotter.XY{X: float64(r.TrainRows), Y: r.TrainSeconds})
			}
		}
		if len(pts) == 0 {
			continue
		}
		slices.SortFunc(pts, func(a, b plotter.XY) int { return int(a.X - b.X) })
		if err := addLine(p, m.String(), m.String(), pts); err != nil {
			return err
		}
	}
	return savePlot(p, path)
}

// readPeersReports reads one `trit-bench peers -o` output.
func readPeersReports(path string) ([]*PeersReport, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var rs []*PeersReport
	if err := json.Unmarshal(b, &rs); err != nil {
		return nil, fmt.Errorf("%s: not a 'trit-bench peers -o' output: %w", path, err)
	}
	return rs, nil
}

// plotPeersCurves draws, per dataset with a curve, test accuracy against
// the bytes each model takes for trit, mlp-int8 and xgboost, into
// dir/peers_curve_DATASET.png. Budgets at which a method has no model are
// said under the legend, with the reason the run gave.
func plotPeersCurves(dir string, reports []*PeersReport) ([]string, error) {
	var written []string
	for _, r := range reports {
		if len(r.Curve) == 0 {
			continue
		}
		p := newPlot(r.Dataset+": test accuracy against model bytes", "bytes on the gateway (log scale)", "test accuracy (%)")
		logX(p, byteTicks{})
		for _, m := range []string{"trit", "mlp-int8", "xgboost"} {
			var pts plotter.XYs
			var skipped []PeerResult
			for _, c := range r.Curve {
				switch {
				case c.Method != m:
				case c.Skipped != "":
					skipped = append(skipped, c)
				case c.Bytes > 0:
					pts = append(pts, plotter.XY{X: float64(c.Bytes), Y: c.Accuracy})
				}
			}
			if len(pts) > 0 {
				slices.SortFunc(pts, func(a, b plotter.XY) int { return cmp.Compare(a.X, b.X) })
				if err := addLine(p, m, m, pts); err != nil {
					return nil, err
				}
			}
			if note := skippedNote(m, skipped); note != "" {
				p.note("%s", note)
			}
		}
		path := filepath.Join(dir, "peers_curve_"+r.Dataset+".png")
		if err := savePlot(p, path); err != nil {
			return nil, err
		}
		written = append(written, path)
	}
	if len(written) == 0 {
		return nil, errors.New("no dataset in --peers has a curve (run peers with --curve)")
	}
	return written, nil
}

// plotCoverageCurves draws, per dataset whose results carry an
// accuracy-vs-coverage curve, trit's (ranked by its calibrated
// confidence) beside the int8 MLP's (ranked by its softmax), into
// dir/coverage_DATASET.png, each legend entry with its ECE.
func plotCoverageCurves(dir string, reports []*PeersReport) ([]string, error) {
	var written []string
	for _, r := range reports {
		p := newPlot(r.Dataset+": accuracy on the most confident test windows", "coverage (% of windows answered)", "accuracy on the answered (%)")
		n := 0
		for _, res := range r.Results {
			if len(res.Coverage) == 0 {
				continue
			}
			var pts plotter.XYs
			for _, c := range res.Coverage {
				pts = append(pts, plotter.XY{X: c.Coverage, Y: c.Accuracy})
			}
			slices.SortFunc(pts, func(a, b plotter.XY) int { return cmp.Compare(a.X, b.X) })
			name := res.Method + " (calibrated confidence)"
			if res.Method != "trit" {
				name = res.Method + " (softmax)"
			}
			if res.ECE != nil {
				name += fmt.Sprintf(", ECE %.2f%%", *res.ECE)
			}
			if err := addLine(p, name, res.Method, pts); err != nil {
				return nil, err
			}
			n++
		}
		if n == 0 {
			continue
		}
		path := filepath.Join(dir, "coverage_"+r.Dataset+".png")
		if err := savePlot(p, path); err != nil {
			return nil, err
		}
		written = append(written, path)
	}
	if len(written) == 0 {
		return nil, errors.New("no result in --peers has an accuracy-vs-coverage curve")
	}
	return written, nil
}

// skippedNote says at which budgets a method has no model and why (the
// reason given at the largest of them, the one nearest its curve):
// "trit: no model at 512 B, 1 KiB, 2 KiB or 4 KiB: its float16 scaler
// alone is 3,137 B".
func skippedNote(method string, skipped []PeerResult) string {
	if len(skipped) == 0 {
		return ""
	}
	slices.SortFunc(skipped, func(a, b PeerResult) int { return cmp.Compare(a.Budget, b.Budget) })
	var budgets []string
	for _, s := range skipped {
		budgets = append(budgets, byteLabel(float64(s.Budget)))
	}
	list := budgets[0]
	if n := len(budgets); n > 1 {
		list = strings.Join(budgets[:n-1], ", ") + " or " + budgets[n-1]
	}
	reason := skipped[len(skipped)-1].Skipped
	if r := []rune(reason); len(r) > 120 {
		reason = string(r[:119]) + "…"
	}
	return fmt.Sprintf("%s: no model at %s: %s", method, list, reason)
}
