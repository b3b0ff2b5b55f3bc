package tritctl

import (
	"fmt"
	"io"
	"os"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/trit-iot/trit/inference/bundle"
	"github.com/trit-iot/trit/internal/cli"
	"github.com/trit-iot/trit/training"
	"github.com/trit-iot/trit/training/data"
	"github.com/trit-iot/trit/training/ternary"
)

// trainSummary is what `tritctl train --json` prints.
type trainSummary struct {
	Dataset      string                `json:"dataset"`
	Read         string                `json:"read,omitempty"`    // how the training file was read
	Accuracy     float64               `json:"accuracy"`          // percent
	Balanced     float64               `json:"balanced_accuracy"` // mean per-class recall, percent
	AccuracyOn   string                `json:"accuracy_on"`       // "test", "validation" or "train"
	EvalRows     int                   `json:"eval_rows"`
	PerClass     []training.ClassScore `json:"per_class"`        // recall and precision on the same rows
	TrainSeconds float64               `json:"train_seconds"`    // search and final fit
	FitSeconds   float64               `json:"fit_seconds"`      // the final fit alone
	Budget       int                   `json:"budget,omitempty"` // bytes; 0 with a fixed --p
	P            int                   `json:"p"`                // random features
	Structure    training.Structure    `json:"structure"`        // thresholds, projection, p, weights
	Classes      int                   `json:"classes"`
	Features     int                   `json:"features"`
	TrainRows    int                   `json:"train_rows"`
	NonZero      int                   `json:"nonzero"`
	Coefficients int                   `json:"coefficients"` // weight vectors × kept columns
	Kept         int                   `json:"kept_columns"`
	Columns      int                   `json:"columns"`     // thresholds + p
	ModelBytes   int                   `json:"model_bytes"` // bundle size; signing does not change it
	Bytes        []bundle.Section      `json:"bytes"`       // where the bundle's bytes go, by section
	Model        string                `json:"model"`
	ModelID      string                `json:"model_id"`
	Release      uint64                `json:"release"`
	Sigma        float64               `json:"sigma"`
	C            float64               `json:"c"`
	Lambda       float64               `json:"lambda"`
	Validation   string                `json:"validation,omitempty"` // how candidates were validated
	Selected     *training.SearchPoint `json:"selected,omitempty"`   // the chosen candidate's validation scores
	Notes        []string              `json:"notes,omitempty"`      // what the search decided and why
	// Warnings say why the scores above may not hold on later data: a
	// class recalled near zero, validation folds that disagree, validation
	// far above the test score.
	Warnings     []string `json:"warnings"` // [] when there are none
	SearchPoints int      `json:"search_points"`
	Seed         uint64   `json:"seed"`
	Loss         string   `json:"loss"`
	Reg          string   `json:"reg"`
	// Search lists every candidate the search scored (with --verbose).
	Search []training.SearchPoint `json:"search,omitempty"`
}

type trainFlags struct {
	data       dataFlags
	synth      syntheticFlags
	out        string
	force      bool
	cpuProfile string
	test       string
	p          int
	budget     int
	weights    string
	embedding  string
	treePlanes int
	thresholds int
	projection int
	search     string
	scaling    string
	folds      int
	sigma, c   float64
	sigmaGrid  string
	cGrid      string
	validation float64
	unknown    float64
	seed       uint64
	loss, reg  string
	init       string
	initRows   int
	workers    int
	json       bool
	verbose    bool
	modelID    string
	release    uint64
	hardware   string
	minAgent   string
}

func newTrainCmd(e *env) *cobra.Command {
	f := &trainFlags{}
	cmd := &cobra.Command{
		Use:   "train [flags] TRAIN_FILE",
		Short: "Train a model from labelled data",
		Long: `Train a ternary-coefficient model on TRAIN_FILE (CSV with ',', ';', tab or
white-space columns and an optional header row, ARFF, LIBSVM or MNIST IDX;
.gz/.bz2/.xz are read transparently) and write it to --out. docs/DATA.md has
the rules for headers, label and time columns; columns are numbered from 1.

With --synthetic machine the data is simulated instead: vibrating machines
(normal, imbalance, bearing_fault) through the feature pipeline of
--features-from (an agent's config file, so the model's feature names are
exactly those the agent computes), with --hold-out of them as the test set.

σ and C are chosen on a validation split of the training data unless given
(--sigma, --c). With --test, the model is evaluated on that file afterwards.

The model is written as an unsigned bundle (docs/BUNDLE.md), the format
gateways run; sign it with 'tritctl bundle sign' before shipping. The
bundle's scaler is float16, and training uses exactly that scaler, so the
bundle predicts what was evaluated here.`,
		Example: `  tritctl train room.csv --label-column Occupancy -o room.trit      # header, delimiter, Date,Time columns detected
  tritctl train room.csv --label-column Occupancy --sigma 4 --c 1 -o m.trit --test room-next-week.csv --json
  tritctl train eu.csv --decimal , --label-column last -o eu.trit    # decimal commas the first rows do not show
  tritctl train --synthetic machine --features-from agent.toml --p 1024 -o machine.trit
  tritctl train --standard usps -o usps.trit
  tritctl train --standard mnist --sigma 16 --c 0.01 -o mnist.trit --model-id mnist-digits --release 3`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runTrain(e, f, args) },
	}
	f.data.add(cmd)
	f.synth.add(cmd)
	fl := cmd.Flags()
	fl.StringVarP(&f.out, "out", "o", "", "bundle file to write (required; an unsigned bundle there is replaced, anything else needs --force)")
	fl.BoolVar(&f.force, "force", false, "replace --out whatever it holds (a signed bundle, a data file)")
	fl.StringVar(&f.modelID, "model-id", "", "model ID in the bundle (default: the --standard name, else the output file's name up to its first dot)")
	fl.Uint64Var(&f.release, "release", 1, "release counter in the bundle, >= 1; agents refuse a release not above the one they run")
	fl.StringVar(&f.hardware, "hardware", "", "hardware/sensor-set label in the bundle (default: any)")
	fl.StringVar(&f.minAgent, "min-agent", "", minAgentHelp)
	fl.StringVar(&f.test, "test", "", "labelled data to evaluate the trained model on")
	fl.IntVar(&f.budget, "budget", training.DefaultBudget, "size of the signed bundle to fill, in bytes: training chooses the embedding and the number of random features to fit it")
	fl.IntVar(&f.p, "p", 0, "fix the number of random features (the paper's experiments) instead of filling --budget")
	fl.StringVar(&f.weights, "weights", "", "weights: ternary, binary or auto (default: auto with --budget, ternary with --p)")
	fl.IntVar(&f.treePlanes, "tree-planes", 2, "columns per leaf of boosted trees: B planes give each leaf an integer weight in ±(2^B−1) (1: one ternary weight per leaf)")
	fl.StringVar(&f.embedding, "embedding", "auto", "with --budget: which embeddings the search considers: auto (from the data's shape), kernel (random features alone, the paper's), mix, thresholds, projection or trees (for ablations)")
	fl.IntVar(&f.thresholds, "thresholds", 0, "threshold bits per input feature (0: the search decides with --budget, none with --p)")
	fl.IntVar(&f.projection, "projection", 0, "principal directions before the random features (0: the search decides with --budget, none with --p)")
	fl.StringVar(&f.search, "search", "halving", "search: halving (small fits first, the best at full size) or grid (every σ×C at full size)")
	fl.StringVar(&f.scaling, "scaling", "robust", "input scaling: robust (quantile ranges, clipped) or minmax (training extremes, the paper's)")
	fl.IntVar(&f.folds, "folds", 0, "validation folds: forward folds of a recording (0: 3), stratified folds of shuffled rows (0: one hold-out)")
	fl.Float64Var(&f.sigma, "sigma", 0, "Gaussian kernel width σ (0: search --sigma-grid)")
	fl.Float64Var(&f.c, "c", 0, "regularisation C, as in a linear SVM (0: search --c-grid)")
	fl.StringVar(&f.sigmaGrid, "sigma-grid", "", "comma-separated σ values to search (default 2^-5…2^5)")
	fl.StringVar(&f.cGrid, "c-grid", "", "comma-separated C values to search (default 1e-3…1e3)")
	fl.Float64Var(&f.validation, "validation", 0, "share of the training rows the search validates on (0: the latest 30% of a recording, a random 20% of shuffled rows)")
	fl.Float64Var(&f.unknown, "unknown-target", training.DefaultUnknownTarget, "share of validation windows the bundle's unknown thresholds aim at (a calibrated format-5 bundle, agents 0.5.0 on); negative: no calibration, the format older agents read")
	fl.Uint64Var(&f.seed, "seed", 1, "seed of the transform, splits and initialisation")
	fl.StringVar(&f.loss, "loss", "hinge", "loss: hinge, squared-hinge, logistic or square")
	fl.StringVar(&f.reg, "reg", "l2", "regulariser: l2 or l1")
	fl.StringVar(&f.init, "init", "svm", "initialisation: svm (linear SVM on a subset) or random")
	fl.IntVar(&f.initRows, "init-rows", 2000, "rows for the linear SVM initialisation")
	fl.IntVar(&f.workers, "workers", 0, "goroutines (0: all cores)")
	fl.BoolVar(&f.json, "json", false, "print one JSON object instead of text")
	fl.BoolVar(&f.verbose, "verbose", false, "also list every candidate the search scored (in --json, the search array)")
	fl.StringVar(&f.cpuProfile, "cpuprofile", "", "write a CPU profile of the run to this file, for 'go tool pprof' (where the search spends its time: docs/BENCHMARKS.md)")
	return cmd
}

// structureFlags refuses the size and structure flags that would be
// ignored beside one another: --p fixes the random features instead of
// filling --budget, and --embedding limits the budgeted search, which
// --p, --thresholds and --projection replace by a structure of their own
// (training.Config).
func structureFlags(cmd *cobra.Command, p, thresholds, projection int) error {
	changed := func(name string) bool { return cmd != nil && cmd.Flags().Changed(name) } // false for a flag cmd lacks
	if p > 0 && changed("budget") {
		return usagef("--budget cannot be combined with --p: --p fixes the number of random features instead of filling a budget")
	}
	if changed("embedding") && (p > 0 || thresholds > 0 || projection > 0) {
		return usagef("--embedding chooses what the budgeted search considers: it cannot be combined with --p, --thresholds or --projection, which fix the structure")
	}
	return nil
}

// minAgentHelp is the help of --min-agent, whose default depends on the
// model (bundle.MinAgentVersionFor): a lower version is raised to it.
const minAgentHelp = "oldest agent version (major.minor.patch) that may run the bundle (default, and at least: the first agent that reads the model's bundle format — 0.5.0 for a calibrated model, the default; 0.2.0 for an uncalibrated one without trees)"

// trainGCPercent is the collector's target while tritctl trains, unless
// GOGC says otherwise: training allocates large arrays (embeddings, dense
// starts) that live briefly, and Go's default lets the heap grow to twice
// the live data between collections — on mnist, a 1.17 GB peak for 630 MB
// of live data.
const trainGCPercent = 50

func runTrain(e *env, f *trainFlags, args []string) (err error) {
	if f.cpuProfile != "" {
		stop, perr := startCPUProfile(f.cpuProfile)
		if perr != nil {
			return perr
		}
		defer func() {
			if serr := stop(); err == nil {
				err = serr
			}
		}()
	}
	return train(e, f, args)
}

func train(e *env, f *trainFlags, args []string) error {
	if os.Getenv("GOGC") == "" {
		defer debug.SetGCPercent(debug.SetGCPercent(trainGCPercent))
	}
	sources := len(args) + btoi(f.data.standard != "") + btoi(f.synth.name != "")
	switch {
	case sources == 0 && f.out == "":
		return usagef("give the data to train on and the model file to write: tritctl train FILE.csv -o MODEL.trit (or --standard NAME, --synthetic machine instead of FILE.csv; tritctl train --help has examples)")
	case sources != 1:
		return usagef("give one of TRAIN_FILE, --standard NAME or --synthetic NAME")
	case f.out == "":
		return usagef("--out is required: the model file to write (-o MODEL.trit)")
	}
	if err := checkTrainOut(f.out, f.force); err != nil {
		return err
	}
	if f.release == 0 {
		return usagef("--release must be at least 1")
	}
	if err := structureFlags(f.data.cmd, f.p, f.thresholds, f.projection); err != nil {
		return err
	}
	loss, err := ternary.ParseLoss(f.loss)
	if err != nil {
		return &cli.UsageError{Err: err}
	}
	reg, err := ternary.ParseReg(f.reg)
	if err != nil {
		return &cli.UsageError{Err: err}
	}
	sg, err := cli.ParseGrid("sigma-grid", f.sigmaGrid)
	if err != nil {
		return err
	}
	cg, err := cli.ParseGrid("c-grid", f.cGrid)
	if err != nil {
		return err
	}
	var train, test *data.Dataset
	if f.synth.name != "" {
		if err := f.data.noReadFlags("--synthetic simulates its data: give no flags that say how to read a file with it"); err != nil {
			return err
		}
		if f.test != "" {
			return usagef("--test cannot be combined with --synthetic (a held-out part, --hold-out, is the test set)")
		}
		if train, test, err = f.synth.sets(f.seed); err != nil {
			return err
		}
	} else if f.data.standard != "" {
		if err := f.data.standardOnly(); err != nil {
			return err
		}
		if train, test, err = f.data.standardSets(); err != nil {
			return err
		}
		if f.test != "" {
			return usagef("--test cannot be combined with --standard (its test split is used)")
		}
	} else {
		if train, err = f.data.load(args[0]); err != nil {
			return err
		}
		if len(train.Classes) == 1 {
			return fmt.Errorf("%s: every one of its %d rows has the label %q: a classifier needs at least two classes (is the label column right? it is %s)",
				train.Name, train.N, train.Classes[0], labelColumnOf(train))
		}
		if train.Spec != nil && !f.json {
			fmt.Fprintf(e.stderr, "reading %s: %s\n", train.Name, train.Spec.Describe())
		}
		if f.test != "" {
			if !f.json {
				f.data.notes = e.stderr
			}
			if test, err = f.data.loadTest(f.test, train); err != nil {
				return err
			}
		}
	}
	prog := &progress{e: e, quiet: f.json}
	cfg := &training.Config{
		Budget: f.budget, P: f.p, Weights: f.weights, Embedding: f.embedding, TreePlanes: f.treePlanes, Thresholds: f.thresholds, Projection: f.projection,
		Search: f.search, Scaling: f.scaling, Folds: f.folds,
		Sigma: f.sigma, C: f.c, SigmaGrid: sg, CGrid: cg, Validation: f.validation, UnknownTarget: f.unknown,
		Seed: f.seed, Loss: loss, Reg: reg, Init: f.init, InitRows: f.initRows, Workers: f.workers,
		Progress: prog.report,
	}
	if f.p > 0 {
		cfg.Budget = 0
	}
	if len(args) == 0 && train.Spec != nil && !f.json {
		fmt.Fprintf(e.stderr, "reading %s: %s\n", train.Name, train.Spec.Describe())
	}
	res, err := training.Train(train, cfg)
	prog.finish()
	if err != nil {
		return err
	}
	modelID := f.modelID
	if modelID == "" {
		modelID = f.data.standard
	}
	if modelID == "" {
		modelID = f.synth.name
	}
	if modelID == "" {
		modelID = modelIDFromPath(f.out)
	}
	raw, err := res.Bundle(train, training.BundleMeta{ModelID: modelID, Release: f.release, Hardware: f.hardware, MinAgent: f.minAgent})
	if err != nil {
		return err
	}
	if err := writeFileAtomic(f.out, raw, 0o644, true); err != nil {
		return err
	}
	size := len(raw)
	if size > bundle.DefaultMaxSize {
		fmt.Fprintf(e.stderr, "tritctl: warning: %s is %d bytes, above the %d-byte cap agents apply by default\n", f.out, size, bundle.DefaultMaxSize)
	}
	bd, err := bundle.Inspect(raw)
	if err != nil {
		return fmt.Errorf("inspecting the bundle just written: %w", err)
	}
	spec := res.Spec
	s := trainSummary{
		Dataset: train.Name, TrainSeconds: res.TrainSeconds, FitSeconds: res.FitSeconds, Budget: cfg.Budget,
		P: spec.Transform.P, Structure: res.Structure, Classes: len(train.Classes),
		Features: train.D, TrainRows: train.N, NonZero: res.NonZero,
		Coefficients: len(spec.Sign) * len(spec.Kept), Kept: len(spec.Kept), Columns: spec.Columns(),
		ModelBytes: size, Bytes: bd.Sections, Model: f.out,
		ModelID: modelID, Release: f.release,
		Sigma: res.Sigma, C: res.C, Lambda: res.Lambda, Validation: res.Validation, Selected: res.Selected, Notes: res.Notes,
		SearchPoints: len(res.Search), Seed: f.seed,
		Loss: loss.String(), Reg: reg.String(), Warnings: res.Warnings,
	}
	if f.verbose {
		s.Search = res.Search
	}
	if train.Spec != nil {
		s.Read = train.Spec.Describe()
	}
	var ev *training.Evaluation
	switch {
	case test != nil:
		s.AccuracyOn = "test"
		ev, err = training.Evaluate(res.Model, test, f.workers)
	default:
		s.AccuracyOn = "train"
		ev, err = training.Evaluate(res.Model, train, f.workers)
	}
	if err != nil {
		return err
	}
	s.Accuracy, s.Balanced, s.EvalRows, s.PerClass = ev.Accuracy, ev.Balanced, ev.N, ev.PerClass
	if test != nil {
		s.Warnings = append(s.Warnings, res.TestWarnings(ev)...)
	}
	if f.json {
		if s.Warnings == nil {
			s.Warnings = []string{}
		}
		return writeJSON(e.stdout, s)
	}
	printTrainSummary(e, &s, res, f.verbose)
	return nil
}

func printTrainSummary(e *env, s *trainSummary, res *training.Result, verbose bool) {
	w := e.stdout
	st := s.Structure
	weights := "ternary"
	if st.Binary {
		weights = "binary"
	}
	fmt.Fprintf(w, "trained %s: %d rows, %d features, %d classes\n", s.Dataset, s.TrainRows, s.Features, s.Classes)
	if s.Read != "" {
		fmt.Fprintf(w, "  read as: %s\n", s.Read)
	}
	leaves := st.Trees << st.Depth * max(st.Planes, 1)
	fmt.Fprintf(w, "  embedding: %d threshold bits", s.Columns-s.P-leaves)
	if st.Trees > 0 {
		fmt.Fprintf(w, ", %d boosted trees of depth %d (%d leaf columns", st.Trees, st.Depth, leaves)
		if st.Planes > 1 {
			fmt.Fprintf(w, ": %d planes, leaf weights in ±%d", st.Planes, 1<<st.Planes-1)
		}
		fmt.Fprintf(w, ")")
	}
	if st.Projection > 0 {
		fmt.Fprintf(w, ", %d random features on %d principal directions", s.P, st.Projection)
	} else {
		fmt.Fprintf(w, ", %d random features", s.P)
	}
	fmt.Fprintf(w, "; %s weights\n", weights)
	// σ is the random features' kernel width: a model without them
	// (threshold bits, trees) has none to show.
	params := fmt.Sprintf("σ = %g, C = %g", s.Sigma, s.C)
	if s.P == 0 {
		params = fmt.Sprintf("C = %g (no random features, so no σ)", s.C)
	}
	if s.Selected != nil {
		fmt.Fprintf(w, "  %s: best of %d candidates on %s (balanced accuracy %.2f%%)\n", params, s.SearchPoints, s.Validation, s.Selected.Balanced)
	} else {
		fmt.Fprintf(w, "  %s\n", params)
	}
	for _, n := range s.Notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
	fmt.Fprintf(w, "  non-zero coefficients: %d of %d (%.1f%%); columns kept: %d of %d\n",
		s.NonZero, s.Coefficients, 100*float64(s.NonZero)/float64(max(1, s.Coefficients)), s.Kept, s.Columns)
	if len(s.PerClass) > 1 && len(s.PerClass) <= 20 {
		on := s.AccuracyOn
		if on == "train" {
			on = "training"
		}
		fmt.Fprintf(w, "  recall per class on the %s rows:", on)
		for i, c := range s.PerClass {
			sep := ";"
			if i == len(s.PerClass)-1 {
				sep = ""
			}
			fmt.Fprintf(w, " %s %.1f%% of %d%s", c.Class, c.Recall, c.Rows, sep)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "  training time: %.1f s (final fit %.1f s)\n", s.TrainSeconds, s.FitSeconds)
	if f := s.Selected; f != nil && len(f.Folds) > 1 {
		fmt.Fprintf(w, "  validation per fold (balanced accuracy, earliest first):")
		for _, b := range f.Folds {
			fmt.Fprintf(w, " %.1f%%", b)
		}
		fmt.Fprintln(w)
	}
	budget := ""
	if s.Budget > 0 {
		budget = fmt.Sprintf(" of a %d-byte budget", s.Budget)
	}
	fmt.Fprintf(w, "  model: %s (unsigned bundle, %d bytes%s; model ID %q, release %d)\n", s.Model, s.ModelBytes, budget, s.ModelID, s.Release)
	fmt.Fprintf(w, "  bytes:")
	for _, sec := range s.Bytes {
		if sec.Size > 1 {
			fmt.Fprintf(w, " %s %d;", sec.Name, sec.Size)
		}
	}
	fmt.Fprintln(w)
	if verbose {
		printSearch(w, res.Search)
	}
	printResult(w, s)
}

// printResult ends train's text output with what a person reads first:
// accuracy and balanced accuracy, the weakest class, and the warnings.
func printResult(w io.Writer, s *trainSummary) {
	on := fmt.Sprintf("on the %d test rows", s.EvalRows)
	if s.AccuracyOn != "test" {
		on = fmt.Sprintf("on the %d training rows (optimistic: evaluate on later data with --test FILE", s.EvalRows)
		if s.Selected != nil {
			on += fmt.Sprintf("; validation said %.1f%% balanced", s.Selected.Balanced)
		}
		on += ")"
	}
	fmt.Fprintf(w, "result: accuracy %.2f%%, balanced accuracy %.2f%% %s\n", s.Accuracy, s.Balanced, on)
	weakest := -1
	for i, c := range s.PerClass {
		if c.Rows > 0 && (weakest < 0 || c.Recall < s.PerClass[weakest].Recall) {
			weakest = i
		}
	}
	switch {
	case weakest < 0 || len(s.PerClass) < 2:
	case s.PerClass[weakest].Recall == 100:
		fmt.Fprintln(w, "weakest class: none, every class recalled in full")
	default:
		c := s.PerClass[weakest]
		fmt.Fprintf(w, "weakest class: %q, recall %.1f%% of %d rows\n", c.Class, c.Recall, c.Rows)
	}
	for _, warn := range s.Warnings {
		fmt.Fprintf(w, "warning: %s\n", warn)
	}
}

// printSearch lists the candidates the search scored, in the order it
// scored them.
func printSearch(w io.Writer, points []training.SearchPoint) {
	fmt.Fprintf(w, "search (%d candidates):\n", len(points))
	fmt.Fprintf(w, "  %-5s %-10s %-7s %8s %8s %6s %7s %9s %7s %7s %7s %8s\n", "round", "embedding", "weights", "size", "σ", "C", "rows", "balanced", "spread", "score", "bytes", "fit s")
	for _, p := range points {
		size := fmt.Sprintf("p %d", p.P)
		switch p.Embedding() {
		case "trees":
			size = fmt.Sprintf("%d×d%d", p.Trees, p.Depth)
		case "thresholds":
			size = fmt.Sprintf("t %d", p.Thresholds)
		}
		weights := "ternary"
		if p.Binary {
			weights = "binary"
		}
		deg := ""
		if p.Degenerate != "" {
			deg = " degenerate"
		}
		fmt.Fprintf(w, "  %-5d %-10s %-7s %8s %8g %6g %7d %8.2f%% %7.2f %7.2f %7d %8.2f%s\n",
			p.Stage, p.Embedding(), weights, size, p.Sigma, p.C, p.Rows, p.Balanced, p.Spread, p.Score, p.Bytes, p.FitSeconds, deg)
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// labelColumnOf describes the label column ds was read with, for messages.
func labelColumnOf(ds *data.Dataset) string {
	if ds.Spec == nil || ds.Spec.Label.IsZero() {
		return "the format's label"
	}
	c := ds.Spec.Label
	if c.Name != "" {
		return fmt.Sprintf("column %d %q", c.Index, c.Name)
	}
	return fmt.Sprintf("column %d", c.Index)
}
