package data

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/ulikunitz/xz"
)

func gzipBytes(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	if _, err := w.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func xzBytes(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := xz.NewWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func readString(s string, opt *Options) (*Dataset, error) {
	return Read(strings.NewReader(s), "t.txt", opt)
}

// checkDataset verifies the invariants documented in doc.go.
func checkDataset(t testing.TB, d *Dataset) {
	t.Helper()
	if len(d.X) != d.N*d.D || len(d.Y) != d.N {
		t.Fatalf("%s: len(X)=%d len(Y)=%d for N=%d D=%d", d.Name, len(d.X), len(d.Y), d.N, d.D)
	}
	nan := 0
	for i, v := range d.X {
		if math.IsInf(float64(v), 0) {
			t.Fatalf("%s: X[%d] = %v", d.Name, i, v)
		}
		if math.IsNaN(float64(v)) {
			nan++
		}
	}
	if nan != d.Missing { // NaN only as counted missing values
		t.Fatalf("%s: %d NaN in X, %d values counted missing", d.Name, nan, d.Missing)
	}
	for i, y := range d.Y {
		if y < 0 || int(y) >= len(d.Classes) {
			t.Fatalf("%s: Y[%d] = %d with %d classes", d.Name, i, y, len(d.Classes))
		}
	}
	seen := map[string]bool{}
	for _, c := range d.Classes {
		if seen[c] {
			t.Fatalf("%s: class %q twice in %q", d.Name, c, d.Classes)
		}
		seen[c] = true
	}
	if d.Features != nil && len(d.Features) != d.D {
		t.Fatalf("%s: %d feature names for D=%d", d.Name, len(d.Features), d.D)
	}
	if d.Times != nil {
		if len(d.Times) != d.N {
			t.Fatalf("%s: %d times for %d rows", d.Name, len(d.Times), d.N)
		}
		if !d.Ordered {
			t.Fatalf("%s: times %v, not ordered", d.Name, d.Times)
		}
		latest := map[int32]int64{} // within each group (-1: all rows)
		for i, at := range d.Times {
			g := int32(-1)
			if d.Groups != nil {
				g = d.Groups[i]
			}
			if last, ok := latest[g]; ok && at < last {
				t.Fatalf("%s: row %d's time %d is before its group's %d", d.Name, i, at, last)
			}
			latest[g] = at
		}
	}
	if d.Groups != nil {
		if len(d.Groups) != d.N {
			t.Fatalf("%s: %d groups for %d rows", d.Name, len(d.Groups), d.N)
		}
		for i, g := range d.Groups {
			if g < 0 || int(g) >= len(d.GroupNames) {
				t.Fatalf("%s: Groups[%d] = %d with %d groups", d.Name, i, g, len(d.GroupNames))
			}
		}
		if len(slices.Compact(slices.Sorted(slices.Values(d.GroupNames)))) != len(d.GroupNames) {
			t.Fatalf("%s: group names %q repeat", d.Name, d.GroupNames)
		}
	}
	if s := d.Spec; s != nil {
		if s.NumFeatures != d.D || !slices.Equal(s.Features, d.Features) {
			t.Fatalf("%s: spec %s for D=%d features %q", d.Name, s, d.D, d.Features)
		}
		if (len(s.Times) > 0) != (d.Times != nil) {
			t.Fatalf("%s: spec %s with times %v", d.Name, s, d.Times)
		}
	}
}

// sameData reports how a and b differ in rows, labels, features and
// times ("" if they do not).
func sameData(a, b *Dataset) string {
	switch {
	case a.N != b.N || a.D != b.D:
		return fmt.Sprintf("%d×%d vs %d×%d", a.N, a.D, b.N, b.D)
	case !slices.EqualFunc(a.X, b.X, func(u, v float32) bool { return u == v || u != u && v != v }): // NaN: missing in both
		return "X differs"
	case !slices.Equal(labelsOf(a), labelsOf(b)):
		return "labels differ"
	case !slices.Equal(a.Features, b.Features):
		return fmt.Sprintf("features %q vs %q", a.Features, b.Features)
	case !slices.Equal(a.Times, b.Times):
		return "times differ"
	}
	return ""
}

// labelsOf returns the label string of every row.
func labelsOf(d *Dataset) []string {
	s := make([]string, d.N)
	for i, y := range d.Y {
		s[i] = d.Classes[y]
	}
	return s
}

// wantParseError checks that err is a *ParseError for file and line whose
// message contains substr.
func wantParseError(t testing.TB, err error, file string, line int, substr string) *ParseError {
	t.Helper()
	var pe *ParseError
	if !errors.As(err, &pe) {
		t.Fatalf("got error %v (%T), want *ParseError", err, err)
	}
	if pe.File != file || pe.Line != line || !strings.Contains(pe.Error(), substr) {
		t.Fatalf("got %q (file %q line %d), want file %q line %d containing %q", pe.Error(), pe.File, pe.Line, file, line, substr)
	}
	if want := fmt.Sprintf("%s:%d: ", file, line); line > 0 && !strings.HasPrefix(pe.Error(), want) {
		t.Fatalf("error %q does not start with %q", pe.Error(), want)
	}
	return pe
}
