package training

import (
	"fmt"

	"github.com/trit-iot/trit/training/data"
)

// Validation. Candidates are scored on rows they were not trained on.
// Rows in time order (Config.TimeOrdered, or a dataset read with a
// timestamp column) are never validated on a random sample: neighbouring
// readings would sit on both sides and reward memorising. Instead the
// latest rows are held out, and every validation row is later than every
// row its candidate was trained on. When the latest rows lack a class the
// earlier ones have (a sensor series often ends in one state), one
// hold-out would score only that class, so the search switches to
// forward-chaining folds: the rows are cut into K+1 consecutive blocks and
// fold i trains on blocks 0…i−1 and validates on block i. Unordered data
// are held out by a stratified random split.

type fold struct {
	train, val *data.Dataset
}

// defaultTimeFolds is the number of forward-chaining folds used when the
// latest rows alone cannot validate.
const defaultTimeFolds = 3

// validation returns the folds candidates are scored on, a description,
// and notes on choices the user should know about.
func (c *Config) validation(ds *data.Dataset) ([]fold, string, []string, error) {
	rows, how, notes, err := c.validationRows(ds)
	if err != nil {
		return nil, "", nil, err
	}
	out := make([]fold, len(rows))
	for i, r := range rows {
		out[i] = fold{ds.Subset(r.Train), ds.Subset(r.Valid)}
		if ds.Ordered {
			// Time order, oldest first (data.TimeOrder), even where the
			// row indices are not ascending.
			out[i].train.Ordered, out[i].val.Ordered = true, true
		}
	}
	return out, how, notes, nil
}

// ValidationFolds returns the folds Train scores its candidates on for ds
// and cfg, as row indices into ds, and how they were chosen: the rows
// another learner must be tuned on to be compared with trit on its terms.
func ValidationFolds(ds *data.Dataset, cfg *Config) ([]data.Fold, string, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, "", err
	}
	rows, how, _, err := c.validationRows(ds)
	return rows, how, err
}

// validationRows is validation as row indices into ds.
func (c *Config) validationRows(ds *data.Dataset) ([]data.Fold, string, []string, error) {
	ordered := c.TimeOrdered || ds.Ordered
	var notes []string
	switch {
	case ordered && c.Folds >= 2:
		f, err := forwardFolds(ds, c.Folds)
		return f, fmt.Sprintf("%d forward-chaining folds (time order)", c.Folds), nil, err
	case ordered:
		n := int(float64(ds.N) * c.Validation)
		if n < 1 || n >= ds.N {
			return nil, "", nil, fmt.Errorf("%w: %d rows are too few for a validation split", ErrConfig, ds.N)
		}
		order := data.TimeOrder(ds)
		older, latest := order[:ds.N-n], order[ds.N-n:]
		if missing := missingClasses(ds, older, latest); missing > 0 {
			f, err := forwardFolds(ds, defaultTimeFolds)
			if err != nil {
				return nil, "", nil, err
			}
			notes = append(notes, fmt.Sprintf("the latest %.0f%% of rows lack %d of the classes; validating on %d forward-chaining folds instead", 100*c.Validation, missing, defaultTimeFolds))
			return f, fmt.Sprintf("%d forward-chaining folds (time order)", defaultTimeFolds), notes, nil
		}
		return []data.Fold{{Train: older, Valid: latest}}, fmt.Sprintf("latest %.0f%% of rows (time order)", 100*c.Validation), nil, nil
	case c.Folds >= 2:
		f, err := stratifiedFolds(ds, c.Folds, c.Seed^0x5eed)
		return f, fmt.Sprintf("%d stratified folds", c.Folds), nil, err
	}
	tr, va, err := data.SplitRows(ds, c.Validation, c.Seed^0x5eed)
	if err != nil {
		return nil, "", nil, fmt.Errorf("training: validation split: %w", err)
	}
	if len(tr) < 2 || len(va) < 1 {
		return nil, "", nil, fmt.Errorf("%w: %d rows are too few for a validation split", ErrConfig, ds.N)
	}
	return []data.Fold{{Train: tr, Valid: va}}, fmt.Sprintf("random stratified %.0f%% of rows", 100*c.Validation), nil, nil
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

// forwardFolds returns data.ForwardFolds with configuration errors.
func forwardFolds(ds *data.Dataset, k int) ([]data.Fold, error) {
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
