package data

import "math"

// A recording's column that holds one value over a long stretch at its
// start or end, and varies in the rest, is often a gap that was filled in:
// readings that were missing (a feed that began late, a sensor that
// stopped) replaced by a mean or a last value. A model trained on such a
// recording learns the column from the other rows alone, and forward
// validation's earliest folds hardly see it vary. Natural resting values
// are not gaps: a count at 0, a light sensor at 0 lux through the night, a
// Wi-Fi access point at "not heard" sit at the end of their range, so a
// stretch counts only when its value lies strictly inside the range of
// the column's other values (or is missing, NaN, throughout).

// StuckRun is one column's constant stretch at the start or the end of a
// recording (rows in time order, TimeOrder).
type StuckRun struct {
	Feature int     // column index into the rows (and Features)
	Latest  bool    // the stretch ends the recording; else it starts it
	Rows    int     // rows in the stretch
	Value   float32 // the value it holds (NaN: missing throughout)
}

// Limits of StuckRuns: a stretch must hold at least StuckShare of the rows
// and at least StuckMinRows of them.
const (
	StuckShare   = 0.2
	StuckMinRows = 100
)

// StuckRuns returns the stuck stretches of d's columns, taking its rows in
// time order: for each column, the run of equal values (NaN equal to NaN)
// that starts the recording and the one that ends it, each reported when
// it holds at least StuckShare of the rows and StuckMinRows, the column
// varies outside it, and its value is NaN or lies strictly between the
// smallest and the largest value the column takes outside it. Runs are
// listed by column, the earliest before the latest. One pass over the
// rows per column; no allocation beyond the result and the time order.
func StuckRuns(d *Dataset) []StuckRun {
	if d.N == 0 || d.D == 0 {
		return nil
	}
	least := max(StuckMinRows, int(math.Ceil(StuckShare*float64(d.N))))
	if least >= d.N {
		return nil
	}
	order := TimeOrder(d)
	var out []StuckRun
	for f := range d.D {
		at := func(i int) float32 { return d.X[order[i]*d.D+f] }
		same := func(a, b float32) bool { return a == b || (a != a && b != b) }
		first, last := at(0), at(d.N-1)
		pre := 1
		for pre < d.N && same(at(pre), first) {
			pre++
		}
		if pre == d.N {
			continue // constant throughout: no stretch to speak of
		}
		suf := 1
		for suf < d.N && same(at(d.N-1-suf), last) {
			suf++
		}
		if pre >= least && inside(first, at, pre, d.N) {
			out = append(out, StuckRun{Feature: f, Rows: pre, Value: first})
		}
		if suf >= least && inside(last, at, 0, d.N-suf) {
			out = append(out, StuckRun{Feature: f, Latest: true, Rows: suf, Value: last})
		}
	}
	return out
}

// inside says whether v, a stretch's value, is NaN or strictly between the
// smallest and the largest non-NaN value of rows [lo, hi).
func inside(v float32, at func(int) float32, lo, hi int) bool {
	if v != v {
		return true
	}
	below, above := false, false
	for i := lo; i < hi && !(below && above); i++ {
		x := at(i)
		below = below || x < v
		above = above || x > v
	}
	return below && above
}
