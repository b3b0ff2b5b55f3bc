package data

import (
	"errors"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// timed returns n rows whose Times are shuffled with ties (or nil), with
// feature 0 holding the row's original index.
func timed(rng *rand.Rand, n int, withTimes bool) *Dataset {
	d := &Dataset{N: n, D: 1, X: make([]float32, n), Y: make([]int32, n), Classes: []string{"a", "b"}, Ordered: true}
	if withTimes {
		d.Times = make([]int64, n)
	}
	for i := range n {
		d.X[i] = float32(i)
		d.Y[i] = int32(rng.IntN(2))
		if withTimes {
			d.Times[i] = int64(rng.IntN(n/3 + 1)) // many ties
		}
	}
	return d
}

// when returns the time of row i of d: its time stamp, else its position
// in the dataset it came from (feature 0).
func when(d *Dataset, i int) int64 {
	if d.Times != nil {
		return d.Times[i]
	}
	return int64(d.X[i*d.D])
}

// notBefore checks that no row of later is older than a row of earlier.
func notBefore(t *testing.T, earlier, later *Dataset) {
	t.Helper()
	if earlier.N == 0 || later.N == 0 {
		return
	}
	var newest int64 = -1 << 63
	for i := range earlier.N {
		newest = max(newest, when(earlier, i))
	}
	for i := range later.N {
		if w := when(later, i); w < newest {
			t.Fatalf("row %d of the later set (time %d) is older than a row of the earlier set (time %d)", i, w, newest)
		}
	}
}

func TestSplitLatest(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, withTimes := range []bool{false, true} {
		for _, n := range []int{1, 2, 7, 100, 1001} {
			d := timed(rng, n, withTimes)
			for _, frac := range []float64{0, 0.2, 0.3, 0.5, 1} {
				older, latest, err := SplitLatest(d, frac)
				if err != nil {
					t.Fatal(err)
				}
				checkDataset(t, older)
				checkDataset(t, latest)
				if older.N+latest.N != n || latest.N != int(float64(n)*frac+0.5) {
					t.Fatalf("n=%d frac=%g: %d + %d rows", n, frac, older.N, latest.N)
				}
				if !older.Ordered || !latest.Ordered {
					t.Fatal("time-ordered subsets not marked Ordered")
				}
				notBefore(t, older, latest)
				// Each side is itself in time order.
				for _, s := range []*Dataset{older, latest} {
					for i := 1; i < s.N; i++ {
						if when(s, i) < when(s, i-1) {
							t.Fatalf("rows %d and %d out of order", i-1, i)
						}
					}
				}
			}
		}
	}
	d := timed(rng, 10, false)
	if _, _, err := SplitLatest(d, 1.5); !errors.Is(err, ErrOptions) {
		t.Fatalf("frac 1.5: %v", err)
	}
	if _, _, err := SplitLatestCount(d, 11); !errors.Is(err, ErrOptions) {
		t.Fatalf("count 11: %v", err)
	}
	// Ties keep file order (a stable sort).
	d = &Dataset{N: 4, D: 1, X: []float32{0, 1, 2, 3}, Y: make([]int32, 4), Classes: []string{"a"}, Times: []int64{5, 1, 5, 1}}
	older, latest, _ := SplitLatestCount(d, 2)
	if !slices.Equal(older.X, []float32{1, 3}) || !slices.Equal(latest.X, []float32{0, 2}) {
		t.Fatalf("older %v latest %v", older.X, latest.X)
	}
}

func TestForwardFolds(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, withTimes := range []bool{false, true} {
		for _, n := range []int{3, 10, 101} {
			d := timed(rng, n, withTimes)
			for k := 1; k < n && k <= 6; k++ {
				folds, err := ForwardFolds(d, k)
				if err != nil {
					t.Fatal(err)
				}
				if len(folds) != k {
					t.Fatalf("%d folds, want %d", len(folds), k)
				}
				for i, f := range folds {
					if len(f.Train) == 0 || len(f.Valid) == 0 {
						t.Fatalf("n=%d k=%d fold %d: %d train, %d valid rows", n, k, i, len(f.Train), len(f.Valid))
					}
					// Fold i trains on everything before its validation block.
					if i > 0 && !slices.Equal(f.Train, append(slices.Clone(folds[i-1].Train), folds[i-1].Valid...)) {
						t.Fatalf("fold %d does not train on fold %d's rows and validation block", i, i-1)
					}
					notBefore(t, d.Subset(f.Train), d.Subset(f.Valid))
				}
				last := folds[k-1]
				if len(last.Train)+len(last.Valid) != n {
					t.Fatalf("the last fold covers %d of %d rows", len(last.Train)+len(last.Valid), n)
				}
				// Blocks differ in size by at most one row.
				for _, f := range folds {
					if b := len(f.Valid); b < n/(k+1) || b > n/(k+1)+1 {
						t.Fatalf("n=%d k=%d: validation block of %d rows", n, k, b)
					}
				}
			}
		}
	}
	d := timed(rng, 3, false)
	for _, k := range []int{0, 3} {
		if _, err := ForwardFolds(d, k); !errors.Is(err, ErrOptions) {
			t.Fatalf("k=%d on 3 rows: %v", k, err)
		}
	}
}

func TestSubsetKeepsTime(t *testing.T) {
	d := timed(rand.New(rand.NewPCG(1, 1)), 6, true)
	s := d.Subset([]int{1, 3, 4})
	if !s.Ordered || !slices.Equal(s.Times, []int64{d.Times[1], d.Times[3], d.Times[4]}) {
		t.Fatalf("subset times %v ordered %v", s.Times, s.Ordered)
	}
	if s := d.Subset([]int{4, 1}); s.Ordered {
		t.Fatal("rows out of order, still marked Ordered")
	}
	// A stratified random split keeps file order on both sides.
	a, b, err := Split(d, 0.5, 3)
	if err != nil || !a.Ordered || !b.Ordered {
		t.Fatalf("Split of ordered data: %v %v %v", a.Ordered, b.Ordered, err)
	}
}

func TestGroupFolds(t *testing.T) {
	d := &Dataset{Name: "g", N: 10, D: 1, X: make([]float32, 10), Y: make([]int32, 10), Classes: []string{"a"},
		Groups: []int32{0, 0, 0, 0, 1, 1, 1, 2, 2, 3}, GroupNames: []string{"w", "x", "y", "z", "unused"}}
	fs, err := GroupFolds(d, 2)
	if err != nil {
		t.Fatal(err)
	}
	// Largest first to the smaller fold: w (4) → 0, x (3) → 1, y (2) → 1, z (1) → 0.
	if want := []Fold{{Train: []int{4, 5, 6, 7, 8}, Valid: []int{0, 1, 2, 3, 9}}, {Train: []int{0, 1, 2, 3, 9}, Valid: []int{4, 5, 6, 7, 8}}}; !reflect.DeepEqual(fs, want) {
		t.Fatalf("folds %v, want %v", fs, want)
	}
	for _, k := range []int{1, 5} {
		if _, err := GroupFolds(d, k); !errors.Is(err, ErrOptions) {
			t.Fatalf("k=%d with 4 groups: %v", k, err)
		}
	}
	d.Groups = nil
	if _, err := GroupFolds(d, 2); !errors.Is(err, ErrOptions) {
		t.Fatalf("no groups: %v", err)
	}
}
