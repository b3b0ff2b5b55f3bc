package data

import (
	"fmt"
	"slices"
)

// Dataset is a labelled dataset held as a dense row-major float32 matrix.
type Dataset struct {
	Name     string    // e.g. file base name
	X        []float32 // N*D values, row-major: row i is X[i*D:(i+1)*D]
	N, D     int
	Y        []int32  // class index per row, into Classes
	Classes  []string // distinct label strings; sorted numerically when all labels parse as numbers, else lexically
	Features []string // optional feature names (len D or nil)
	// Times holds each row's time stamp in nanoseconds (since 1970-01-01
	// UTC for dates; since midnight for a time of day alone; the value of
	// a numeric time column × 1e9), or is nil when the data has no time
	// column. Only the order of the values is meaningful across files.
	Times []int64
	// Ordered says the rows are in time order (oldest first): the data has
	// a time column (readers refuse rows that go back in time), the
	// dataset is declared chronological (Standard), or the caller said so
	// (Options.Ordered). Time-ordered model selection relies on it.
	Ordered bool
	// Shuffled says the caller knows the rows are independent samples in
	// no particular order, not a recording (Options.Shuffled): model
	// selection then validates on a random sample without looking at the
	// order (see DetectOrder). Never set together with Ordered.
	Shuffled bool
	// Missing counts the values read as missing (NaN in X): empty fields,
	// "?", "NA" and the like (see Options.RefuseMissing). Scaling maps
	// them to the middle of their feature's range (inference.Scaler).
	Missing int
	// Groups holds each row's group (an index into GroupNames): the
	// person, device, room or site the row was recorded for
	// (Options.GroupColumn), or is nil when the data has no group column.
	// Training validates grouped rows by leaving whole groups out.
	Groups     []int32
	GroupNames []string
	// Unlabelled counts the rows dropped because their label was missing
	// (Options.SkipUnlabelled).
	Unlabelled int
	// Spec records how the rows were read from a file, so that another
	// file can be read the same way (nil for data made in memory). It is
	// shared by datasets derived from this one: do not modify it.
	Spec *ReadSpec
}

// Row returns row i of X. The slice aliases d.X and has capacity D, so
// appending to it cannot overwrite the next row.
func (d *Dataset) Row(i int) []float32 {
	return d.X[i*d.D : (i+1)*d.D : (i+1)*d.D]
}

// Relabel re-maps d.Y so that d.Classes == classes (e.g. make a test set
// use the training set's class order). A label in d that is not in classes
// is an error naming the label (wrapping ErrUnknownLabel), and d is left
// unchanged. Labels in classes absent from d are fine. Only labels that
// occur in some row must be in classes.
func (d *Dataset) Relabel(classes []string) error {
	index := make(map[string]int32, len(classes))
	for i, c := range classes {
		if _, dup := index[c]; dup {
			return fmt.Errorf("%w: class %q listed twice", ErrOptions, c)
		}
		index[c] = int32(i)
	}
	used := make([]bool, len(d.Classes))
	for _, y := range d.Y {
		used[y] = true
	}
	remap := make([]int32, len(d.Classes))
	for i, c := range d.Classes {
		j, ok := index[c]
		if !ok && used[i] {
			return fmt.Errorf("%w %q in %s: not among the %d expected classes", ErrUnknownLabel, c, d.Name, len(classes))
		}
		remap[i] = j
	}
	for i, y := range d.Y {
		d.Y[i] = remap[y]
	}
	d.Classes = slices.Clone(classes)
	return nil
}

// Subset returns a new Dataset with the given rows (copied, in the given
// order), same Classes/Features/Spec. It is Ordered if d is and rows is
// non-decreasing. It panics if a row is out of range, like a slice index.
func (d *Dataset) Subset(rows []int) *Dataset {
	s := &Dataset{
		Name:     d.Name,
		X:        make([]float32, 0, len(rows)*d.D),
		N:        len(rows),
		D:        d.D,
		Y:        make([]int32, len(rows)),
		Classes:  slices.Clone(d.Classes),
		Features: slices.Clone(d.Features),
		Ordered:  d.Ordered && slices.IsSorted(rows),
		Shuffled: d.Shuffled,
		Spec:     d.Spec,

		GroupNames: d.GroupNames,
	}
	if d.Times != nil {
		s.Times = make([]int64, len(rows))
	}
	if d.Groups != nil {
		s.Groups = make([]int32, len(rows))
	}
	for k, i := range rows {
		s.X = append(s.X, d.Row(i)...)
		if d.Missing > 0 {
			for _, v := range d.Row(i) {
				if v != v {
					s.Missing++
				}
			}
		}
		s.Y[k] = d.Y[i]
		if d.Times != nil {
			s.Times[k] = d.Times[i]
		}
		if d.Groups != nil {
			s.Groups[k] = d.Groups[i]
		}
	}
	return s
}

// OneVsRest returns a copy relabelled as a two-class problem:
// Classes = ["rest", positive], where rows whose label is positive get
// class 1 ("covtype class 2 against the rest") and all others class 0.
// positive is canonicalised like a loaded label ("2.0" means "2"); it must
// be one of d.Classes.
func (d *Dataset) OneVsRest(positive string) (*Dataset, error) {
	b := &Dataset{
		Name:     d.Name,
		X:        d.X,
		N:        d.N,
		D:        d.D,
		Y:        slices.Clone(d.Y),
		Classes:  d.Classes,
		Features: slices.Clone(d.Features),
		Times:    slices.Clone(d.Times),
		Ordered:  d.Ordered,
		Shuffled: d.Shuffled,
		Spec:     d.Spec,

		Groups:     slices.Clone(d.Groups),
		GroupNames: d.GroupNames,
		Unlabelled: d.Unlabelled,
	}
	if err := b.oneVsRest(positive); err != nil {
		return nil, err
	}
	b.X = slices.Clone(d.X)
	return b, nil
}

// oneVsRest is OneVsRest in place (no copy of X, which is 125 MB for
// covtype).
func (d *Dataset) oneVsRest(positive string) error {
	positive = canonicalLabel(positive)
	pos := slices.Index(d.Classes, positive)
	if pos < 0 {
		return fmt.Errorf("%w %q in %s: classes are %q", ErrUnknownLabel, positive, d.Name, d.Classes)
	}
	rest := "rest"
	if positive == rest {
		rest = "not rest"
	}
	for i, y := range d.Y {
		if int(y) == pos {
			d.Y[i] = 1
		} else {
			d.Y[i] = 0
		}
	}
	d.Classes = []string{rest, positive}
	return nil
}

// pad widens d to D features by appending zero columns, as a LIBSVM file
// whose highest indices never occur would be read with NumFeatures = D.
func (d *Dataset) pad(D int) {
	if D <= d.D {
		return
	}
	x := make([]float32, d.N*D)
	for i := range d.N {
		copy(x[i*D:], d.Row(i))
	}
	d.X, d.D = x, D
	if d.Features != nil {
		d.Features = append(d.Features, make([]string, D-len(d.Features))...)
	}
	if d.Spec != nil {
		s := *d.Spec
		s.NumFeatures = D
		d.Spec = &s
	}
}
