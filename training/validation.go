package training

import (
	"fmt"

	"github.com/trit-iot/trit/training/data"
)

// Validation. Candidates are scored on rows they were not trained on, and
// which rows those are depends on the rows' order:
//
//   - A recording — a time column, rows declared in time order
//     (data.Dataset.Ordered, --time-ordered), or rows that look recorded
//     (data.DetectOrder) — is never validated on a random sample: its
//     neighbouring readings would sit on both sides and reward a model that
//     memorises them. It is validated forward: the latest Validation share
//     of the rows (30% by default) is cut into Folds consecutive blocks
//     (3), and fold i trains on every row before block i and validates on
//     block i. Every validation row is later than every row its candidate
//     was trained on, each fold is a later period the model must hold up
//     in (see selection), and the last fold trains on 90% of the rows, so
//     close to the final model. When those latest rows lack a class that
//     the earlier ones have (a sensor log that ends with an empty room),
//     they could only ever score the classes they have, so the folds are
//     spread over the whole recording instead: K+1 equal consecutive
//     blocks, fold i training on blocks 0…i and validating on block i+1.
//   - Grouped rows — a group column (data.Dataset.Groups: the person,
//     device, room or site each row was recorded for) with at least two
//     groups — are validated by leaving whole groups out: Folds folds (3)
//     of whole groups, fold i validating on its groups and training on
//     the others (data.GroupFolds). A model meets new people and new
//     sites in the field; folds that mix a group's rows on both sides, or
//     chain groups as if they were time, measure neither. This comes
//     before time order: within a group the rows may be a recording, but
//     the shift that matters is to the next group.
//   - Shuffled rows (declared, or not detected as a recording) are held
//     out by a stratified random split, or Folds stratified folds.

// fold is a validation fold as datasets.
type fold struct {
	train, val *data.Dataset
}

// Defaults of forward validation.
const (
	defaultTimeFolds      = 3   // folds for recorded rows
	defaultGroupFolds     = 3   // folds for grouped rows
	defaultTimeValidation = 0.3 // share of the rows the folds validate on
)

// validation returns the folds candidates are scored on, a description,
// and notes on choices the user should know about.
func (c *Config) validation(ds *data.Dataset) ([]fold, string, []string, error) {
	folds, pl, err := c.validationPlan(ds)
	return folds, pl.how, pl.notes, err
}

// validationPlan is validation with its plan (see plan).
func (c *Config) validationPlan(ds *data.Dataset) ([]fold, plan, error) {
	pl, err := c.validationRows(ds)
	if err != nil {
		return nil, plan{}, err
	}
	out := make([]fold, len(pl.rows))
	for i, r := range pl.rows {
		out[i] = fold{ds.Subset(r.Train), ds.Subset(r.Valid)}
		if ds.Ordered {
			// Time order, oldest first (data.TimeOrder), even where the
			// row indices are not ascending.
			out[i].train.Ordered, out[i].val.Ordered = true, true
		}
	}
	return out, pl, nil
}

// ValidationFolds returns the folds Train scores its candidates on for ds
// and cfg, as row indices into ds, and how they were chosen: the rows
// another learner must be tuned on to be compared with trit on its terms.
func ValidationFolds(ds *data.Dataset, cfg *Config) ([]data.Fold, string, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, "", err
	}
	pl, err := c.validationRows(ds)
	return pl.rows, pl.how, err
}

// recorded decides whether ds's rows are validated forward, and says why.
func (c *Config) recorded(ds *data.Dataset) (bool, string) {
	switch {
	case c.TimeOrdered, ds.Ordered:
		if ds.Times != nil {
			return true, "rows in time order by their time column"
		}
		return true, "rows declared in time order"
	case ds.Shuffled:
		return false, "rows declared shuffled"
	}
	o := data.DetectOrder(ds)
	return o.Recorded, o.String()
}

// validatedForward says whether ds's rows are a recording validated in time
// order: recorded, and not grouped (groups are left out whole instead).
func (c *Config) validatedForward(ds *data.Dataset) bool {
	for _, g := range ds.Groups {
		if g != ds.Groups[0] {
			return false // at least two groups
		}
	}
	recorded, _ := c.recorded(ds)
	return recorded
}

// plan is how a dataset is validated: its folds as row indices, how they
// were chosen, notes for the user, and whether the folds measure a shift
// (later periods of a recording, or groups not trained on) rather than a
// random sample of the same rows.
type plan struct {
	rows    []data.Fold
	how     string
	notes   []string
	shifted bool
	kind    foldKind
}

// foldKind is what a plan's folds are.
type foldKind int

const (
	sampleFolds  foldKind = iota // random samples of the same rows
	forwardFolds                 // later periods of a recording, oldest first
	groupFolds                   // groups not trained on
)

// validationRows is validation as row indices into ds.
func (c *Config) validationRows(ds *data.Dataset) (plan, error) {
	if pl, ok, err := c.groupRows(ds); ok || err != nil {
		return pl, err
	}
	recorded, why := c.recorded(ds)
	notes := []string{"row order: " + why}
	done := func(rows []data.Fold, how string, err error) (plan, error) {
		kind := sampleFolds
		if recorded {
			kind = forwardFolds
		}
		return plan{rows, how, notes, recorded, kind}, err
	}
	if !recorded {
		if c.Folds >= 2 {
			f, err := stratifiedFolds(ds, c.Folds, c.Seed^seedValidation)
			return done(f, fmt.Sprintf("%d stratified folds", c.Folds), err)
		}
		frac := c.Validation
		if frac == 0 {
			frac = defaultValidation
		}
		tr, va, err := data.SplitRows(ds, frac, c.Seed^seedValidation)
		if err != nil {
			return plan{}, fmt.Errorf("training: validation split: %w", err)
		}
		if len(tr) < 2 || len(va) < 1 {
			return plan{}, fmt.Errorf("%w: %d rows are too few for a validation split", ErrConfig, ds.N)
		}
		return done([]data.Fold{{Train: tr, Valid: va}}, fmt.Sprintf("random stratified %.0f%% of rows", 100*frac), nil)
	}
	k := c.Folds
	if k == 0 {
		k = defaultTimeFolds
	}
	frac := c.Validation
	if frac == 0 {
		frac = defaultTimeValidation
	}
	folds, err := latestFolds(ds, k, frac)
	if err != nil {
		return plan{}, err
	}
	var later []int
	for _, f := range folds {
		later = append(later, f.Valid...)
	}
	if missing := missingClasses(ds, folds[0].Train, later); missing > 0 {
		if folds, err = chainedFolds(ds, k); err != nil {
			return plan{}, err
		}
		notes = append(notes, fmt.Sprintf("the latest %.0f%% of rows lack %d of the classes; validating on %d forward-chaining folds over the whole recording instead", 100*frac, missing, k))
		return done(folds, fmt.Sprintf("%d forward-chaining folds over the whole recording (time order)", k), nil)
	}
	return done(folds, fmt.Sprintf("%d forward folds over the latest %.0f%% of rows (time order)", k, 100*frac), nil)
}

// groupRows is validation by whole groups when ds has at least two; ok is
// false otherwise.
func (c *Config) groupRows(ds *data.Dataset) (pl plan, ok bool, err error) {
	if ds.Groups == nil {
		return plan{}, false, nil
	}
	present := map[int32]bool{}
	for _, g := range ds.Groups {
		present[g] = true
	}
	by := "the group column"
	if sp := ds.Spec; sp != nil && !sp.Group.IsZero() {
		by = "column " + sp.Group.String()
		if sp.GroupDetected {
			by += " (found by its name; --group-column none if it is not a group)"
		}
	}
	if len(present) < 2 {
		return plan{}, false, nil
	}
	k := c.Folds
	if k == 0 {
		k = defaultGroupFolds
	}
	k = min(k, len(present))
	folds, err := data.GroupFolds(ds, k)
	if err != nil {
		return plan{}, true, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	note := fmt.Sprintf("row groups: %d groups in %s; each fold validates on groups it did not train on", len(present), by)
	return plan{folds, fmt.Sprintf("%d folds of whole groups (%d groups)", k, len(present)), []string{note}, true, groupFolds}, true, nil
}

// latestFolds returns k forward folds whose validation blocks are
// consecutive and together the latest frac of ds's rows in time order:
// fold i validates on block i and trains on every row before it.
func latestFolds(ds *data.Dataset, k int, frac float64) ([]data.Fold, error) {
	order := data.TimeOrder(ds)
	n := int(float64(ds.N) * frac)
	start := ds.N - n
	if n < k || start < 2 {
		return nil, fmt.Errorf("%w: %d rows are too few for %d forward folds over the latest %.0f%%", ErrConfig, ds.N, k, 100*frac)
	}
	folds := make([]data.Fold, k)
	for i := range folds {
		lo, hi := start+i*n/k, start+(i+1)*n/k
		folds[i] = data.Fold{Train: order[:lo:lo], Valid: order[lo:hi:hi]}
	}
	return folds, nil
}

// missingClasses counts the classes of ds present in rows a but not in
// rows b.
func missingClasses(ds *data.Dataset, a, b []int) int {
	inA := make([]bool, len(ds.Classes))
	inB := make([]bool, len(ds.Classes))
	for _, i := range a {
		inA[ds.Y[i]] = true
	}
	for _, i := range b {
		inB[ds.Y[i]] = true
	}
	n := 0
	for i := range inA {
		if inA[i] && !inB[i] {
			n++
		}
	}
	return n
}

// chainedFolds returns data.ForwardFolds with configuration errors.
func chainedFolds(ds *data.Dataset, k int) ([]data.Fold, error) {
	fs, err := data.ForwardFolds(ds, k)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	return fs, nil
}

// stratifiedFolds returns k folds of a seeded stratified partition, as
// row indices: part i is drawn from what parts before it left, and fold
// i trains on the other parts in part order.
func stratifiedFolds(ds *data.Dataset, k int, seed uint64) ([]data.Fold, error) {
	rest := make([]int, ds.N)
	for i := range rest {
		rest[i] = i
	}
	var parts [][]int
	for i := k; i > 1; i-- {
		a, b, err := data.SplitRows(ds.Subset(rest), 1/float64(i), seed+uint64(i))
		if err != nil {
			return nil, err
		}
		parts = append(parts, pick(rest, b))
		rest = pick(rest, a)
	}
	parts = append(parts, rest)
	var out []data.Fold
	for i, val := range parts {
		var train []int
		for j, p := range parts {
			if j != i {
				train = append(train, p...)
			}
		}
		out = append(out, data.Fold{Train: train, Valid: val})
	}
	return out, nil
}

// pick returns rows[k] for each k in idx.
func pick(rows, idx []int) []int {
	out := make([]int, len(idx))
	for i, k := range idx {
		out[i] = rows[k]
	}
	return out
}
