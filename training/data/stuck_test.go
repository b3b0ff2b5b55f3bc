package data

import (
	"math"
	"testing"
)

// stuckSet is a 1,000-row recording of six columns, in time order by
// Times although stored newest first:
//
//   - 0 "filled": 0.5 over the earliest 300 rows, then varies over [0, 1];
//   - 1 "floor": 0 (its minimum) over the earliest 400 rows, then varies above it;
//   - 2 "stopped": varies, then 0.25 over the latest 250 rows;
//   - 3 "late": missing (NaN) over the earliest 500 rows, then varies;
//   - 4 "short": 0.5 over the earliest 150 rows only (15%);
//   - 5 "flat": 3 throughout.
func stuckSet() *Dataset {
	const n, d = 1000, 6
	ds := &Dataset{N: n, D: d, X: make([]float32, n*d), Y: make([]int32, n), Classes: []string{"a", "b"},
		Features: []string{"filled", "floor", "stopped", "late", "short", "flat"}, Times: make([]int64, n)}
	wave := func(t int) float32 { return float32(0.5 + 0.5*math.Sin(float64(t)/7)) }
	for t := range n {
		row := ds.X[(n-1-t)*d:][:d] // newest first: only Times gives the order
		ds.Times[n-1-t] = int64(t)
		row[0], row[1], row[2], row[3], row[4], row[5] = wave(t), 0.1+wave(t), wave(t+3), wave(t+5), wave(t+1), 3
		if t < 300 {
			row[0] = 0.5
		}
		if t < 400 {
			row[1] = 0
		}
		if t >= n-250 {
			row[2] = 0.25
		}
		if t < 500 {
			row[3] = float32(math.NaN())
		}
		if t < 150 {
			row[4] = 0.5
		}
		ds.Y[n-1-t] = int32(t % 2)
	}
	return ds
}

// TestStuckRuns: a value inside the column's range held over the earliest
// or latest fifth of a recording, or a column missing there, is reported
// with its end and length; a column resting at its minimum, a shorter
// stretch and a constant column are not; the rows are taken in time
// order, not file order.
func TestStuckRuns(t *testing.T) {
	got := StuckRuns(stuckSet())
	want := []StuckRun{
		{Feature: 0, Rows: 300, Value: 0.5},
		{Feature: 2, Latest: true, Rows: 250, Value: 0.25},
		{Feature: 3, Rows: 500},
	}
	if len(got) != len(want) {
		t.Fatalf("StuckRuns = %+v, want %+v", got, want)
	}
	for i, w := range want {
		g := got[i]
		same := g.Value == w.Value || (g.Feature == 3 && g.Value != g.Value)
		if g.Feature != w.Feature || g.Latest != w.Latest || g.Rows != w.Rows || !same {
			t.Errorf("run %d = %+v, want %+v (feature 3: NaN)", i, g, w)
		}
	}
}

// TestStuckRunsTooFew: a recording of fewer rows than StuckMinRows has no
// stretch long enough to report, and an empty one none at all.
func TestStuckRunsTooFew(t *testing.T) {
	ds := stuckSet()
	small := ds.Subset([]int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	if r := StuckRuns(small); r != nil {
		t.Fatalf("10 rows: %+v", r)
	}
	if r := StuckRuns(&Dataset{D: 3}); r != nil {
		t.Fatalf("no rows: %+v", r)
	}
}
