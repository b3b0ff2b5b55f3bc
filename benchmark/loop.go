package benchmark

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/trit-iot/trit/inference"
	"github.com/trit-iot/trit/training"
	"github.com/trit-iot/trit/training/data"
	"github.com/trit-iot/trit/training/retrain"
)

// The replay of closing the loop (`trit-bench loop`): each recording's
// test period streams in blocks, in time order. The model in service
// classifies a block; then the loop gets the true labels of a fraction of
// that block's windows, chosen as agents keep windows for labelling —
// the ones the model reported unknown and the lowest-margin ones first
// (half of the block's labels at most), the rest a seeded random sample
// of the others — and, once it has at least minNew labels it has not
// retrained on, runs retrain.Run (the procedure of `tritctl retrain` and
// of the fleet's job) with the static model's training rows as the
// original data and every window labelled so far. A challenger it
// proposes serves from the next block on. The peers (scripts/peers/
// loop.py) are refitted at the same moments on exactly the same labelled
// windows with the same weights (retrain.Copies) and always serve the
// refit: they get no challenger test, and they use every labelled window
// at once, where trit holds the newest out to judge its challenger.

// LoopRun is one method's replay at one label fraction.
type LoopRun struct {
	Method   string    `json:"method"`           // trit, mlp-int8, xgboost
	Labels   float64   `json:"labels_percent"`   // labels per block, percent; 0: the static model
	Blocks   []float64 `json:"block_accuracy"`   // accuracy per block, percent
	Accuracy float64   `json:"accuracy"`         // over the whole test period, percent
	Balanced float64   `json:"balanced"`         // over the whole test period, percent
	Labelled int       `json:"labelled_windows"` // at the end
	Retrains int       `json:"retrains"`         // challengers trained
	Promoted int       `json:"promoted"`         // of them better on the newest windows (trit)
	Notes    []string  `json:"notes,omitempty"`  // each retraining's decision (trit)
	Seconds  float64   `json:"seconds"`
}

// LoopReport is the replay of one recording.
type LoopReport struct {
	Dataset    string  `json:"dataset"`
	TrainRows  int     `json:"train_rows"`
	TestRows   int     `json:"test_rows"`
	Blocks     []int   `json:"block_rows"`
	Validation float64 `json:"static_validation_balanced"` // the static model's validation score, percent
	// StaticValAcc is the static model's accuracy on its validation folds
	// (the search's chosen candidate), percent, when known.
	StaticValAcc float64   `json:"static_validation_accuracy"`
	Runs         []LoopRun `json:"runs"` // trit static, trit's loop per fraction, then the peers
	MinNew       int       `json:"min_new"`
	Machine      string    `json:"machine"`
	Date         string    `json:"date"`
	Command      string    `json:"command"`
}

type loopFlags struct {
	data     dataFlags
	blocks   int
	labels   string
	minNew   int
	methods  string
	python   string
	script   string
	workDir  string
	out      string
	force    bool
	seed     uint64
	workers  int
	tuneRows int
	// rc holds the retraining's settings the flags change (MaxCopies,
	// Newest, AcceptTies); its Train is set per recording.
	rc retrain.Config
}

func newLoopCmd(e *env) *cobra.Command {
	f := &loopFlags{}
	cmd := &cobra.Command{
		Use:   "loop --standard NAME[,NAME…] [flags]",
		Short: "Replay closing the loop on recordings: a static model against retraining on field labels",
		Long: `For each standard recording (a chronological split): train the static model
as 'tritctl train --standard' does, then stream the test period in --blocks
blocks in time order. After each block the loop gets the labels of a share
of its windows (--labels percent; unknown and lowest-margin windows first,
for half of them at most, the rest at random) and, with at least --min-new
new labels, retrains as 'tritctl retrain' does (package training/retrain:
the original training rows plus the labelled windows, newer weighted more;
the challenger serves only if it beats the model in service on the newest
labelled windows). The int8 MLP and XGBoost (scripts/peers/loop.py) are
refitted at the same moments on the same labelled windows with the same
weights. Reports accuracy per block and over the test period.`,
		Example: `  trit-bench loop --standard occupancy,electricity --labels 1,5,20 -o loop.json`,
		Args:    cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return runLoop(e, f, strings.Join(os.Args, " "))
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.data.standard, "standard", "", "comma-separated standard recordings ("+strings.Join(data.StandardNames(), ", ")+")")
	fl.StringVar(&f.data.dataDir, "data-dir", defaultDataDir(), "directory of the standard datasets (env TRIT_DATA)")
	fl.IntVar(&f.blocks, "blocks", 8, "blocks of the test period")
	fl.StringVar(&f.labels, "labels", "1,5,20", "comma-separated percentages of each block's windows labelled")
	fl.IntVar(&f.minNew, "min-new", 10, "retrain once at least this many windows were labelled since the last retraining")
	fl.StringVar(&f.methods, "methods", "mlp-int8,xgboost", "peers refitted on the same labels (\"\": trit alone)")
	fl.StringVar(&f.python, "python", "/usr/bin/python3", "Python with scikit-learn and XGBoost")
	fl.StringVar(&f.script, "script", filepath.Join("scripts", "peers", "loop.py"), "the peers' replay script")
	fl.StringVar(&f.workDir, "work-dir", "", "export here and keep it (default: a temporary directory, removed)")
	fl.StringVarP(&f.out, "out", "o", "", "also write the reports to this JSON file, after each recording")
	fl.BoolVar(&f.force, "force", false, "replace --out if it exists")
	fl.Uint64Var(&f.seed, "seed", 1, "seed of trit, the random labels and the peers")
	fl.IntVar(&f.workers, "workers", 0, "goroutines for trit, threads for XGBoost (0: all cores)")
	fl.IntVar(&f.tuneRows, "tune-rows", 20000, "peers tune on at most this many rows of each fold's training part")
	fl.BoolVar(&f.rc.AcceptTies, "accept-ties", false, "trit's loop also takes a challenger that ties with the model in service on the newest windows (not the product's rule: to measure what it costs)")
	fl.IntVar(&f.rc.MaxCopies, "max-copies", retrain.DefaultMaxCopies, "a labelled window weighs at most this many original rows, in trit's retraining and the peers' refits (to judge the default)")
	fl.Float64Var(&f.rc.Newest, "newest", retrain.DefaultNewest, "share of the labelled windows trit's retraining holds out as the newest to judge its challenger on (to judge the default)")
	return cmd
}

// fractions parses --labels.
func (f *loopFlags) fractions() ([]float64, error) {
	var out []float64
	for _, s := range strings.Split(f.labels, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || !(v > 0 && v <= 100) {
			return nil, usagef("--labels: %q is not a percentage in (0, 100]", s)
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		return nil, usagef("--labels: give at least one percentage")
	}
	return out, nil
}

func runLoop(e *env, f *loopFlags, command string) error {
	if f.data.standard == "" {
		return usagef("--standard is required")
	}
	if f.blocks < 2 || f.blocks > 1000 {
		return usagef("--blocks %d: want 2 … 1000", f.blocks)
	}
	if f.minNew < 1 {
		return usagef("--min-new %d: want at least 1", f.minNew)
	}
	if f.rc.MaxCopies < 1 {
		return usagef("--max-copies %d: want at least 1", f.rc.MaxCopies)
	}
	if !(f.rc.Newest > 0 && f.rc.Newest < 1) {
		return usagef("--newest %g: want a share in (0, 1)", f.rc.Newest)
	}
	fracs, err := f.fractions()
	if err != nil {
		return err
	}
	var methods []string
	for _, m := range strings.Split(f.methods, ",") {
		if m = strings.TrimSpace(m); m == "" {
			continue
		}
		if m != "mlp-int8" && m != "xgboost" {
			return usagef("--methods: %q: want mlp-int8 or xgboost", m)
		}
		methods = append(methods, m)
	}
	if _, err := os.Lstat(f.out); f.out != "" && err == nil && !f.force {
		return fmt.Errorf("%s: file exists (use --force to replace it)", f.out)
	}
	if len(methods) > 0 {
		if _, err := os.Stat(f.script); err != nil {
			return fmt.Errorf("loop script: %w (run from the repository root or give --script)", err)
		}
		if err := checkPython(f.python); err != nil {
			return err
		}
	}
	var reports []*LoopReport
	for _, name := range f.data.names() {
		train, test, err := f.data.loadStandard(name)
		if err != nil {
			return err
		}
		r, err := f.one(e, name, train, test, fracs, methods, command)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		reports = append(reports, r)
		if f.out != "" {
			if err := writeJSONFile(f.out, reports); err != nil {
				return err
			}
		}
	}
	writeLoopTable(e.stdout, reports)
	return nil
}

// one replays one recording: the static model, trit's loop at each
// fraction, and the peers on the same labels.
func (f *loopFlags) one(e *env, name string, train, test *data.Dataset, fracs []float64, methods []string, command string) (*LoopReport, error) {
	t0 := time.Now()
	cfg := &training.Config{Seed: f.seed, Workers: f.workers}
	static, err := training.Train(train, cfg)
	if err != nil {
		return nil, err
	}
	r := &LoopReport{Dataset: name, TrainRows: train.N, TestRows: test.N, Blocks: blockRows(test.N, f.blocks), MinNew: f.minNew,
		Machine: machine(), Date: time.Now().UTC().Format("2006-01-02"), Command: command}
	if static.Selected != nil {
		r.Validation, r.StaticValAcc = static.Selected.Balanced, static.Selected.Accuracy
	}
	st, err := staticRun(static.Model, test, f.blocks, f.workers)
	if err != nil {
		return nil, err
	}
	st.Seconds = time.Since(t0).Seconds()
	r.Runs = append(r.Runs, *st)
	fmt.Fprintf(e.stderr, "loop: %s static: %.2f%% (validation %.2f%% balanced), %.0f s\n", name, st.Accuracy, r.Validation, st.Seconds)
	var plans []loopPlan
	for _, frac := range fracs {
		lc := loopConfig{blocks: f.blocks, frac: frac, minNew: f.minNew, seed: f.seed, train: cfg, log: e.stderr, name: name, rc: f.rc}
		run, plan, err := replayTrit(context.Background(), static.Model, train, test, lc)
		if err != nil {
			return nil, err
		}
		r.Runs = append(r.Runs, *run)
		plans = append(plans, *plan)
		fmt.Fprintf(e.stderr, "loop: %s trit at %g%% labels: %.2f%% (%d retrains, %d promoted), %.0f s\n", name, frac, run.Accuracy, run.Retrains, run.Promoted, run.Seconds)
	}
	if len(methods) == 0 {
		return r, nil
	}
	peers, err := f.peers(e, name, static, train, test, methods, plans)
	if err != nil {
		return nil, err
	}
	r.Runs = append(r.Runs, peers...)
	return r, nil
}

// blockRows returns the rows of each of k blocks of n: ⌊(b+1)n/k⌋ − ⌊bn/k⌋.
func blockRows(n, k int) []int {
	out := make([]int, k)
	for b := range k {
		out[b] = (b+1)*n/k - b*n/k
	}
	return out
}

// blockStart returns the first row of block b of k over n rows.
func blockStart(n, k, b int) int { return b * n / k }

// staticRun scores the static model on every block.
func staticRun(m *inference.Model, test *data.Dataset, blocks, workers int) (*LoopRun, error) {
	run := &LoopRun{Method: "trit"}
	pred := make([]int32, test.N)
	for b := range blocks {
		lo, hi := blockStart(test.N, blocks, b), blockStart(test.N, blocks, b+1)
		acc, err := predictBlock(m, test, lo, hi, pred, workers)
		if err != nil {
			return nil, err
		}
		run.Blocks = append(run.Blocks, acc)
	}
	run.Accuracy, run.Balanced = overall(test, pred)
	return run, nil
}

// predictBlock predicts rows [lo, hi) of test into pred and returns the
// block's accuracy, percent.
func predictBlock(m *inference.Model, test *data.Dataset, lo, hi int, pred []int32, workers int) (float64, error) {
	block := test.Subset(seqRange(lo, hi))
	ev, err := training.Evaluate(m, block, workers)
	if err != nil {
		return 0, err
	}
	copy(pred[lo:hi], ev.Predicted)
	return ev.Accuracy, nil
}

func seqRange(lo, hi int) []int {
	s := make([]int, hi-lo)
	for i := range s {
		s[i] = lo + i
	}
	return s
}

// overall returns the accuracy and balanced accuracy of pred on test.
func overall(test *data.Dataset, pred []int32) (acc, bal float64) {
	rows := make([]int, len(test.Classes))
	right := make([]int, len(test.Classes))
	correct := 0
	for i, y := range test.Y {
		rows[y]++
		if pred[i] == y {
			right[y]++
			correct++
		}
	}
	var sum float64
	var k int
	for c := range rows {
		if rows[c] > 0 {
			sum += float64(right[c]) / float64(rows[c])
			k++
		}
	}
	return 100 * float64(correct) / float64(max(test.N, 1)), 100 * sum / float64(max(k, 1))
}

// loopConfig is one replay's settings.
type loopConfig struct {
	blocks int
	frac   float64 // percent
	minNew int
	seed   uint64
	train  *training.Config
	log    io.Writer // progress lines; nil: none
	name   string
	// rc is the retraining's settings but Train (zero fields: the
	// defaults); its MaxCopies weighs the peers' labelled windows too.
	rc retrain.Config
}

// loopStep is a retraining moment: after block After, the labelled test
// rows so far (oldest first) and each one's copies.
type loopStep struct {
	After  int   `json:"after_block"`
	Rows   []int `json:"rows"`
	Copies []int `json:"copies"`
}

// loopPlan is what the peers replay at one fraction.
type loopPlan struct {
	Labels float64    `json:"labels_percent"`
	Steps  []loopStep `json:"steps"`
}

// replayTrit runs trit's loop over test at one fraction, starting from
// static, and returns the run and the labelled windows at each
// retraining (for the peers).
func replayTrit(ctx context.Context, static *inference.Model, train, test *data.Dataset, lc loopConfig) (*LoopRun, *loopPlan, error) {
	t0 := time.Now()
	run := &LoopRun{Method: "trit", Labels: lc.frac}
	plan := &loopPlan{Labels: lc.frac, Steps: []loopStep{}}
	rng := rand.New(rand.NewPCG(lc.seed, math.Float64bits(lc.frac)))
	cur := static
	pred := make([]int32, test.N)
	var labelled []int // test rows, in the order labelled (time order)
	fresh := 0
	workers := 0
	if lc.train != nil {
		workers = lc.train.Workers
	}
	for b := range lc.blocks {
		lo, hi := blockStart(test.N, lc.blocks, b), blockStart(test.N, lc.blocks, b+1)
		acc, err := predictBlock(cur, test, lo, hi, pred, workers)
		if err != nil {
			return nil, nil, err
		}
		run.Blocks = append(run.Blocks, acc)
		if b == lc.blocks-1 {
			break // the test period ends: no later block to serve
		}
		chosen, err := chooseLabels(cur, test, lo, hi, lc.frac, rng)
		if err != nil {
			return nil, nil, err
		}
		labelled = append(labelled, chosen...)
		fresh += len(chosen)
		if fresh < lc.minNew || len(labelled) < retrain.MinWindows {
			continue
		}
		fresh = 0
		slices.Sort(labelled)
		ws := make([]retrain.Window, len(labelled))
		for i, row := range labelled {
			ws[i] = retrain.Window{Time: int64(row), X: test.Row(row), Label: test.Classes[test.Y[row]]}
		}
		rc := lc.rc
		rc.Train = lc.train
		out, err := retrain.Run(ctx, cur, train, ws, &rc)
		if err != nil {
			return nil, nil, fmt.Errorf("retraining after block %d: %w", b+1, err)
		}
		run.Retrains++
		note := fmt.Sprintf("after block %d, %d labels: %s", b+1, len(labelled), out.Why)
		if out.Better {
			run.Promoted++
			cur = out.Model.Model
		}
		run.Notes = append(run.Notes, note)
		if lc.log != nil {
			fmt.Fprintf(lc.log, "loop: %s %g%%: %s (%.0f s)\n", lc.name, lc.frac, note, out.Seconds)
		}
		copies, _ := retrain.Copies(train.N, len(labelled), cmp.Or(lc.rc.MaxCopies, retrain.DefaultMaxCopies))
		plan.Steps = append(plan.Steps, loopStep{After: b, Rows: slices.Clone(labelled), Copies: copies})
	}
	run.Labelled = len(labelled)
	run.Accuracy, run.Balanced = overall(test, pred)
	run.Seconds = time.Since(t0).Seconds()
	return run, plan, nil
}

// chooseLabels picks the rows of block [lo, hi) to label at frac percent:
// unknown first, then the lowest margins, for half the labels at most;
// the rest at random among the others. The rows come back ascending.
func chooseLabels(m *inference.Model, test *data.Dataset, lo, hi int, frac float64, rng *rand.Rand) ([]int, error) {
	n := hi - lo
	k := min(n, max(1, int(math.Round(frac/100*float64(n)))))
	type cand struct {
		row     int
		unknown bool
		margin  float32
	}
	th := m.Thresholds()
	scores := make([]float32, max(len(m.Classes()), 2))
	cands := make([]cand, n)
	for i := range n {
		o, err := m.PredictOutcome(scores, nil, test.Row(lo+i), th)
		if err != nil {
			return nil, err
		}
		cands[i] = cand{lo + i, o.Unknown, o.Margin}
	}
	slices.SortStableFunc(cands, func(a, b cand) int {
		if a.unknown != b.unknown {
			if a.unknown {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.margin, b.margin)
	})
	first := (k + 1) / 2
	out := make([]int, 0, k)
	for _, c := range cands[:first] {
		out = append(out, c.row)
	}
	rest := cands[first:]
	rng.Shuffle(len(rest), func(i, j int) { rest[i], rest[j] = rest[j], rest[i] })
	for _, c := range rest[:k-first] {
		out = append(out, c.row)
	}
	slices.Sort(out)
	return out, nil
}

// loopJob is loop.json of an export: the blocks and each fraction's
// retraining moments, for scripts/peers/loop.py.
type loopJob struct {
	Blocks  int        `json:"blocks"`
	Methods []string   `json:"methods"`
	Plans   []loopPlan `json:"plans"`
}

// loopPeersOutput is what loop.py writes.
type loopPeersOutput struct {
	Runs []LoopRun `json:"runs"`
}

// peers runs scripts/peers/loop.py on the export of train and test (scaled
// by the static model's scaler, tuned on its validation folds) with each
// fraction's plan.
func (f *loopFlags) peers(e *env, name string, static *training.Result, train, test *data.Dataset, methods []string, plans []loopPlan) ([]LoopRun, error) {
	dir := f.workDir
	var err error
	if dir == "" {
		if dir, err = os.MkdirTemp("", "trit-loop-"); err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
	} else {
		dir = filepath.Join(dir, name)
	}
	folds, _, err := training.ValidationFolds(train, &training.Config{Seed: f.seed})
	if err != nil {
		return nil, err
	}
	job := &PeersJob{Dataset: name, Classes: train.Classes, Budget: training.DefaultBudget, Methods: methods,
		Validation: static.Validation, Seed: f.seed, Threads: f.workers, TuneRows: f.tuneRows}
	if err := Export(dir, job, &static.Spec.Scaler, train, test, folds); err != nil {
		return nil, fmt.Errorf("exporting for the peers: %w", err)
	}
	if err := writeJSONFile(filepath.Join(dir, "loop.json"), &loopJob{Blocks: f.blocks, Methods: methods, Plans: plans}); err != nil {
		return nil, err
	}
	cmd := exec.Command(f.python, f.script, dir)
	cmd.Stdout, cmd.Stderr = e.stderr, e.stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s %s: %w", f.python, f.script, err)
	}
	var out loopPeersOutput
	if err := readJSONFile(filepath.Join(dir, "loop_results.json"), &out); err != nil {
		return nil, err
	}
	return out.Runs, nil
}

// writeLoopTable writes the replay's Markdown table: per recording and
// method, the test-period accuracy per label fraction and the accuracy
// per block.
func writeLoopTable(w io.Writer, reports []*LoopReport) {
	fmt.Fprintln(w, "| recording | static (validation) | method | labels | test period accuracy % | Δ vs static | balanced % | retrains (promoted) | accuracy per block % |")
	fmt.Fprintln(w, "|---|---|---|--:|--:|--:|--:|--:|---|")
	for _, r := range reports {
		static := r.Runs[0]
		for _, run := range r.Runs {
			labels := "static"
			if run.Labels > 0 {
				labels = strconv.FormatFloat(run.Labels, 'g', -1, 64) + "%"
			}
			blocks := make([]string, len(run.Blocks))
			for i, a := range run.Blocks {
				blocks[i] = fmt.Sprintf("%.1f", a)
			}
			retrains := "–"
			if run.Labels > 0 {
				retrains = strconv.Itoa(run.Retrains)
				if run.Method == "trit" {
					retrains += fmt.Sprintf(" (%d)", run.Promoted)
				}
			}
			fmt.Fprintf(w, "| %s | %.2f (%.2f) | %s | %s | %.2f | %+.2f | %.2f | %s | %s |\n", r.Dataset, static.Accuracy, r.StaticValAcc,
				run.Method, labels, run.Accuracy, run.Accuracy-static.Accuracy, run.Balanced, retrains, strings.Join(blocks, " · "))
		}
	}
	fmt.Fprintln(w)
	for _, r := range reports {
		fmt.Fprintf(w, "- %s: %d train / %d test rows in %d blocks (%v rows); retraining at %d new labels; %s, %s.\n",
			r.Dataset, r.TrainRows, r.TestRows, len(r.Blocks), r.Blocks, r.MinNew, r.Machine, r.Date)
	}
}

// readJSONFile decodes the JSON file at path into v.
func readJSONFile(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
