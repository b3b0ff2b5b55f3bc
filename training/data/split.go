package data

import (
	"cmp"
	"fmt"
	"math"
	"math/bits"
	"slices"

	"github.com/trit-iot/trit/training/internal/splitmix"
)

// Split returns two disjoint subsets: a fraction frac of rows (stratified per
// class, rounded per class: round(frac*n_c) rows of a class with n_c rows)
// in b and the rest in a, chosen by a seeded shuffle. Both keep the rows in
// their original order. The result depends only on the dataset and seed,
// on every architecture: the shuffle is integer-only (splitmix64 and
// Fisher-Yates with unbiased bounded integers), not math/rand.
func Split(d *Dataset, frac float64, seed uint64) (a, b *Dataset, err error) {
	ra, rb, err := SplitRows(d, frac, seed)
	if err != nil {
		return nil, nil, err
	}
	return d.Subset(ra), d.Subset(rb), nil
}

// SplitRows is Split returning row indices (each ascending) instead of
// copies: Split(d, frac, seed) is d.Subset of them.
func SplitRows(d *Dataset, frac float64, seed uint64) (a, b []int, err error) {
	if !(frac >= 0 && frac <= 1) {
		return nil, nil, fmt.Errorf("%w: split fraction %g not in [0, 1]", ErrOptions, frac)
	}
	counts := classCounts(d)
	take := make([]int, len(counts))
	for c, nc := range counts {
		take[c] = int(math.Round(frac * float64(nc)))
	}
	a, b = split(d, seed, take)
	return a, b, nil
}

// SplitCount is Split with an exact number of rows, n, in b. Each class gets
// the floor or the ceiling of its proportional share n*n_c/N; the classes
// with the largest remainders get the ceilings (ties to the lower class
// index), so the counts add up to exactly n. All arithmetic is integer.
func SplitCount(d *Dataset, n int, seed uint64) (a, b *Dataset, err error) {
	if n < 0 || n > d.N {
		return nil, nil, fmt.Errorf("%w: split count %d not in [0, %d]", ErrOptions, n, d.N)
	}
	counts := classCounts(d)
	take := make([]int, len(counts))
	rem := make([]uint64, len(counts))
	left := n
	for c, nc := range counts {
		// n*nc can overflow int for huge datasets; 128-bit product.
		hi, lo := bits.Mul64(uint64(n), uint64(nc))
		q, r := bits.Div64(hi, lo, uint64(d.N))
		take[c], rem[c] = int(q), r
		left -= int(q)
	}
	order := make([]int, len(counts))
	for c := range order {
		order[c] = c
	}
	slices.SortStableFunc(order, func(i, j int) int { return cmp.Compare(rem[j], rem[i]) })
	for _, c := range order[:left] {
		take[c]++
	}
	ra, rb := split(d, seed, take)
	return d.Subset(ra), d.Subset(rb), nil
}

// split puts take[c] randomly chosen rows of each class c into b and the
// rest into a (row indices, ascending). One generator serves all classes,
// in class order.
func split(d *Dataset, seed uint64, take []int) (a, b []int) {
	byClass := make([][]int, len(d.Classes))
	for i, y := range d.Y {
		byClass[y] = append(byClass[y], i)
	}
	inB := make([]bool, d.N)
	rng := splitmix.New(seed)
	for c, rows := range byClass {
		k := take[c]
		// Partial Fisher-Yates: the first k positions become a uniform
		// random k-subset.
		for i := 0; i < k; i++ {
			j := i + rng.Intn(len(rows)-i)
			rows[i], rows[j] = rows[j], rows[i]
			inB[rows[i]] = true
		}
	}
	var ra, rb []int
	for i, in := range inB {
		if in {
			rb = append(rb, i)
		} else {
			ra = append(ra, i)
		}
	}
	return ra, rb
}

// classCounts returns the number of rows of each class.
func classCounts(d *Dataset) []int {
	counts := make([]int, len(d.Classes))
	for _, y := range d.Y {
		counts[y]++
	}
	return counts
}
