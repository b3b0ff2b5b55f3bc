package benchmark

import (
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/trit-iot/trit/training"
)

// The shift suite: trit's default judged where it matters — on the later
// or unseen rows of every recorded or group-shifted dataset — beside what
// a user would pick instead, each tuned on the same validation folds.

// ShiftSuite is the suite's datasets: every standard dataset whose test
// rows are later (a chronological split) or from groups not trained on.
// wall-following is here by its chronological alternative; its standard
// split is random.
var ShiftSuite = []string{"occupancy", "eeg-eye-state", "wall-following-chrono", "electricity", "noaa-weather",
	"ozone-eighthr", "seismic-bumps", "ujiindoorloc", "weather-aus"}

// rankedMethods compete for the suite's ranks; majority is a reference
// (the floor no model should be below), not a competitor.
var rankedMethods = []string{"trit", "mlp-int8", "xgboost", "logreg", "stump"}

// suitePeers is the suite's default --methods.
const suitePeers = "mlp-int8,xgboost,logreg,stump,majority"

// SuiteReport is what `trit-bench suite -o` writes: every set's report
// and the summary across them.
type SuiteReport struct {
	Sets    []*PeersReport `json:"sets"`
	Summary SuiteSummary   `json:"summary"`
	// LODO: with --variants, the selection rule each held-out set would
	// have been given by the other sets, and trit's score there.
	LODO *LODOReport `json:"lodo,omitempty"`
}

// Variant is a candidate default of the search's selection rule that the
// suite compares by leaving one dataset out.
type Variant struct {
	Name      string             `json:"name"`
	Selection training.Selection `json:"selection"`
}

// Variants are the presets --variants names: each differs from
// training.DefaultSelection in one or two settings.
var Variants = []Variant{
	{"default", training.DefaultSelection},
	{"balanced-floor0", training.Selection{Metric: "balanced", Stability: 0.5, Floor: -1}},
	{"balanced-floor1", training.Selection{Metric: "balanced", Stability: 0.5, Floor: 1}},
	{"balanced-floor2", training.Selection{Metric: "balanced", Stability: 0.5, Floor: 2}},
	{"mean", training.Selection{Metric: "mean", Stability: 0.5, Floor: -1}},
	{"mean-floor1", training.Selection{Metric: "mean", Stability: 0.5, Floor: 1}},
	{"mean-floor2", training.Selection{Metric: "mean", Stability: 0.5, Floor: 2}},
	{"balanced-steady", training.Selection{Metric: "balanced", Stability: 1, Floor: -1}},
	{"every-kind", training.Selection{Metric: "balanced", Stability: 0.5, Floor: -1, EveryKind: true}},
	{"every-kind-floor1", training.Selection{Metric: "balanced", Stability: 0.5, Floor: 1, EveryKind: true}},
	{"mean-every-kind", training.Selection{Metric: "mean", Stability: 0.5, Floor: -1, EveryKind: true}},
	{"offsets", training.Selection{Metric: "balanced", Stability: 0.5, Floor: -1, Offsets: true}},
	{"mean-offsets", training.Selection{Metric: "mean", Stability: 0.5, Floor: -1, Offsets: true}},
	{"fallback-nearest", training.Selection{Metric: "balanced", Stability: 0.5, Floor: 1, Fallback: "nearest"}},
	{"fallback-majority", training.Selection{Metric: "balanced", Stability: 0.5, Floor: 1, Fallback: "majority"}},
}

// variantMethod is the method name of trit's result under variant v.
func variantMethod(v string) string { return "trit:" + v }

// LODOReport is leave-one-dataset-out: for each set, the variant that did
// best on the other sets, and trit's result on the set under it.
type LODOReport struct {
	Variants []string  `json:"variants"`
	Sets     []LODOSet `json:"sets"`
	// AllSets is each variant's objective over every set: the default is
	// the variant with the best (docs/TRAINING.md "How the defaults are
	// chosen"); Sets estimates how well that way of choosing carries to a
	// set it was not chosen on.
	AllSets map[string]float64 `json:"objective_all_sets"`
	// Misses is each variant's count, over every set, of issue 36's bars
	// missed (standing): the objective compares it first.
	Misses  map[string]int `json:"misses_all_sets"`
	Summary SuiteSummary   `json:"summary"` // the suite's summary with trit's results replaced by the LODO ones
}

// LODOSet is one held-out set's LODO choice.
type LODOSet struct {
	Dataset string `json:"dataset"`
	// Chosen is the variant with the best objective on the other sets:
	// the fewest bars missed there (Misses), then the best Objective (mean
	// over those sets of trit's deficit to the best other ranked method,
	// the mean of accuracy and balanced accuracy, points).
	Chosen    string  `json:"chosen"`
	Misses    int     `json:"misses"`
	Objective float64 `json:"objective"`
	Accuracy  float64 `json:"accuracy"` // trit under Chosen on this set
	Balanced  float64 `json:"balanced"`
}

// SuiteSummary is the suite's verdict on trit against the ranked peers.
type SuiteSummary struct {
	Methods []string `json:"methods"` // ranked, in order
	// MeanRank is each method's mean rank over the sets (1 = best; ties
	// share the mean of their ranks), by accuracy and by balanced
	// accuracy.
	MeanRank         map[string]float64 `json:"mean_rank_accuracy"`
	MeanRankBalanced map[string]float64 `json:"mean_rank_balanced"`
	// Per set: trit's deficit to the best other ranked method (negative:
	// behind), in accuracy and balanced accuracy, points.
	Deficits []SetDeficit `json:"deficits"`
	// The worst of them.
	WorstDeficit         float64 `json:"worst_deficit"`
	WorstDeficitBalanced float64 `json:"worst_deficit_balanced"`
	// Sets where trit is below the majority class in accuracy without
	// being above it in balanced accuracy by 10 points or more.
	BelowMajority []string `json:"below_majority,omitempty"`
	// WorstVsPicked is the worst of the sets' PickedAccuracy and
	// PickedBalanced (0 when no set has a pick).
	WorstVsPicked         float64 `json:"worst_vs_picked"`
	WorstVsPickedBalanced float64 `json:"worst_vs_picked_balanced"`
}

// SetDeficit is trit's standing on one set.
type SetDeficit struct {
	Dataset  string  `json:"dataset"`
	Accuracy float64 `json:"accuracy"` // trit − the best other ranked method, points
	Balanced float64 `json:"balanced"`
	Best     string  `json:"best"` // the best other ranked method in accuracy
	// Rank is trit's rank among the ranked methods in accuracy and
	// balanced accuracy.
	Rank, RankBalanced float64
	// Picked is the other ranked method that the validation folds rank
	// first (the best validation balanced accuracy; the first in the
	// methods' order among equals): what a user choosing among the
	// peers on the same folds would ship. "" when no other method states
	// a validation score. PickedAccuracy and PickedBalanced are trit
	// minus it on the test rows, points.
	Picked         string  `json:"picked,omitempty"`
	PickedAccuracy float64 `json:"picked_accuracy"`
	PickedBalanced float64 `json:"picked_balanced"`
}

func newSuiteCmd(e *env) *cobra.Command {
	f := &peersFlags{}
	cmd := &cobra.Command{
		Use:   "suite [flags]",
		Short: "Judge trit's default on the shift suite: later and unseen rows, beside the peers tuned on the same folds",
		Long: `For every dataset of the shift suite (the recordings and group-shifted sets
of ../shared/data with their standard splits: ` + strings.Join(ShiftSuite, ", ") + `),
train trit with the defaults of 'tritctl train' and run the peers on exactly
what trit saw — its scaled rows and its validation folds (forward in time for
recordings, whole groups left out for grouped sets), each peer tuned on those
folds by balanced accuracy and refitted on all training rows:

  mlp-int8   one hidden layer, int8 weights, sized to the budget
  xgboost    gradient-boosted trees cut to the budget
  logreg     logistic regression on standardized inputs, int8 weights
  stump      one threshold on one feature (a depth-1 tree)
  majority   the training rows' most common class (a reference, not ranked)

It reports, per set, each method's accuracy and balanced accuracy on the
test rows, its calibration error there (trit: its shipped confidence; the
peers: their predicted probability), trit's unknown rate and whether it
rises with the errors, the validation-to-test gap, bytes and training time;
then each method's mean rank over the sets among trit, mlp-int8, xgboost,
logreg and stump, and trit's worst deficit to the best of them.

With --work-dir the peers' results are kept per dataset and reused while
what they were given (rows, scaling, folds, methods, settings) is the same,
so a change to trit's search re-runs only trit.`,
		Example: `  trit-bench suite -o suite.json
  trit-bench suite --standard ozone-eighthr,seismic-bumps --work-dir /tmp/suite`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runSuite(e, f, strings.Join(os.Args, " "))
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.data.standard, "standard", strings.Join(ShiftSuite, ","), "comma-separated standard datasets")
	fl.StringVar(&f.data.dataDir, "data-dir", defaultDataDir(), "directory of the standard datasets (env TRIT_DATA)")
	fl.IntVar(&f.budget, "budget", training.DefaultBudget, "bytes each model may take on the gateway")
	fl.StringVar(&f.methods, "methods", suitePeers, "comma-separated peers ("+strings.Join(knownPeers, ", ")+`; "": trit alone, which needs no Python)`)
	fl.StringVarP(&f.out, "out", "o", "", "also write the report to this JSON file, after each dataset")
	fl.BoolVar(&f.force, "force", false, "replace --out if it exists")
	fl.StringVar(&f.python, "python", "/usr/bin/python3", "Python with scikit-learn and XGBoost")
	fl.StringVar(&f.script, "script", "scripts/peers/peers.py", "the peers script")
	fl.StringVar(&f.workDir, "work-dir", "", "export here and keep the peers' results for reuse (default: a temporary directory, removed)")
	fl.Uint64Var(&f.seed, "seed", 1, "seed of trit and of the peers")
	fl.IntVar(&f.workers, "workers", 0, "goroutines for trit, threads for XGBoost (0: all cores)")
	fl.IntVar(&f.tuneRows, "tune-rows", 20000, "peers tune on at most this many rows of each fold's training part (0: all)")
	fl.IntVar(&f.fitRows, "fit-rows", 0, "peers' final fit on at most this many training rows (0: all, as trit)")
	fl.IntVar(&f.rbfRows, "rbf-rows", 10000, "rbf-svm (with --methods) trains on at most this many rows (a seeded stratified subsample; 0: skip rbf-svm)")
	fl.StringVar(&f.variants, "variants", "", "also train trit under these selection presets and report leave-one-dataset-out\n(all: every preset; "+strings.Join(variantNames(), ", ")+")")
	fl.StringSliceVar(&f.merge, "merge", nil, "train nothing: join the sets of these earlier reports (-o files; a set in several: the later file's), summarise them and, over the presets every set has (or --variants), leave one dataset out")
	return cmd
}

// mergeSuite joins the sets of earlier suite reports (a set reported by
// several: the later file's), and summarises them as runSuite would have
// had it run them together; variants, when empty, are the presets every
// set has a result for.
func mergeSuite(files []string, variants []string) (*SuiteReport, error) {
	rep := &SuiteReport{}
	for _, path := range files {
		var r SuiteReport
		if err := readJSONFile(path, &r); err != nil {
			return nil, err
		}
		for _, s := range r.Sets {
			if i := slices.IndexFunc(rep.Sets, func(x *PeersReport) bool { return x.Dataset == s.Dataset }); i >= 0 {
				rep.Sets[i] = s
			} else {
				rep.Sets = append(rep.Sets, s)
			}
		}
	}
	if len(rep.Sets) == 0 {
		return nil, fmt.Errorf("--merge: no sets in %s", strings.Join(files, ", "))
	}
	if len(variants) == 0 {
		for _, v := range Variants {
			every := true
			for _, s := range rep.Sets {
				every = every && resultOf(s, variantMethod(v.Name)) != nil
			}
			if every {
				variants = append(variants, v.Name)
			}
		}
	}
	ranked := rankedIn(rep.Sets)
	rep.Summary = summarise(rep.Sets, ranked)
	if len(variants) > 0 {
		rep.LODO = leaveOneOut(rep.Sets, variants, ranked)
	}
	return rep, nil
}

func variantNames() []string {
	var out []string
	for _, v := range Variants {
		out = append(out, v.Name)
	}
	return out
}

// variantsOf parses --variants.
func variantsOf(list string) ([]Variant, error) {
	if strings.TrimSpace(list) == "" {
		return nil, nil
	}
	if strings.TrimSpace(list) == "all" {
		return Variants, nil
	}
	var out []Variant
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		i := slices.IndexFunc(Variants, func(v Variant) bool { return v.Name == name })
		if i < 0 {
			return nil, usagef("--variants: %q is not one of %s", name, strings.Join(variantNames(), ", "))
		}
		out = append(out, Variants[i])
	}
	return out, nil
}

func runSuite(e *env, f *peersFlags, command string) error {
	if len(f.merge) > 0 {
		if _, err := os.Lstat(f.out); f.out != "" && err == nil && !f.force {
			return fmt.Errorf("%s: file exists (use --force to replace it)", f.out)
		}
		vs, err := variantsOf(f.variants)
		if err != nil {
			return err
		}
		rep, err := mergeSuite(f.merge, variantNamesOf(vs))
		if err != nil {
			return err
		}
		if f.out != "" {
			if err := writeJSONFile(f.out, rep); err != nil {
				return err
			}
		}
		writeSuiteTable(e.stdout, rep)
		return nil
	}
	_, methods, err := f.check()
	if err != nil {
		return err
	}
	variants, err := variantsOf(f.variants)
	if err != nil {
		return err
	}
	if err := f.ready(nil, methods); err != nil {
		return err
	}
	rep := &SuiteReport{}
	for _, name := range f.data.names() {
		r, err := f.one(e, name, nil, methods, command)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if len(variants) > 0 {
			train, test, err := f.data.loadStandard(name)
			if err != nil {
				return err
			}
			for _, v := range variants {
				if v.Selection == training.DefaultSelection {
					// The default's result is trit's own: not trained twice.
					if t := resultOf(r, "trit"); t != nil {
						tr := *t
						tr.Method = variantMethod(v.Name)
						r.Results = append(r.Results, tr)
						continue
					}
				}
				cfg := f.config(f.budget, nil)
				cfg.Selection = v.Selection
				tr, _, err := f.tritWith(train, test, cfg, name)
				if err != nil {
					return fmt.Errorf("%s, variant %s: %w", name, v.Name, err)
				}
				tr.Method = variantMethod(v.Name)
				fmt.Fprintf(e.stderr, "suite: %s trit under %s: %.2f%% (balanced %.2f%%), %d bytes, %.1f s\n", name, v.Name, tr.Accuracy, tr.Balanced, tr.Bytes, tr.TrainSeconds)
				r.Results = append(r.Results, *tr)
			}
		}
		rep.Sets = append(rep.Sets, r)
		ranked := rankedIn(rep.Sets)
		rep.Summary = summarise(rep.Sets, ranked)
		if len(variants) > 0 {
			rep.LODO = leaveOneOut(rep.Sets, variantNamesOf(variants), ranked)
		}
		if f.out != "" {
			if err := writeJSONFile(f.out, rep); err != nil {
				return err
			}
		}
	}
	writeSuiteTable(e.stdout, rep)
	return nil
}

func variantNamesOf(vs []Variant) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.Name)
	}
	return out
}

// standing is method m's mean deficit on r to the best other ranked
// method in accuracy and balanced accuracy (points), and how many of issue
// 36's bars it misses there: more than 1.0 point behind the best other
// ranked method in accuracy, the same in balanced accuracy, and below the
// majority class in accuracy without 10 points more balanced accuracy; ok
// is false when a result is missing.
func standing(r *PeersReport, m string, ranked []string) (deficit float64, misses int, ok bool) {
	t := resultOf(r, m)
	if t == nil {
		return 0, 0, false
	}
	bestAcc, bestBal := math.Inf(-1), math.Inf(-1)
	for _, o := range ranked {
		if o == "trit" {
			continue
		}
		p := resultOf(r, o)
		if p == nil {
			return 0, 0, false
		}
		bestAcc, bestBal = max(bestAcc, p.Accuracy), max(bestBal, p.Balanced)
	}
	if math.IsInf(bestAcc, -1) {
		return 0, 0, false // trit alone: no deficit
	}
	if t.Accuracy < bestAcc-1 {
		misses++
	}
	if t.Balanced < bestBal-1 {
		misses++
	}
	if maj := resultOf(r, "majority"); maj != nil && belowMajority(t, maj) {
		misses++
	}
	return ((t.Accuracy - bestAcc) + (t.Balanced - bestBal)) / 2, misses, true
}

// belowMajority reports whether t is right less often than the majority
// class maj without being 10 points above it in balanced accuracy.
func belowMajority(t, maj *PeerResult) bool {
	return t.Accuracy < maj.Accuracy && t.Balanced < maj.Balanced+10
}

// leaveOneOut chooses, for each set, the variant whose mean deficit over
// the other sets is the least (the first listed among equals), and
// summarises the suite with trit's results replaced by those choices.
func leaveOneOut(sets []*PeersReport, variants, ranked []string) *LODOReport {
	out := &LODOReport{Variants: variants, AllSets: map[string]float64{}, Misses: map[string]int{}}
	// objective is variant v's bars missed and mean deficit over the sets
	// but the one at skip (−1: none); ok is false when no set has a
	// result for v.
	objective := func(v string, skip int) (misses int, mean float64, ok bool) {
		sum, n := 0.0, 0
		for j, r := range sets {
			if j == skip {
				continue
			}
			if d, miss, ok := standing(r, variantMethod(v), ranked); ok {
				sum += d
				misses += miss
				n++
			}
		}
		return misses, sum / float64(max(n, 1)), n > 0
	}
	for _, v := range variants {
		if miss, obj, ok := objective(v, -1); ok {
			out.AllSets[v], out.Misses[v] = obj, miss
		}
	}
	var replaced []*PeersReport
	for i, held := range sets {
		// Fewer bars missed first, then the larger mean (less deficit).
		best, bestMiss, bestObj := "", math.MaxInt, math.Inf(-1)
		for _, v := range variants {
			if miss, obj, ok := objective(v, i); ok && (miss < bestMiss || miss == bestMiss && obj > bestObj) {
				best, bestMiss, bestObj = v, miss, obj
			}
		}
		t := resultOf(held, variantMethod(best))
		if best == "" || t == nil {
			continue
		}
		out.Sets = append(out.Sets, LODOSet{Dataset: held.Dataset, Chosen: best, Misses: bestMiss, Objective: bestObj, Accuracy: t.Accuracy, Balanced: t.Balanced})
		r := *held
		r.Results = nil
		for _, p := range held.Results {
			switch p.Method {
			case "trit":
				q := *t
				q.Method = "trit"
				r.Results = append(r.Results, q)
			default:
				r.Results = append(r.Results, p)
			}
		}
		replaced = append(replaced, &r)
	}
	out.Summary = summarise(replaced, ranked)
	return out
}

// resultOf returns the result of method in r, or nil (also when skipped).
func resultOf(r *PeersReport, method string) *PeerResult {
	for i := range r.Results {
		if p := &r.Results[i]; p.Method == method && p.Skipped == "" {
			return p
		}
	}
	return nil
}

// sameScore is how close two percentages must be to count as one: the
// same number of right rows gives a percentage that can differ in its
// last bits between trit (Go) and a peer (Python's arithmetic), and one
// row of a million is 1e-4 points.
const sameScore = 1e-9

// ranks returns the rank of each value (1 = the largest); equal values
// (within sameScore) share the mean of the ranks they span.
func ranks(v []float64) []float64 {
	out := make([]float64, len(v))
	for i := range v {
		above, equal := 0, 0
		for j := range v {
			switch {
			case math.Abs(v[j]-v[i]) <= sameScore:
				equal++
			case v[j] > v[i]:
				above++
			}
		}
		out[i] = float64(above) + float64(equal+1)/2
	}
	return out
}

// rankedIn returns the ranked methods, in rankedMethods' order, that have
// a result on at least one of sets: a run whose --methods leaves a peer
// out ranks trit among those it ran, rather than among none.
func rankedIn(sets []*PeersReport) []string {
	var out []string
	for _, m := range rankedMethods {
		if slices.ContainsFunc(sets, func(r *PeersReport) bool { return resultOf(r, m) != nil }) {
			out = append(out, m)
		}
	}
	return out
}

// summarise ranks the methods on every set that has a result from each,
// and measures trit against the best of the others.
func summarise(sets []*PeersReport, methods []string) SuiteSummary {
	s := SuiteSummary{Methods: methods, MeanRank: map[string]float64{}, MeanRankBalanced: map[string]float64{}}
	if len(methods) < 2 {
		return s // trit alone: nothing to rank it against
	}
	s.WorstDeficit, s.WorstDeficitBalanced = math.Inf(1), math.Inf(1)
	counted, picked := 0, false
	for _, r := range sets {
		var acc, bal []float64
		for _, m := range methods {
			if p := resultOf(r, m); p != nil {
				acc, bal = append(acc, p.Accuracy), append(bal, p.Balanced)
			}
		}
		if len(acc) != len(methods) {
			continue // a method is missing or skipped: no ranks for this set
		}
		counted++
		ra, rb := ranks(acc), ranks(bal)
		for i, m := range methods {
			s.MeanRank[m] += ra[i]
			s.MeanRankBalanced[m] += rb[i]
		}
		d := SetDeficit{Dataset: r.Dataset, Accuracy: math.Inf(1), Balanced: math.Inf(1)}
		for i, m := range methods {
			if m == "trit" {
				d.Rank, d.RankBalanced = ra[i], rb[i]
				continue
			}
			if v := acc[0] - acc[i]; v < d.Accuracy {
				d.Accuracy, d.Best = v, m
			}
			d.Balanced = min(d.Balanced, bal[0]-bal[i])
		}
		if i, ok := pickedByValidation(r, methods); ok {
			d.Picked, d.PickedAccuracy, d.PickedBalanced = methods[i], acc[0]-acc[i], bal[0]-bal[i]
			if !picked {
				s.WorstVsPicked, s.WorstVsPickedBalanced = d.PickedAccuracy, d.PickedBalanced
				picked = true
			}
			s.WorstVsPicked, s.WorstVsPickedBalanced = min(s.WorstVsPicked, d.PickedAccuracy), min(s.WorstVsPickedBalanced, d.PickedBalanced)
		}
		s.Deficits = append(s.Deficits, d)
		s.WorstDeficit = min(s.WorstDeficit, d.Accuracy)
		s.WorstDeficitBalanced = min(s.WorstDeficitBalanced, d.Balanced)
		if maj := resultOf(r, "majority"); maj != nil {
			if belowMajority(resultOf(r, "trit"), maj) {
				s.BelowMajority = append(s.BelowMajority, r.Dataset)
			}
		}
	}
	if counted == 0 {
		s.WorstDeficit, s.WorstDeficitBalanced = 0, 0
		return s
	}
	for _, m := range methods {
		s.MeanRank[m] /= float64(counted)
		s.MeanRankBalanced[m] /= float64(counted)
	}
	return s
}

// pickedByValidation returns the index in methods of the method other
// than trit (methods[0]) whose validation balanced accuracy on r is the
// highest, the first among equals; ok is false when none states one.
func pickedByValidation(r *PeersReport, methods []string) (int, bool) {
	best, bestVal := -1, math.Inf(-1)
	for i, m := range methods {
		if m == "trit" {
			continue
		}
		if p := resultOf(r, m); p != nil && p.Validation != nil && *p.Validation > bestVal+sameScore {
			best, bestVal = i, *p.Validation
		}
	}
	return best, best >= 0
}

// writeSuiteTable writes the suite's tables in Markdown: accuracy ·
// balanced accuracy per set and method, trit's confidence and unknown,
// and the summary.
func writeSuiteTable(w io.Writer, rep *SuiteReport) {
	if len(rep.Sets) == 0 {
		return
	}
	var methods []string
	for _, r := range rep.Sets {
		for _, p := range r.Results {
			if !slices.Contains(methods, p.Method) {
				methods = append(methods, p.Method)
			}
		}
	}
	fmt.Fprintf(w, "| dataset | %s | trit vs best | trit vs the folds' pick |\n", strings.Join(methods, " | "))
	fmt.Fprintf(w, "|---|%s--:|--:|\n", strings.Repeat("---|", len(methods)))
	for _, r := range rep.Sets {
		fmt.Fprintf(w, "| %s |", r.Dataset)
		for _, m := range methods {
			p := resultOf(r, m)
			if p == nil {
				fmt.Fprint(w, " – |")
				continue
			}
			fmt.Fprintf(w, " %.2f · %.2f |", p.Accuracy, p.Balanced)
		}
		d, pick := "–", "–"
		for _, x := range rep.Summary.Deficits {
			if x.Dataset == r.Dataset {
				d = fmt.Sprintf("%+.2f · %+.2f (%s)", x.Accuracy, x.Balanced, x.Best)
				if x.Picked != "" {
					pick = fmt.Sprintf("%+.2f · %+.2f (%s)", x.PickedAccuracy, x.PickedBalanced, x.Picked)
				}
			}
		}
		fmt.Fprintf(w, " %s | %s |\n", d, pick)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| dataset | method | bytes | train s | validation % | gap | ECE % on test | trit: stated ECE % | unknown % | unknown ~ errors (r) | accuracy unknown / answered % |")
	fmt.Fprintln(w, "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|---|")
	for _, r := range rep.Sets {
		for _, m := range methods {
			p := resultOf(r, m)
			if p == nil {
				continue
			}
			val, gap, e := "–", "–", "–"
			if p.Validation != nil {
				val, gap = fmt.Sprintf("%.2f", *p.Validation), fmt.Sprintf("%+.2f", *p.Validation-p.Balanced)
			}
			if p.ECE != nil {
				e = fmt.Sprintf("%.2f", *p.ECE)
			}
			stated, unk, corr, acc := "–", "–", "–", "–"
			if c := p.Confidence; c != nil {
				stated = fmt.Sprintf("%.2f", p.StatedECE)
				unk = fmt.Sprintf("%.2f", 100-c.Coverage)
				corr = fmt.Sprintf("%+.2f", c.UnknownErrorCorrelation)
				acc = fmt.Sprintf("%.1f / %.1f", c.UnknownAccuracy, c.Answered)
			}
			fmt.Fprintf(w, "| %s | %s | %d | %.1f | %s | %s | %s | %s | %s | %s | %s |\n", r.Dataset, m, p.Bytes, p.TrainSeconds, val, gap, e, stated, unk, corr, acc)
		}
	}
	s := rep.Summary
	fmt.Fprintln(w)
	if missing := slices.DeleteFunc(slices.Clone(rankedMethods), func(m string) bool { return slices.Contains(s.Methods, m) }); len(missing) > 0 {
		fmt.Fprintf(w, "Not run, so not ranked: %s.\n", strings.Join(missing, ", "))
	}
	switch {
	case len(s.Methods) < 2:
		fmt.Fprintln(w, "No ranked peer was run: no ranks and no deficits.")
	case len(s.Deficits) == 0:
		fmt.Fprintf(w, "No set has a result from each of %s: no ranks and no deficits.\n", strings.Join(s.Methods, ", "))
	default:
		fmt.Fprintf(w, "Mean rank over %d sets among %s (accuracy / balanced accuracy): ", len(s.Deficits), strings.Join(s.Methods, ", "))
		for i, m := range s.Methods {
			if i > 0 {
				fmt.Fprint(w, "; ")
			}
			fmt.Fprintf(w, "%s %.2f / %.2f", m, s.MeanRank[m], s.MeanRankBalanced[m])
		}
		fmt.Fprintf(w, ".\nWorst deficit of trit to the best other method: %+.2f accuracy, %+.2f balanced accuracy.\n", s.WorstDeficit, s.WorstDeficitBalanced)
		if slices.ContainsFunc(s.Deficits, func(d SetDeficit) bool { return d.Picked != "" }) {
			fmt.Fprintf(w, "Worst deficit of trit to the other method its validation folds rank first: %+.2f accuracy, %+.2f balanced accuracy.\n", s.WorstVsPicked, s.WorstVsPickedBalanced)
		}
	}
	if len(s.BelowMajority) > 0 {
		fmt.Fprintf(w, "Below the majority class (and not 10 points above it in balanced accuracy): %s.\n", strings.Join(s.BelowMajority, ", "))
	}
	if l := rep.LODO; l != nil {
		fmt.Fprintln(w)
		fmt.Fprintf(w, "Leave one dataset out over the selection presets %s: each set is scored under the preset that missed the fewest bars on the other sets (more than 1 point behind the best peer in accuracy or in balanced accuracy, below the majority class), then had the least mean deficit there.\n\n", strings.Join(l.Variants, ", "))
		fmt.Fprintln(w, "| held-out set | preset chosen by the others | bars it missed there | its mean deficit there | trit on the held-out set |")
		fmt.Fprintln(w, "|---|---|--:|--:|---|")
		for _, x := range l.Sets {
			fmt.Fprintf(w, "| %s | %s | %d | %+.2f | %.2f · %.2f |\n", x.Dataset, x.Chosen, x.Misses, x.Objective, x.Accuracy, x.Balanced)
		}
		fmt.Fprintf(w, "\nUnder the LODO choices, mean rank of trit %.2f / %.2f; worst deficit %+.2f / %+.2f.\n",
			l.Summary.MeanRank["trit"], l.Summary.MeanRankBalanced["trit"], l.Summary.WorstDeficit, l.Summary.WorstDeficitBalanced)
		fmt.Fprint(w, "Over every set, bars missed and mean deficit (the default is the best):")
		for i, v := range l.Variants {
			if obj, ok := l.AllSets[v]; ok {
				sep := ";"
				if i == 0 {
					sep = ""
				}
				fmt.Fprintf(w, "%s %s %d, %+.2f", sep, v, l.Misses[v], obj)
			}
		}
		fmt.Fprintln(w, ".")
	}
	fmt.Fprintf(w, "Machine: %s; %s.\n", rep.Sets[0].Machine, time.Now().UTC().Format("2006-01-02"))
}
