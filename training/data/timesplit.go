package data

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// Time-ordered splits: validation data that is later than all of its
// training data, as a model deployed today meets tomorrow's readings. Use
// them when Dataset.Ordered is set; a random split of time-ordered data
// puts near-identical neighbouring readings on both sides and overstates
// accuracy.

// TimeOrder returns d's row indices from oldest to newest: by Times when d
// has them (a stable sort, so rows with equal time stamps keep their file
// order), else in row order.
func TimeOrder(d *Dataset) []int {
	order := make([]int, d.N)
	for i := range order {
		order[i] = i
	}
	if d.Times != nil {
		slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(d.Times[a], d.Times[b]) })
	}
	return order
}

// SplitLatest splits d in time order: latest holds the round(frac·N)
// newest rows, older the rest; no row of latest is older than a row of
// older. Both keep time order and are Ordered if d is.
func SplitLatest(d *Dataset, frac float64) (older, latest *Dataset, err error) {
	if !(frac >= 0 && frac <= 1) {
		return nil, nil, fmt.Errorf("%w: split fraction %g not in [0, 1]", ErrOptions, frac)
	}
	return SplitLatestCount(d, int(math.Round(frac*float64(d.N))))
}

// SplitLatestCount is SplitLatest with exactly n rows in latest.
func SplitLatestCount(d *Dataset, n int) (older, latest *Dataset, err error) {
	if n < 0 || n > d.N {
		return nil, nil, fmt.Errorf("%w: split count %d not in [0, %d]", ErrOptions, n, d.N)
	}
	order := TimeOrder(d)
	older, latest = d.Subset(order[:d.N-n]), d.Subset(order[d.N-n:])
	older.Ordered, latest.Ordered = d.Ordered, d.Ordered
	return older, latest, nil
}

// Fold is one round of cross-validation: row indices to train on and to
// validate on, each oldest first.
type Fold struct {
	Train, Valid []int
}

// ForwardFolds returns k forward-chaining (blocked) folds: the rows, in
// time order (TimeOrder), are cut into k+1 consecutive blocks of sizes
// ⌊(b+1)·N/(k+1)⌋ − ⌊b·N/(k+1)⌋, and fold i (0-based) trains on blocks 0…i
// and validates on block i+1. No validation row is older than a training
// row of its fold. The folds hold indices, not copies (Dataset.Subset
// makes the copies); k must be at least 1 and N at least k+1.
func ForwardFolds(d *Dataset, k int) ([]Fold, error) {
	if k < 1 {
		return nil, fmt.Errorf("%w: %d folds, want at least 1", ErrOptions, k)
	}
	if d.N < k+1 {
		return nil, fmt.Errorf("%w: %d rows cannot make %d forward folds (%d blocks)", ErrOptions, d.N, k, k+1)
	}
	order := TimeOrder(d)
	cut := func(b int) int { return b * d.N / (k + 1) }
	folds := make([]Fold, k)
	for i := range folds {
		folds[i] = Fold{Train: order[:cut(i+1):cut(i+1)], Valid: order[cut(i+1):cut(i+2):cut(i+2)]}
	}
	return folds, nil
}

// GroupFolds returns k folds that each validate on whole groups
// (Dataset.Groups): the groups, largest first, are dealt to the fold with
// the fewest rows so far (ties to the lower fold), and fold i validates on
// its groups' rows and trains on every other row. No group is on both
// sides of a fold: its rows are what a model meets at a new site or with a
// new person. Rows keep their order within each part. k must be at least
// 2 and at most the number of groups that have rows.
func GroupFolds(d *Dataset, k int) ([]Fold, error) {
	if d.Groups == nil {
		return nil, fmt.Errorf("%w: %s has no groups", ErrOptions, d.Name)
	}
	rows := make([]int, len(d.GroupNames))
	for _, g := range d.Groups {
		rows[g]++
	}
	var present []int
	for g, n := range rows {
		if n > 0 {
			present = append(present, g)
		}
	}
	if k < 2 || k > len(present) {
		return nil, fmt.Errorf("%w: %d groups cannot make %d folds (want 2 to %d)", ErrOptions, len(present), k, len(present))
	}
	slices.SortStableFunc(present, func(a, b int) int { return cmp.Compare(rows[b], rows[a]) })
	fold := make([]int, len(d.GroupNames))
	size := make([]int, k)
	for _, g := range present {
		f := slices.Index(size, slices.Min(size))
		fold[g] = f
		size[f] += rows[g]
	}
	folds := make([]Fold, k)
	for i, g := range d.Groups {
		for f := range folds {
			if fold[g] == f {
				folds[f].Valid = append(folds[f].Valid, i)
			} else {
				folds[f].Train = append(folds[f].Train, i)
			}
		}
	}
	return folds, nil
}
