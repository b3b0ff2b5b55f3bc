// Package retrain trains a challenger to a deployed model on the model's
// original training data and the windows labelled in the field since, and
// says whether it is better than the deployed (active) model on the
// newest labelled windows. It is the one retraining procedure of trit:
// `tritctl retrain`, the fleet's retraining job and `trit-bench loop` all
// call Run. It uses package training's public API only.
//
// The procedure (docs/FLEET.md "Closing the loop"):
//
//  1. The labelled windows are put in time order and split: the newest
//     (Config.Newest of them, at least min(Config.MinNewest, half)) are
//     held out; the older ones are training rows.
//  2. Newer is weighted more, by repetition (training takes no row
//     weights): the original rows once each, and a labelled window of
//     rank r from the newest (0 = newest) among n older windows
//     round(B·2^(−2r/n)) times, at least once, where B = 2·N_orig/n
//     clamped to [1, Config.MaxCopies]: the newest window weighs B
//     original rows, the oldest about B/4, and below the cap the windows
//     together weigh about as much as the original rows (the mean of
//     2^(−2x) over [0, 1] is 0.54). While labels are few (n below
//     2·N_orig/MaxCopies) each weighs MaxCopies rows at most; with twice
//     as many labels as original rows each weighs one.
//  3. The rows — original first, then the windows from oldest to newest
//     with their copies side by side — are one recording in time order,
//     so training's model selection validates forward on its latest
//     rows: the newest of the labelled windows it trains on.
//  4. The challenger (that fit) and the active model are scored on the
//     held-out newest windows: accuracy, balanced accuracy, calibration
//     error and unknown rate. The challenger is better only if neither
//     its accuracy nor its balanced accuracy is lower than the active
//     model's, at least one is higher (a tie keeps the active model), and
//     the windows show it: of the windows exactly one of the two gets
//     right, the challenger's share must be one a coin would reach with
//     probability at most Config.MaxP (a one-sided sign test, default
//     5%). A few windows cannot show it: one window's difference among
//     ten is a coin's toss, and on the replay (docs/BENCHMARKS.md
//     "Closing the loop") such promotions cost more than they gained.
//  5. If it is better and Config.NoRefit is not set, the challenger is refitted
//     on every labelled window (the held-out newest too, with the same
//     weights by rank) with the settings its search chose (embedding
//     kind, σ, C), so the model proposed knows the newest windows; its
//     figures on them are the held-out fit's (as a search's validation
//     score forecasts its final fit). A refit that fails (training finds no
//     usable model on all the windows) leaves the scored fit proposed.
//
// The active model's feature pipeline and columns stay: the original data
// must have the active model's features (by name when both have names)
// and the windows hold the agents' feature vectors in that order; the
// classes are the active model's.
package retrain

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/trit-iot/trit/inference"
	"github.com/trit-iot/trit/training"
	"github.com/trit-iot/trit/training/data"
)

// Window is one labelled window from the field.
type Window struct {
	Time  int64     // Unix milliseconds of the reading (only the order matters)
	X     []float32 // the feature vector the agent classified, in the model's feature order
	Label string    // the class it really was: one of the active model's classes
}

// Config is a retraining run's settings; zero fields take the defaults.
type Config struct {
	// Train is the training run's configuration (budget, seed, workers,
	// progress); nil: training's defaults. TimeOrdered is set.
	Train *training.Config
	// Newest is the share of the labelled windows held out as the newest
	// to compare on (default 0.25), at least MinNewest of them (default
	// 10) but never more than half.
	Newest    float64
	MinNewest int
	// MaxCopies bounds a labelled window's weight in original rows
	// (default 16).
	MaxCopies int
	// AcceptTies proposes a challenger that ties with the active model on
	// the newest windows (equal accuracy and balanced accuracy) too: it
	// was trained on more recent data. Off by default, as docs/FLEET.md
	// says; for measuring what the strict rule costs (trit-bench loop
	// --accept-ties).
	AcceptTies bool
	// NoRefit turns off the refit of a better challenger on every
	// labelled window (step 5 above): the proposed model is then exactly
	// the one scored.
	NoRefit bool
	// MaxP is the sign test's level (step 4): the largest chance of a
	// coin doing as well as the challenger did on the windows where the
	// two models disagree; default DefaultMaxP, 1 turns the test off.
	MaxP float64
}

// Defaults.
const (
	DefaultNewest    = 0.25
	DefaultMinNewest = 10
	DefaultMaxCopies = 16
	DefaultMaxP      = 0.05
	// MinWindows is the fewest labelled windows a run accepts: one to
	// train on and one to compare on.
	MinWindows = 2
)

// Scores are a model's figures on the newest labelled windows.
type Scores struct {
	Windows  int     `json:"windows"`
	Accuracy float64 `json:"accuracy"`          // percent
	Balanced float64 `json:"balanced_accuracy"` // mean recall over the classes present, percent
	// ECE is the expected calibration error of the model's confidence
	// (its calibrated confidence, or the raw softmax's without a
	// calibration), percent.
	ECE float64 `json:"ece"`
	// Unknown is the share of windows the model reports unknown under its
	// own thresholds, percent (0 without a calibration).
	Unknown    float64 `json:"unknown"`
	Calibrated bool    `json:"calibrated"`
}

// Outcome is what a run found.
type Outcome struct {
	// Model is the challenger proposed: nil when it is not better.
	Model *training.Result
	// Scored is the challenger fitted without the newest windows, the one
	// scored against the active model (Model itself when not refitted).
	Scored             *training.Result
	Active, Challenger Scores
	Better             bool
	Why                string // the decision in words
	// Wins and Losses count the newest windows the challenger got right
	// and the active model wrong, and the reverse; P is the sign test's
	// chance of at least Wins of those Wins + Losses by a coin (step 4).
	Wins, Losses int
	P            float64
	OriginalRows int  // rows of the original training data
	Windows      int  // labelled windows given
	Newest       int  // of them held out as the newest
	TrainedRows  int  // rows of the held-out fit: original + copies of the older windows
	MaxCopies    int  // B of step 2: the newest window's copies
	Refitted     bool // Model was refitted on every window
	// RefitError says why the refit failed (then Model is the scored fit).
	RefitError string
	Seconds    float64
}

// ErrInput reports data a run cannot use (it says which and why).
var ErrInput = errors.New("retrain: unusable input")

// Run trains a challenger to active on original and windows and compares
// them on the newest windows (see the package comment).
func Run(ctx context.Context, active *inference.Model, original *data.Dataset, windows []Window, cfg *Config) (*Outcome, error) {
	start := time.Now()
	c := Config{}
	if cfg != nil {
		c = *cfg
	}
	if c.Newest == 0 {
		c.Newest = DefaultNewest
	}
	if c.MinNewest == 0 {
		c.MinNewest = DefaultMinNewest
	}
	if c.MaxCopies == 0 {
		c.MaxCopies = DefaultMaxCopies
	}
	if c.MaxP == 0 {
		c.MaxP = DefaultMaxP
	}
	if !(c.Newest > 0 && c.Newest < 1) || c.MinNewest < 1 || c.MaxCopies < 1 || !(c.MaxP > 0 && c.MaxP <= 1) {
		return nil, fmt.Errorf("%w: newest share %g (want (0, 1)), min newest %d, max copies %d (want ≥ 1), sign test level %g (want (0, 1])", ErrInput, c.Newest, c.MinNewest, c.MaxCopies, c.MaxP)
	}
	orig, err := conform(active, original)
	if err != nil {
		return nil, err
	}
	ws, err := sortedWindows(active, windows)
	if err != nil {
		return nil, err
	}
	if len(ws) < MinWindows {
		return nil, fmt.Errorf("%w: %d labelled windows, want at least %d (one to train on, one to compare on)", ErrInput, len(ws), MinWindows)
	}
	n := len(ws)
	newest := min(max(int(math.Ceil(c.Newest*float64(n))), min(c.MinNewest, n/2)), n-1)
	older, held := ws[:n-newest], ws[n-newest:]
	out := &Outcome{OriginalRows: orig.N, Windows: n, Newest: newest}

	tc := training.Config{}
	if c.Train != nil {
		tc = *c.Train
	}
	tc.TimeOrdered = true
	train, copies := combine(orig, older, c.MaxCopies)
	out.TrainedRows, out.MaxCopies = train.N, copies
	scored, err := training.TrainContext(ctx, train, &tc)
	if err != nil {
		return nil, fmt.Errorf("retrain: training the challenger: %w", err)
	}
	out.Scored = scored
	heldSet := windowSet(active, held)
	var predA, predC []int32
	if out.Active, predA, err = score(active, heldSet, tc.Workers); err != nil {
		return nil, err
	}
	if out.Challenger, predC, err = score(scored.Model, heldSet, tc.Workers); err != nil {
		return nil, err
	}
	for i, y := range heldSet.Y {
		switch a, c := predA[i] == y, predC[i] == y; {
		case c && !a:
			out.Wins++
		case a && !c:
			out.Losses++
		}
	}
	out.P = signTest(out.Wins, out.Losses)
	out.Better, out.Why = better(out.Challenger, out.Active)
	if out.Better && out.P > c.MaxP {
		out.Better = false
		out.Why = fmt.Sprintf("refused: on the %d newest labelled windows (accuracy %.2f%%, active %.2f%%; balanced %.2f%%, active %.2f%%) it was right on %d the active model got wrong and wrong on %d it got right: a coin does as well with probability %.2f, above %.2f — not enough windows to show it better",
			out.Challenger.Windows, out.Challenger.Accuracy, out.Active.Accuracy, out.Challenger.Balanced, out.Active.Balanced, out.Wins, out.Losses, out.P, c.MaxP)
	} else if out.Better {
		out.Why += fmt.Sprintf("; right on %d windows the active model got wrong, wrong on %d (sign test p = %.3f)", out.Wins, out.Losses, out.P)
	}
	if !out.Better && c.AcceptTies && out.Challenger.Accuracy == out.Active.Accuracy && out.Challenger.Balanced == out.Active.Balanced {
		out.Better = true
		out.Why = fmt.Sprintf("a tie on the %d newest labelled windows (%.2f%% accuracy, %.2f%% balanced), accepted", out.Challenger.Windows, out.Challenger.Accuracy, out.Challenger.Balanced)
	}
	if out.Better {
		out.Model = scored
		if !c.NoRefit {
			all, _ := combine(orig, ws, c.MaxCopies)
			rc := tc
			rc.Sigma, rc.C = 0, 0
			// σ is 0 for an embedding without random features, where it
			// means nothing (any positive value does).
			rc.SigmaGrid, rc.CGrid = []float64{cmp.Or(scored.Sigma, 1)}, []float64{scored.C}
			if rc.P == 0 && rc.Thresholds == 0 && rc.Projection == 0 {
				// The kind and weights the search chose; the budget sizes it.
				rc.Embedding, rc.Weights = string(scored.Structure.Embedding()), "ternary"
				if scored.Structure.Binary {
					rc.Weights = "binary"
				}
			}
			refit, err := training.TrainContext(ctx, all, &rc)
			switch {
			case errors.Is(err, training.ErrCancelled):
				return nil, err
			case err != nil:
				// The fit that was scored stands: it was shown better.
				out.RefitError = err.Error()
			default:
				out.Model, out.Refitted = refit, true
			}
		}
	}
	out.Seconds = time.Since(start).Seconds()
	return out, nil
}

// better decides whether challenger c beats active a on the same windows.
func better(c, a Scores) (bool, string) {
	switch {
	case c.Accuracy < a.Accuracy:
		return false, fmt.Sprintf("refused: accuracy on the %d newest labelled windows %.2f%%, below the active model's %.2f%%", c.Windows, c.Accuracy, a.Accuracy)
	case c.Balanced < a.Balanced:
		return false, fmt.Sprintf("refused: balanced accuracy on the %d newest labelled windows %.2f%%, below the active model's %.2f%%", c.Windows, c.Balanced, a.Balanced)
	case c.Accuracy == a.Accuracy && c.Balanced == a.Balanced:
		return false, fmt.Sprintf("refused: no better than the active model on the %d newest labelled windows (%.2f%% accuracy, %.2f%% balanced, both)", c.Windows, c.Accuracy, c.Balanced)
	}
	return true, fmt.Sprintf("better on the %d newest labelled windows: accuracy %.2f%% (active %.2f%%), balanced %.2f%% (active %.2f%%)", c.Windows, c.Accuracy, a.Accuracy, c.Balanced, a.Balanced)
}

// conform checks that original has active's features and returns it with
// active's classes.
func conform(active *inference.Model, original *data.Dataset) (*data.Dataset, error) {
	if original == nil || original.N == 0 {
		return nil, fmt.Errorf("%w: no original training data", ErrInput)
	}
	want := active.Spec().Features
	switch {
	case original.D != active.NumFeatures():
		return nil, fmt.Errorf("%w: the original data %s has %d features, the active model takes %d", ErrInput, original.Name, original.D, active.NumFeatures())
	case want != nil && original.Features != nil && !slices.Equal(want, original.Features):
		return nil, fmt.Errorf("%w: the original data %s has features %q, the active model %q", ErrInput, original.Name, original.Features, want)
	}
	ds := original.Subset(data.TimeOrder(original))
	if err := ds.Relabel(active.Classes()); err != nil {
		return nil, fmt.Errorf("%w: the original data: %w", ErrInput, err)
	}
	if ds.Features == nil {
		ds.Features = want
	}
	return ds, nil
}

// sortedWindows checks windows against active and returns them oldest
// first (a stable sort: equal times keep their order).
func sortedWindows(active *inference.Model, windows []Window) ([]Window, error) {
	classes := active.Classes()
	for i, w := range windows {
		if len(w.X) != active.NumFeatures() {
			return nil, fmt.Errorf("%w: labelled window %d has %d values, the active model takes %d features", ErrInput, i, len(w.X), active.NumFeatures())
		}
		if !slices.Contains(classes, w.Label) {
			return nil, fmt.Errorf("%w: labelled window %d: class %q is not one of the active model's %q", ErrInput, i, w.Label, classes)
		}
	}
	ws := slices.Clone(windows)
	slices.SortStableFunc(ws, func(a, b Window) int { return cmp.Compare(a.Time, b.Time) })
	return ws, nil
}

// Copies returns the weights of step 2 (see the package comment): for n
// windows oldest first beside nOrig original rows, how many times each is
// repeated, and B.
func Copies(nOrig, n, maxCopies int) ([]int, int) {
	if n == 0 {
		return nil, 0
	}
	b := min(max(int(math.Round(2*float64(nOrig)/float64(n))), 1), maxCopies)
	out := make([]int, n)
	for i := range out {
		r := n - 1 - i // rank from the newest
		out[i] = max(1, int(math.Round(float64(b)*math.Exp2(-2*float64(r)/float64(n)))))
	}
	return out, b
}

// combine returns orig's rows then the windows', each repeated its copies,
// as one time-ordered dataset, and B.
func combine(orig *data.Dataset, ws []Window, maxCopies int) (*data.Dataset, int) {
	copies, b := Copies(orig.N, len(ws), maxCopies)
	total := orig.N
	for _, k := range copies {
		total += k
	}
	ds := &data.Dataset{Name: orig.Name + " + labelled windows", N: total, D: orig.D, Classes: slices.Clone(orig.Classes),
		Features: slices.Clone(orig.Features), Ordered: true, Spec: orig.Spec,
		X: make([]float32, 0, total*orig.D), Y: make([]int32, 0, total)}
	ds.X = append(ds.X, orig.X[:orig.N*orig.D]...)
	ds.Y = append(ds.Y, orig.Y[:orig.N]...)
	for i, w := range ws {
		y := int32(slices.Index(orig.Classes, w.Label))
		for range copies[i] {
			ds.X = append(ds.X, w.X...)
			ds.Y = append(ds.Y, y)
		}
	}
	return ds, b
}

// windowSet returns ws as a dataset with active's classes and features.
func windowSet(active *inference.Model, ws []Window) *data.Dataset {
	classes := active.Classes()
	ds := &data.Dataset{Name: "the newest labelled windows", N: len(ws), D: active.NumFeatures(), Classes: slices.Clone(classes),
		Features: slices.Clone(active.Spec().Features), Ordered: true, Y: make([]int32, len(ws))}
	for i, w := range ws {
		ds.X = append(ds.X, w.X...)
		ds.Y[i] = int32(slices.Index(classes, w.Label))
	}
	return ds
}

// Score returns m's figures on ds (classes m's, in order).
func Score(m *inference.Model, ds *data.Dataset, workers int) (Scores, error) {
	s, _, err := score(m, ds, workers)
	return s, err
}

func score(m *inference.Model, ds *data.Dataset, workers int) (Scores, []int32, error) {
	ev, err := training.Evaluate(m, ds, workers)
	if err != nil {
		return Scores{}, nil, err
	}
	cr, err := training.EvaluateConfidence(m, ds, m.Thresholds(), workers)
	if err != nil {
		return Scores{}, nil, err
	}
	s := Scores{Windows: ds.N, Accuracy: ev.Accuracy, Balanced: ev.Balanced, Calibrated: cr.Calibrated, ECE: cr.RawECE}
	if cr.Calibrated {
		s.ECE = cr.ECE
	}
	if cr.Rows > 0 {
		s.Unknown = 100 * float64(cr.Unknown) / float64(cr.Rows)
	}
	return s, ev.Predicted, nil
}

// signTest is the one-sided sign test's p-value: the chance that a fair
// coin, tossed wins + losses times, comes up heads at least wins times
// (1 when there is no toss).
//
//	p = Σ_{k=wins}^{n} C(n, k) / 2ⁿ,  n = wins + losses
func signTest(wins, losses int) float64 {
	n := wins + losses
	if n == 0 || wins == 0 {
		return 1
	}
	p := 0.0
	for k := wins; k <= n; k++ {
		lc, _ := math.Lgamma(float64(n + 1))
		lk, _ := math.Lgamma(float64(k + 1))
		lnk, _ := math.Lgamma(float64(n - k + 1))
		p += math.Exp(lc - lk - lnk - float64(n)*math.Ln2)
	}
	return min(p, 1)
}
