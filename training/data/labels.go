package data

import (
	"cmp"
	"math"
	"slices"
	"strconv"
)

// labeler assigns provisional ids to raw label strings while a file is
// parsed; finish turns them into the final sorted class list. Lookups with
// m[string(b)] do not allocate, so a row's label costs one map probe.
type labeler struct {
	ids map[string]int32
	raw []string
}

func newLabeler() *labeler { return &labeler{ids: make(map[string]int32)} }

// id returns the provisional id of the raw label b.
func (l *labeler) id(b []byte) int32 {
	if id, ok := l.ids[string(b)]; ok {
		return id
	}
	id := int32(len(l.raw))
	s := string(b)
	l.ids[s] = id
	l.raw = append(l.raw, s)
	return id
}

// idString is id for a label held as a string.
func (l *labeler) idString(s string) int32 {
	if id, ok := l.ids[s]; ok {
		return id
	}
	id := int32(len(l.raw))
	l.ids[s] = id
	l.raw = append(l.raw, s)
	return id
}

// finish canonicalises the raw labels, merges those that denote the same
// number ("+1" and "1"), sorts the classes and rewrites y from provisional
// ids to class indices.
func (l *labeler) finish(y []int32) []string {
	canon := make([]string, len(l.raw))
	for i, s := range l.raw {
		canon[i] = canonicalLabel(s)
	}
	classes := sortClasses(slices.Compact(slices.Sorted(slices.Values(canon))))
	index := make(map[string]int32, len(classes))
	for i, c := range classes {
		index[c] = int32(i)
	}
	remap := make([]int32, len(canon))
	for i, c := range canon {
		remap[i] = index[c]
	}
	for i, v := range y {
		y[i] = remap[v]
	}
	return classes
}

// canonicalLabel returns the shortest canonical spelling of a numeric label
// (integers without exponent or fraction, "-0" as "0", others as
// strconv.FormatFloat(v, 'g', -1, 64)); a non-numeric label is returned
// unchanged.
func canonicalLabel(s string) string {
	v, ok := labelValue(s)
	if !ok {
		return s
	}
	if v == math.Trunc(v) && math.Abs(v) < 1<<53 {
		return strconv.FormatInt(int64(v), 10)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// labelValue parses a label as a finite number.
func labelValue(s string) (float64, bool) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false
	}
	if v == 0 {
		v = 0 // "-0" is the class "0"
	}
	return v, true
}

// sortClasses orders distinct canonical labels numerically when all are
// numbers, else lexically (the input is already lexically sorted).
func sortClasses(classes []string) []string {
	for _, c := range classes {
		if _, ok := labelValue(c); !ok {
			return classes
		}
	}
	slices.SortFunc(classes, func(a, b string) int {
		x, _ := labelValue(a)
		y, _ := labelValue(b)
		return cmp.Compare(x, y)
	})
	return classes
}
