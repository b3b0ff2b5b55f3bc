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
		older, latest, err := data.SplitLatestCount(ds, n)
		if err != nil {
			return nil, "", nil, err
		}
		if missing := missingClasses(older, latest); missing > 0 {
			f, err := forwardFolds(ds, defaultTimeFolds)
			if err != nil {
				return nil, "", nil, err
			}
			notes = append(notes, fmt.Sprintf("the latest %.0f%% of rows lack %d of the classes; validating on %d forward-chaining folds instead", 100*c.Validation, missing, defaultTimeFolds))
			return f, fmt.Sprintf("%d forward-chaining folds (time order)", defaultTimeFolds), notes, nil
		}
		return []fold{{older, latest}}, fmt.Sprintf("latest %.0f%% of rows (time order)", 100*c.Validation), nil, nil
	case c.Folds >= 2:
		f, err := stratifiedFolds(ds, c.Folds, c.Seed^0x5eed)
		return f, fmt.Sprintf("%d stratified folds", c.Folds), nil, err
	}
	tr, va, err := data.Split(ds, c.Validation, c.Seed^0x5eed)
	if err != nil {
		return nil, "", nil, fmt.Errorf("training: validation split: %w", err)
	}
	if tr.N < 2 || va.N < 1 {
		return nil, "", nil, fmt.Errorf("%w: %d rows are too few for a validation split", ErrConfig, ds.N)
	}
	return []fold{{tr, va}}, fmt.Sprintf("random stratified %.0f%% of rows", 100*c.Validation), nil, nil
}

// missingClasses counts the classes present in a but not in b.
func missingClasses(a, b *data.Dataset) int {
	inA := make([]bool, len(a.Classes))
	inB := make([]bool, len(b.Classes))
	for _, y := range a.Y {
		inA[y] = true
	}
	for _, y := range b.Y {
		inB[y] = true
	}
	n := 0
	for i := range inA {
		if inA[i] && !inB[i] {
			n++
		}
	}
	return n
}

// forwardFolds returns data.ForwardFolds as datasets.
func forwardFolds(ds *data.Dataset, k int) ([]fold, error) {
	fs, err := data.ForwardFolds(ds, k)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	out := make([]fold, len(fs))
	for i, f := range fs {
		out[i] = fold{ds.Subset(f.Train), ds.Subset(f.Valid)}
	}
	return out, nil
}

// stratifiedFolds returns k folds of a seeded stratified partition.
func stratifiedFolds(ds *data.Dataset, k int, seed uint64) ([]fold, error) {
	var out []fold
	rest := ds
	var parts []*data.Dataset
	for i := k; i > 1; i-- {
		a, b, err := data.Split(rest, 1/float64(i), seed+uint64(i))
		if err != nil {
			return nil, err
		}
		parts = append(parts, b)
		rest = a
	}
	parts = append(parts, rest)
	for i, val := range parts {
		var rows []*data.Dataset
		for j, p := range parts {
			if j != i {
				rows = append(rows, p)
			}
		}
		out = append(out, fold{concat(rows), val})
	}
	return out, nil
}

func concat(parts []*data.Dataset) *data.Dataset {
	out := &data.Dataset{Name: parts[0].Name, D: parts[0].D, Classes: parts[0].Classes, Features: parts[0].Features}
	for _, p := range parts {
		out.X = append(out.X, p.X...)
		out.Y = append(out.Y, p.Y...)
		out.N += p.N
	}
	return out
}
