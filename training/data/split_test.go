package data

import (
	"errors"
	"math"
	"slices"
	"testing"
)

// classed returns a dataset whose class c has counts[c] rows, interleaved,
// with X holding the row number.
func classed(counts ...int) *Dataset {
	d := &Dataset{Name: "c", D: 1}
	for c := range counts {
		d.Classes = append(d.Classes, string(rune('a'+c)))
	}
	left := slices.Clone(counts)
	for more := true; more; {
		more = false
		for c := range left {
			if left[c] > 0 {
				left[c]--
				d.X = append(d.X, float32(d.N))
				d.Y = append(d.Y, int32(c))
				d.N++
				more = true
			}
		}
	}
	return d
}

// rowsOf returns the original row numbers held in a dataset made by classed.
func rowsOf(d *Dataset) []int {
	r := make([]int, d.N)
	for i := range r {
		r[i] = int(d.X[i])
	}
	return r
}

func checkPartition(t *testing.T, d, a, b *Dataset) {
	t.Helper()
	checkDataset(t, a)
	checkDataset(t, b)
	all := append(rowsOf(a), rowsOf(b)...)
	slices.Sort(all)
	for i, r := range all {
		if r != i {
			t.Fatalf("a and b are not a partition of the %d rows", d.N)
		}
	}
	if !slices.IsSorted(rowsOf(a)) || !slices.IsSorted(rowsOf(b)) {
		t.Fatal("rows not in their original order")
	}
	for _, s := range []*Dataset{a, b} {
		for i, r := range rowsOf(s) {
			if s.Y[i] != d.Y[r] {
				t.Fatal("row lost its label")
			}
		}
	}
}

func TestSplit(t *testing.T) {
	d := classed(10, 5, 1, 0, 7)
	a, b, err := Split(d, 0.3, 42)
	if err != nil {
		t.Fatal(err)
	}
	checkPartition(t, d, a, b)
	for c, n := range classCounts(d) {
		if want := int(math.Round(0.3 * float64(n))); classCounts(b)[c] != want {
			t.Errorf("class %d: %d of %d rows in b, want %d", c, classCounts(b)[c], n, want)
		}
	}
	a2, b2, _ := Split(d, 0.3, 42)
	if !slices.Equal(rowsOf(a), rowsOf(a2)) || !slices.Equal(rowsOf(b), rowsOf(b2)) {
		t.Fatal("same seed, different split")
	}
	differs := false
	for seed := uint64(1); seed < 5; seed++ {
		_, b3, _ := Split(d, 0.3, seed)
		differs = differs || !slices.Equal(rowsOf(b), rowsOf(b3))
	}
	if !differs {
		t.Fatal("the seed does not change the split")
	}
	for _, frac := range []float64{0, 1} {
		a, b, err := Split(d, frac, 1)
		if err != nil || a.N+b.N != d.N || (frac == 0 && b.N != 0) || (frac == 1 && a.N != 0) {
			t.Errorf("frac %g: %d + %d rows, %v", frac, a.N, b.N, err)
		}
	}
	for _, frac := range []float64{-0.1, 1.5, math.NaN()} {
		if _, _, err := Split(d, frac, 1); !errors.Is(err, ErrOptions) {
			t.Errorf("frac %g: got %v", frac, err)
		}
	}
}

func TestSplitCount(t *testing.T) {
	// covtype's binary problem: 297,711 rest and 283,301 class-2 rows,
	// 20% of 581,012 = 116,202.4 test rows, split exactly.
	counts := []int{297711, 283301}
	d := &Dataset{N: 581012, D: 0, Y: make([]int32, 581012), Classes: []string{"rest", "2"}}
	for i := counts[0]; i < d.N; i++ {
		d.Y[i] = 1
	}
	a, b, err := SplitCount(d, 116202, 1)
	if err != nil {
		t.Fatal(err)
	}
	if a.N != 464810 || b.N != 116202 || !slices.Equal(classCounts(b), []int{59542, 56660}) {
		t.Fatalf("got %d / %d, test classes %v", a.N, b.N, classCounts(b))
	}

	// Every count from 0 to N, each class getting the floor or ceiling of
	// its quota.
	d = classed(3, 3, 4)
	for n := 0; n <= d.N; n++ {
		a, b, err := SplitCount(d, n, 7)
		if err != nil {
			t.Fatal(err)
		}
		checkPartition(t, d, a, b)
		if b.N != n {
			t.Fatalf("n=%d: b has %d rows", n, b.N)
		}
		for c, nc := range classCounts(d) {
			q := float64(n*nc) / float64(d.N)
			if got := float64(classCounts(b)[c]); got < math.Floor(q) || got > math.Ceil(q) {
				t.Errorf("n=%d class %d: %v rows, quota %v", n, c, got, q)
			}
		}
	}
	// 2 rows of {3,3,4}: quotas 0.6, 0.6, 0.8 round down to 0, 0, 0; the
	// two largest remainders get a row: class 2, then class 0 (tie rule).
	_, b, _ = SplitCount(d, 2, 7)
	if !slices.Equal(classCounts(b), []int{1, 0, 1}) {
		t.Errorf("2 of {3,3,4}: %v, want [1 0 1]", classCounts(b))
	}
	if _, _, err := SplitCount(d, 11, 1); !errors.Is(err, ErrOptions) {
		t.Errorf("n > N: got %v", err)
	}
}

// TestSplitUniform checks that every row is equally likely to be chosen:
// over 4000 seeds, each of 10 rows should land in b about 1200 times
// (binomial, sd ≈ 29; the bound is 5 sd).
func TestSplitUniform(t *testing.T) {
	d := classed(10)
	hits := make([]int, 10)
	const seeds = 4000
	for seed := range uint64(seeds) {
		_, b, _ := Split(d, 0.3, seed)
		for _, r := range rowsOf(b) {
			hits[r]++
		}
	}
	for r, h := range hits {
		if math.Abs(float64(h)-0.3*seeds) > 5*math.Sqrt(seeds*0.3*0.7) {
			t.Errorf("row %d chosen %d times of %d, want about %d", r, h, seeds, int(0.3*seeds))
		}
	}
}
