package data

import (
	"fmt"
	"math"
	"slices"
)

// Row order. A file without a time column may still be a recording: rows
// taken seconds apart, in the order they were taken. Validating such rows
// on a random sample puts near-identical neighbours on both sides and
// rewards a model that memorises them, so the order must be known before
// a model is chosen. DetectOrder tells it from the rows themselves, with
// two statistics that a random order would make small:
//
//   - labels: neighbouring rows share their label more often than a random
//     order would have them (fewer label changes than expected);
//   - features: the median over features of the lag-1 autocorrelation in
//     file order (a slowly varying signal is close to its neighbour).
//
// Each is judged by effect size and by its z-score against a random order,
// so a large file does not make a negligible effect significant and a
// small file does not make a large effect look certain.
//
// A file sorted by label (each class in a few long runs: LIBSVM's cod-rna
// is 6 runs of 2 classes) has the same statistics but is no time order:
// forward validation would leave classes out of every fold. Few runs per
// class are reported as Grouped, and such rows are validated as shuffled
// rows are — say --time-ordered if they are a recording.

// Order is what DetectOrder found.
type Order struct {
	Recorded bool // the rows look like a recording in time order
	Grouped  bool // the rows are grouped by class: few long runs of each label

	N, Classes    int     // rows, and classes present
	Changes       int     // label changes between neighbouring rows
	ExpectChanges float64 // expected under a random order
	LabelZ        float64 // how many standard deviations fewer changes than expected
	Autocorr      float64 // median over features of the lag-1 autocorrelation
	AutocorrZ     float64 // Autocorr·√N: its z-score against a random order
}

// Thresholds of DetectOrder: an effect must be both this large and this
// many standard deviations from a random order.
const (
	orderMinRows      = 50  // fewer rows: undecidable, treated as shuffled
	orderZ            = 4.0 // z-score of either statistic
	orderChangeRatio  = 0.8 // at most this share of the expected label changes
	orderAutocorr     = 0.2 // median lag-1 autocorrelation at least this
	groupedRunsFactor = 4   // at most this many label runs per class present: grouped
)

// DetectOrder reports whether d's rows, in file order, look like a
// recording (see Order). It reads d only.
func DetectOrder(d *Dataset) Order {
	o := Order{N: d.N}
	counts := make([]int, len(d.Classes))
	for _, y := range d.Y {
		counts[y]++
	}
	for _, c := range counts {
		if c > 0 {
			o.Classes++
		}
	}
	if d.N < orderMinRows {
		return o
	}
	for i := 1; i < d.N; i++ {
		if d.Y[i] != d.Y[i-1] {
			o.Changes++
		}
	}
	// Under a random order each neighbouring pair shares its label with
	// probability q = Σ n_k(n_k−1)/(n(n−1)); the count of shared pairs S
	// has variance about (n−1)q(1−q) + 2(n−2)(r − q²), r = Σ p_k³ being the
	// chance that three neighbours share it (overlapping pairs correlate).
	n := float64(d.N)
	var q, r float64
	for _, c := range counts {
		p := float64(c) / n
		q += float64(c) * float64(c-1) / (n * (n - 1))
		r += p * p * p
	}
	o.ExpectChanges = (n - 1) * (1 - q)
	if v := (n-1)*q*(1-q) + 2*(n-2)*(r-q*q); v > 0 {
		o.LabelZ = (o.ExpectChanges - float64(o.Changes)) / math.Sqrt(v)
	}
	o.Autocorr = medianAutocorr(d)
	o.AutocorrZ = o.Autocorr * math.Sqrt(n)

	labels := o.LabelZ >= orderZ && float64(o.Changes) <= orderChangeRatio*o.ExpectChanges
	features := o.AutocorrZ >= orderZ && o.Autocorr >= orderAutocorr
	o.Grouped = o.Changes+1 <= groupedRunsFactor*o.Classes
	o.Recorded = (labels || features) && !o.Grouped
	return o
}

// medianAutocorr is the median over features (constant ones skipped) of
// the lag-1 autocorrelation in row order; NaN values are skipped with
// their pairs. 0 when no feature varies.
func medianAutocorr(d *Dataset) float64 {
	var acs []float64
	for j := range d.D {
		var sum float64
		m := 0
		for i := range d.N {
			if v := float64(d.X[i*d.D+j]); v == v {
				sum += v
				m++
			}
		}
		if m < 2 {
			continue
		}
		mean := sum / float64(m)
		var num, den float64
		prev := math.NaN()
		for i := range d.N {
			v := float64(d.X[i*d.D+j]) - mean
			if v != v {
				prev = math.NaN()
				continue
			}
			den += v * v
			if prev == prev {
				num += v * prev
			}
			prev = v
		}
		if den > 0 {
			acs = append(acs, num/den)
		}
	}
	if len(acs) == 0 {
		return 0
	}
	slices.Sort(acs)
	return acs[len(acs)/2]
}

// String says what was found, with the figures, for the user.
func (o Order) String() string {
	switch {
	case o.N < orderMinRows:
		return fmt.Sprintf("%d rows are too few to tell whether they are a recording", o.N)
	case o.Grouped:
		return fmt.Sprintf("rows grouped by class (%d runs of labels for %d classes): a sorted file, not a time order", o.Changes+1, o.Classes)
	}
	verdict := "rows look like independent samples"
	if o.Recorded {
		verdict = "rows look like a recording in time order"
	}
	return fmt.Sprintf("%s: %d label changes between neighbours where a random order has %.0f (z = %.1f); neighbouring values correlate %.2f (median over features; z = %.1f)",
		verdict, o.Changes, o.ExpectChanges, o.LabelZ, o.Autocorr, o.AutocorrZ)
}
