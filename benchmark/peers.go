package benchmark

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/trit-iot/trit/inference/bundle"
	"github.com/trit-iot/trit/training"
	"github.com/trit-iot/trit/training/data"
)

// Peers: trit at a byte budget against general-purpose classifiers trained
// by scripts/peers/peers.py (scikit-learn, XGBoost) on exactly what trit
// saw: the same training and test rows, the features scaled by trit's
// fitted scaler, and trit's validation folds (the latest rows for time
// series). Bytes are what a gateway stores; budget.go has the formulas.

// PeerResult is one method's result on one dataset at one budget: a row of
// the peers table and an element of `trit-bench peers -o`.
type PeerResult struct {
	Method   string  `json:"method"`
	Budget   int     `json:"budget"`            // bytes the method was sized to; 0: not sized (reference)
	Accuracy float64 `json:"accuracy"`          // percent, on the test split
	Balanced float64 `json:"balanced_accuracy"` // mean per-class recall, percent
	// Validation is the balanced accuracy on the validation folds of the
	// setting chosen (the mean over the folds), percent; nil when the
	// method was not tuned. Validation − Balanced is how far the choice's
	// forecast was from what the test rows gave.
	Validation   *float64              `json:"validation_balanced,omitempty"`
	PerClass     []training.ClassScore `json:"per_class"`          // recall (and precision) per class on the test split
	Bytes        int                   `json:"bytes"`              // as stored on the gateway
	BytesFormula string                `json:"bytes_formula"`      // how Bytes was counted
	TrainSeconds float64               `json:"train_seconds"`      // tuning and final fit
	FitSeconds   float64               `json:"fit_seconds"`        // the final fit alone
	Params       map[string]any        `json:"params,omitempty"`   // chosen hyper-parameters and sizes
	Notes        []string              `json:"notes,omitempty"`    // subsampling, caps, convergence
	Skipped      string                `json:"skipped,omitempty"`  // why there is no result
	FitRows      int                   `json:"fit_rows,omitempty"` // rows of the final fit
	// Coverage is the accuracy on the most confident test windows at
	// coverages from 100% to 50% (trit: its calibrated confidence, then
	// margin; mlp-int8: its softmax), and ECE that confidence's expected
	// calibration error, percent (training.ConfidenceReport); nil for the
	// other methods and an uncalibrated trit.
	Coverage []training.CoveragePoint `json:"accuracy_vs_coverage,omitempty"`
	ECE      *float64                 `json:"ece,omitempty"`
	// Confidence is a calibrated trit's whole report on the test split
	// (under the bundle's thresholds: coverage, accuracy on the answered,
	// the raw softmax's ECE, reliability, unknown rate per tenth).
	Confidence *training.ConfidenceReport `json:"confidence,omitempty"`
	// StatedECE is the calibration error trit's training stated for the
	// confidence it ships (training.Result.CalibrationError), percent.
	StatedECE float64 `json:"stated_ece,omitempty"`
}

// PeersReport is everything `trit-bench peers` measured on one dataset.
type PeersReport struct {
	Dataset    string       `json:"dataset"`
	TrainRows  int          `json:"train_rows"`
	TestRows   int          `json:"test_rows"`
	Features   int          `json:"features"`
	Classes    []string     `json:"classes"`
	Validation string       `json:"validation"` // trit's validation rows, which the peers are tuned on too
	Budget     int          `json:"budget"`
	Results    []PeerResult `json:"results"` // trit first, then the peers, at Budget
	Curve      []PeerResult `json:"curve,omitempty"`
	Machine    string       `json:"machine"`
	Date       string       `json:"date"`
	Command    string       `json:"command"`
}

type peersFlags struct {
	data     dataFlags
	budget   int
	curve    string
	methods  string
	out      string // -o: the reports as JSON
	jsonOld  string // --json FILE, the former name of -o (replaces as it did)
	force    bool
	python   string
	script   string
	workDir  string
	seed     uint64
	workers  int
	tuneRows int
	rbfRows  int
	fitRows  int
	variants string   // suite: selection presets for leave-one-dataset-out
	merge    []string // suite: earlier reports to join instead of running
}

func newPeersCmd(e *env) *cobra.Command {
	f := &peersFlags{}
	cmd := &cobra.Command{
		Use:   "peers --standard NAME[,NAME…] [flags]",
		Short: "Compare trit with an int8 MLP, XGBoost and linear and RBF SVMs at the same byte budget",
		Long: `For each standard dataset: train trit with the defaults of 'tritctl train'
(training.Train, --budget bytes) and evaluate it on the test split; then
export what trit saw — the training and test rows scaled by trit's fitted
scaler, and the row indices of trit's validation folds (the latest rows for
time-ordered sets) — and run scripts/peers/peers.py on it, which tunes each
peer on those folds by balanced accuracy, refits it on all training rows
(as trit's final fit does) and evaluates it on the test split:

  mlp-int8    one hidden layer (scikit-learn MLPClassifier), weights quantised to
              int8 per output channel, width sized to the budget
  xgboost     gradient-boosted trees, depth ≤ 6, rounds cut to the budget
  linear-svm  LinearSVC, C tuned, weights int8 per class
  rbf-svm     exact SVC, C and γ tuned, on at most --rbf-rows rows: a reference
              for accuracy, whatever its size

Bytes are what a gateway would store (scripts/peers/peers.py and
docs/BENCHMARKS.md give each formula). --curve repeats trit, mlp-int8 and
xgboost at each listed budget. Needs /usr/bin/python3 with python3-sklearn
and python3-xgboost (make bench-peers installs them as root).`,
		Example: `  trit-bench peers --standard usps,wall-following -o peers.json
  trit-bench peers --standard occupancy --curve 512,1024,2048,4096,8192,16384,30720`,
		Args: func(cmd *cobra.Command, args []string) error {
			// tritctl's --json is a switch: a script that meant that here
			// would write to a file named after its next flag (checked
			// first: that flag's value is then left as an argument).
			if strings.HasPrefix(f.jsonOld, "-") {
				return usagef("--json takes a file here (deprecated: use -o FILE); %q is a flag", f.jsonOld)
			}
			return cobra.NoArgs(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			f.data.labelColumn = ""
			if f.jsonOld != "" {
				if f.out != "" {
					return usagef("give -o FILE only (--json FILE is its former name)")
				}
				fmt.Fprintln(e.stderr, "trit-bench: --json FILE is deprecated; use -o FILE (with --force to replace it)")
				f.out, f.force = f.jsonOld, true
			}
			return runPeers(e, f, strings.Join(os.Args, " "))
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.data.standard, "standard", "", "comma-separated standard datasets ("+strings.Join(data.StandardNames(), ", ")+")")
	fl.StringVar(&f.data.dataDir, "data-dir", defaultDataDir(), "directory of the standard datasets (env TRIT_DATA)")
	fl.IntVar(&f.budget, "budget", training.DefaultBudget, "bytes each model may take on the gateway")
	fl.StringVar(&f.curve, "curve", "", "comma-separated budgets in bytes for the accuracy-against-bytes curve (trit, mlp-int8, xgboost)")
	fl.StringVar(&f.methods, "methods", "mlp-int8,xgboost,linear-svm,rbf-svm", "comma-separated peers (\"\": trit alone, which needs no Python)")
	fl.StringVarP(&f.out, "out", "o", "", "also write the reports to this JSON file (one array of datasets), after each dataset")
	fl.BoolVar(&f.force, "force", false, "replace --out if it exists")
	// The former name of -o, hidden: --json is a switch everywhere else.
	fl.StringVar(&f.jsonOld, "json", "", "deprecated: use -o")
	fl.MarkHidden("json")
	fl.StringVar(&f.python, "python", "/usr/bin/python3", "Python with scikit-learn and XGBoost")
	fl.StringVar(&f.script, "script", filepath.Join("scripts", "peers", "peers.py"), "the peers script")
	fl.StringVar(&f.workDir, "work-dir", "", "export here and keep it (default: a temporary directory, removed)")
	fl.Uint64Var(&f.seed, "seed", 1, "seed of trit and of the peers")
	fl.IntVar(&f.workers, "workers", 0, "goroutines for trit, threads for XGBoost (0: all cores)")
	fl.IntVar(&f.tuneRows, "tune-rows", 20000, "peers tune on at most this many rows of each fold's training part (a seeded subsample, said in the notes; 0: all)")
	fl.IntVar(&f.rbfRows, "rbf-rows", 10000, "rbf-svm trains on at most this many rows (a seeded stratified subsample; 0: skip rbf-svm)")
	fl.IntVar(&f.fitRows, "fit-rows", 0, "peers' final fit on at most this many training rows (0: all, as trit)")
	return cmd
}

var knownPeers = []string{"mlp-int8", "xgboost", "linear-svm", "rbf-svm", "logreg", "stump", "majority"}

func (f *peersFlags) check() ([]int, []string, error) {
	if f.data.standard == "" {
		return nil, nil, usagef("--standard is required")
	}
	if f.budget < 512 {
		return nil, nil, usagef("--budget %d: want at least 512 bytes", f.budget)
	}
	var curve []int
	for _, s := range strings.Split(f.curve, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		b, err := strconv.Atoi(s)
		if err != nil || b < 512 {
			return nil, nil, usagef("--curve: %q is not a budget of at least 512 bytes", s)
		}
		curve = append(curve, b)
	}
	var methods []string
	for _, m := range strings.Split(f.methods, ",") {
		if m = strings.TrimSpace(m); m == "" {
			continue
		}
		if !contains(knownPeers, m) {
			return nil, nil, usagef("--methods: %q is not one of %s", m, strings.Join(knownPeers, ", "))
		}
		methods = append(methods, m)
	}
	if f.tuneRows < 0 || f.rbfRows < 0 || f.fitRows < 0 {
		return nil, nil, usagef("--tune-rows, --rbf-rows and --fit-rows must not be negative")
	}
	// Before the hours of work, not after.
	if _, err := os.Lstat(f.out); f.out != "" && err == nil && !f.force {
		return nil, nil, fmt.Errorf("%s: file exists (use --force to replace it)", f.out)
	}
	return curve, methods, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// ErrNoPython reports that the peers' Python modules are missing.
var ErrNoPython = errors.New("peers need Python 3 with scikit-learn and XGBoost: run 'make bench-peers' as root, or 'sudo apt-get install python3-sklearn python3-xgboost'")

// checkPython fails with ErrNoPython unless python imports sklearn and
// xgboost.
func checkPython(python string) error {
	out, err := exec.Command(python, "-c", "import sklearn, xgboost, numpy").CombinedOutput()
	if err != nil {
		return fmt.Errorf("%w (%s: %v: %s)", ErrNoPython, python, err, strings.TrimSpace(lastLine(string(out))))
	}
	return nil
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// ready checks that the peers script and its Python are there, before
// any work; trit alone (no peer, no curve) needs neither.
func (f *peersFlags) ready(curve []int, methods []string) error {
	if len(curve) == 0 && len(methods) == 0 {
		return nil
	}
	if _, err := os.Stat(f.script); err != nil {
		return fmt.Errorf("peers script: %w (run from the repository root or give --script)", err)
	}
	return checkPython(f.python)
}

func runPeers(e *env, f *peersFlags, command string) error {
	curve, methods, err := f.check()
	if err != nil {
		return err
	}
	if err := f.ready(curve, methods); err != nil {
		return err
	}
	var reports []*PeersReport
	for _, name := range f.data.names() {
		r, err := f.one(e, name, curve, methods, command)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		reports = append(reports, r)
		if f.out != "" {
			// Written after every dataset, so a long sweep keeps what finished.
			if err := writeJSONFile(f.out, reports); err != nil {
				return err
			}
		}
	}
	writePeersTable(e.stdout, reports)
	return nil
}

func writeJSONFile(path string, v any) error {
	var b bytes.Buffer
	if err := writeJSON(&b, v); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b.Bytes(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// one runs trit and the peers on one standard dataset.
func (f *peersFlags) one(e *env, name string, curve []int, methods []string, command string) (*PeersReport, error) {
	train, test, err := f.data.loadStandard(name)
	if err != nil {
		return nil, err
	}
	r := &PeersReport{Dataset: name, TrainRows: train.N, TestRows: test.N, Features: train.D, Classes: train.Classes,
		Budget: f.budget, Machine: machine(), Date: time.Now().UTC().Format("2006-01-02"), Command: command}
	prog := &progress{e: e}
	tr, res, err := f.trit(train, test, f.budget, prog, name)
	if err != nil {
		return nil, err
	}
	r.Validation = res.Validation
	r.Results = append(r.Results, *tr)
	fmt.Fprintf(e.stderr, "peers: %s trit: %.2f%% (balanced %.2f%%), %d bytes, %.1f s\n", name, tr.Accuracy, tr.Balanced, tr.Bytes, tr.TrainSeconds)
	var curveTrit []PeerResult
	for _, b := range curve {
		if b == f.budget {
			c := *tr
			curveTrit = append(curveTrit, c)
			continue
		}
		c, _, err := f.trit(train, test, b, prog, name)
		if err != nil {
			// One budget trit cannot meet does not cost the dataset.
			fmt.Fprintf(e.stderr, "peers: %s trit at %d bytes: %v\n", name, b, err)
			curveTrit = append(curveTrit, PeerResult{Method: "trit", Budget: b, Skipped: err.Error()})
			continue
		}
		fmt.Fprintf(e.stderr, "peers: %s trit at %d bytes: %.2f%%, %d bytes\n", name, b, c.Accuracy, c.Bytes)
		curveTrit = append(curveTrit, *c)
	}
	if len(curve) == 0 && len(methods) == 0 {
		return r, nil // trit alone: nothing for the peers script
	}
	dir := f.workDir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "trit-peers-"); err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
	} else {
		dir = filepath.Join(dir, name)
	}
	folds, _, err := training.ValidationFolds(train, f.config(f.budget, nil))
	if err != nil {
		return nil, err
	}
	job := &PeersJob{Dataset: name, Classes: train.Classes, Budget: f.budget, Curve: curve, Methods: methods,
		Validation: res.Validation, Seed: f.seed, Threads: f.workers, TuneRows: f.tuneRows, RBFRows: f.rbfRows, FitRows: f.fitRows}
	if err := Export(dir, job, &res.Spec.Scaler, train, test, folds); err != nil {
		return nil, fmt.Errorf("exporting for the peers: %w", err)
	}
	out, err := f.runPeers(e, dir)
	if err != nil {
		return nil, err
	}
	r.Results = append(r.Results, out.Results...)
	if len(curve) > 0 {
		r.Curve = append(curveTrit, out.Curve...)
	}
	return r, nil
}

// runPeers runs the peers script on the export in dir and reads its
// results. With --work-dir, results of an earlier run on exactly the same
// export (rows, scaling, folds, job and script) are reused.
func (f *peersFlags) runPeers(e *env, dir string) (*peersOutput, error) {
	results := filepath.Join(dir, "results.json")
	keyFile := filepath.Join(dir, "results.key")
	key, err := exportKey(dir, f.script)
	if err != nil {
		return nil, err
	}
	if f.workDir != "" {
		if old, err := os.ReadFile(keyFile); err == nil && string(old) == key {
			if out, err := readPeersOutput(results); err == nil {
				fmt.Fprintf(e.stderr, "peers: reusing %s (same rows, folds and settings)\n", results)
				return out, nil
			}
		}
	}
	os.Remove(keyFile)
	cmd := exec.Command(f.python, f.script, dir)
	cmd.Stdout, cmd.Stderr = e.stderr, e.stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s %s: %w", f.python, f.script, err)
	}
	out, err := readPeersOutput(results)
	if err != nil {
		return nil, err
	}
	return out, os.WriteFile(keyFile, []byte(key), 0o644)
}

// exportKey is the SHA-256 of what the peers script is given: every file
// of the export in dir but its results, and the script itself.
func exportKey(dir, script string) (string, error) {
	h := sha256.New()
	names, err := filepath.Glob(filepath.Join(dir, "*"))
	if err != nil {
		return "", err
	}
	slices.Sort(names)
	for _, name := range append(names, script) {
		if b := filepath.Base(name); b == "results.json" || b == "results.key" {
			continue
		}
		data, err := os.ReadFile(name)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d\n", filepath.Base(name), len(data))
		h.Write(data)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// config is the training configuration of `tritctl train` with its
// defaults, at budget bytes. Below 2 KiB the room kept for the bundle's
// info section (Config.Reserve, 512 bytes by default, which a 512-byte
// budget could not even hold) is a quarter of the budget; the bytes
// reported are the real signed bundle's either way.
func (f *peersFlags) config(budget int, prog *progress) *training.Config {
	c := &training.Config{Budget: budget, Seed: f.seed, Workers: f.workers}
	if budget < 2048 {
		c.Reserve = budget / 4
	}
	if prog != nil {
		c.Progress = prog.report
	}
	return c
}

// trit trains and evaluates trit at budget bytes: the code path of
// `tritctl train --standard`.
func (f *peersFlags) trit(train, test *data.Dataset, budget int, prog *progress, name string) (*PeerResult, *training.Result, error) {
	return f.tritWith(train, test, f.config(budget, prog), name)
}

// tritWith is trit with the training configuration cfg.
func (f *peersFlags) tritWith(train, test *data.Dataset, cfg *training.Config, name string) (*PeerResult, *training.Result, error) {
	budget := cfg.Budget
	res, err := training.Train(train, cfg)
	if err != nil {
		return nil, nil, err
	}
	ev, err := training.Evaluate(res.Model, test, f.workers)
	if err != nil {
		return nil, nil, err
	}
	raw, err := res.Bundle(train, training.BundleMeta{ModelID: name, Release: 1})
	if err != nil {
		return nil, nil, err
	}
	var seed [ed25519.SeedSize]byte
	signed, err := bundle.Sign(raw, ed25519.NewKeyFromSeed(seed[:]))
	if err != nil {
		return nil, nil, err
	}
	st := res.Structure
	weights := "ternary"
	if st.Binary {
		weights = "binary"
	}
	var val *float64
	if res.Selected != nil {
		v := res.Selected.Balanced
		val = &v
	}
	var cr *training.ConfidenceReport
	var coverage []training.CoveragePoint
	var ece *float64
	if res.Model.Calibrated() {
		if cr, err = training.EvaluateConfidence(res.Model, test, res.Model.Thresholds(), f.workers); err != nil {
			return nil, nil, err
		}
		coverage, ece = cr.Curve, &cr.ECE
	}
	return &PeerResult{
		Coverage: coverage, ECE: ece, Confidence: cr, StatedECE: res.CalibrationError,
		Method: "trit", Budget: budget, Accuracy: ev.Accuracy, Balanced: ev.Balanced, PerClass: ev.PerClass, Validation: val,
		Bytes: len(signed), BytesFormula: "signed bundle (docs/BUNDLE.md): header, scaler, embedding, weights, info, signature",
		TrainSeconds: res.TrainSeconds, FitSeconds: res.FitSeconds, FitRows: train.N,
		Params: map[string]any{"sigma": res.Sigma, "c": res.C, "p": st.P, "thresholds": st.Thresholds,
			"projection": st.Projection, "trees": st.Trees, "depth": st.Depth, "planes": st.Planes, "weights": weights, "nonzero": res.NonZero},
	}, res, nil
}

// peersOutput is what peers.py writes.
type peersOutput struct {
	Results []PeerResult `json:"results"`
	Curve   []PeerResult `json:"curve"`
}

func readPeersOutput(path string) (*peersOutput, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("peers output: %w", err)
	}
	var out peersOutput
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("peers output %s: %w", path, err)
	}
	for _, rs := range [][]PeerResult{out.Results, out.Curve} {
		for i := range rs {
			if v, ok := rs[i].Params["validation_balanced"].(float64); ok && rs[i].Validation == nil {
				rs[i].Validation = &v
			}
		}
	}
	return &out, nil
}

// machine describes this computer for the report.
func machine() string {
	cpu := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				cpu = strings.TrimSpace(v)
				break
			}
		}
	}
	return fmt.Sprintf("%s, %d cores", cpu, numCPU())
}

// recalls lists the per-class recalls in class order, "/"-separated.
func recalls(cs []training.ClassScore) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = fmt.Sprintf("%.0f", c.Recall)
	}
	return strings.Join(parts, "/")
}

// writePeersTable writes one Markdown table of the reports at their
// budget, then the curve if any.
func writePeersTable(w io.Writer, reports []*PeersReport) {
	fmt.Fprintln(w, "| dataset | method | accuracy % | balanced % | Δ accuracy vs trit | Δ balanced vs trit | validation balanced % | gap | bytes | train s | recall per class % | notes |")
	fmt.Fprintln(w, "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|---|---|")
	for _, r := range reports {
		var trit *PeerResult
		for i := range r.Results {
			if r.Results[i].Method == "trit" {
				trit = &r.Results[i]
			}
		}
		for _, p := range r.Results {
			if p.Skipped != "" {
				fmt.Fprintf(w, "| %s | %s | – | – | – | – | – | – | – | – | – | skipped: %s |\n", r.Dataset, p.Method, p.Skipped)
				continue
			}
			bytesCol := strconv.Itoa(p.Bytes)
			if p.Budget > 0 && p.Bytes > p.Budget {
				bytesCol += " (over budget)"
			} else if p.Budget == 0 && p.Method != "trit" {
				bytesCol += " (no budget)"
			}
			dAcc, dBal := "–", "–"
			if trit != nil && p.Method != "trit" {
				dAcc, dBal = fmt.Sprintf("%+.2f", p.Accuracy-trit.Accuracy), fmt.Sprintf("%+.2f", p.Balanced-trit.Balanced)
			}
			val, gap := "–", "–"
			if p.Validation != nil {
				val, gap = fmt.Sprintf("%.2f", *p.Validation), fmt.Sprintf("%+.2f", *p.Validation-p.Balanced)
			}
			fmt.Fprintf(w, "| %s | %s | %.2f | %.2f | %s | %s | %s | %s | %s | %.1f | %s | %s |\n", r.Dataset, p.Method, p.Accuracy, p.Balanced,
				dAcc, dBal, val, gap, bytesCol, p.TrainSeconds, recalls(p.PerClass), strings.Join(p.Notes, "; "))
		}
	}
	fmt.Fprintln(w)
	for _, r := range reports {
		fmt.Fprintf(w, "- %s: %d train / %d test rows, %d features, %d classes (%s; recall per class in this order, classes without test rows left out); budget %d bytes; peers tuned on trit's validation rows (%s), refitted on all training rows.\n",
			r.Dataset, r.TrainRows, r.TestRows, r.Features, len(r.Classes), strings.Join(r.Classes, ", "), r.Budget, r.Validation)
	}
	writeCoverageTable(w, reports)
	var any bool
	for _, r := range reports {
		any = any || len(r.Curve) > 0
	}
	if !any {
		return
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| dataset | method | budget | bytes | accuracy % | balanced % |")
	fmt.Fprintln(w, "|---|---|--:|--:|--:|--:|")
	for _, r := range reports {
		for _, p := range r.Curve {
			if p.Skipped != "" {
				fmt.Fprintf(w, "| %s | %s | %d | – | – | – |\n", r.Dataset, p.Method, p.Budget)
				continue
			}
			fmt.Fprintf(w, "| %s | %s | %d | %d | %.2f | %.2f |\n", r.Dataset, p.Method, p.Budget, p.Bytes, p.Accuracy, p.Balanced)
		}
	}
}

// writeCoverageTable writes the accuracy on the most confident test
// windows at each coverage, for every result that has the curve (trit's
// calibrated confidence, the int8 MLP's softmax), with its ECE.
func writeCoverageTable(w io.Writer, reports []*PeersReport) {
	header := false
	for _, r := range reports {
		for _, p := range r.Results {
			if len(p.Coverage) == 0 {
				continue
			}
			if !header {
				fmt.Fprintln(w)
				fmt.Fprint(w, "| dataset | method (confidence) | ECE %")
				for _, c := range p.Coverage {
					fmt.Fprintf(w, " | %.0f%%", c.Coverage)
				}
				fmt.Fprintln(w, " |")
				fmt.Fprint(w, "|---|---|--:")
				fmt.Fprintln(w, strings.Repeat("|--:", len(p.Coverage))+"|")
				header = true
			}
			how := "trit (calibrated)"
			if p.Method != "trit" {
				how = p.Method + " (softmax)"
			}
			e := "–"
			if p.ECE != nil {
				e = fmt.Sprintf("%.2f", *p.ECE)
			}
			fmt.Fprintf(w, "| %s | %s | %s", r.Dataset, how, e)
			for _, c := range p.Coverage {
				fmt.Fprintf(w, " | %.2f", c.Accuracy)
			}
			fmt.Fprintln(w, " |")
		}
	}
}
