package data

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// first is the option "label in column 1", which usps-style files need
// now that the default label is the last column.
var first = &Options{LabelColumn: Column{Index: 1}}

func TestDense(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		opt    *Options
		x      []float32
		labels []string
	}{
		{"usps style", "6.0000 -1 0.5 1\n9 1 -0.25 0.125\n", first,
			[]float32{-1, 0.5, 1, 1, -0.25, 0.125}, []string{"6", "9"}},
		{"tabs, CRLF, blank lines", "1\t2\t3\r\n\r\n  \n# comment\n2 \t 4 5\r\n", first,
			[]float32{2, 3, 4, 5}, []string{"1", "2"}},
		{"comma, label last by default", "2596,51,3,5\n1859, -173 ,0,2\n", nil,
			[]float32{2596, 51, 3, 1859, -173, 0}, []string{"5", "2"}},
		{"comma, label last by -1", "2596,51,3,5\n1859, -173 ,0,2\n", &Options{LabelColumn: Column{Index: -1}},
			[]float32{2596, 51, 3, 1859, -173, 0}, []string{"5", "2"}},
		{"label in the middle", "1 a 2\n3 b 4\n", &Options{LabelColumn: Column{Index: 2}},
			[]float32{1, 2, 3, 4}, []string{"a", "b"}},
		{"explicit delimiter", "x;1.5;2\ny; 3 ;4\n", &Options{Delimiter: ';', LabelColumn: Column{Index: 1}},
			[]float32{1.5, 2, 3, 4}, []string{"x", "y"}},
		{"explicit whitespace with commas in labels", "a,b 1 2\nc 3 4\n", &Options{Delimiter: ' ', Format: FormatDense, LabelColumn: Column{Index: 1}},
			[]float32{1, 2, 3, 4}, []string{"a,b", "c"}},
		{"NumFeatures matches", "0 1 2\n", &Options{NumFeatures: 2, LabelColumn: Column{Index: 1}},
			[]float32{1, 2}, []string{"0"}},
		{"long integers and exponents", "1 12345678 -9999999 1e3 +7 0x1p4\n", first,
			[]float32{12345678, -9999999, 1000, 7, 16}, []string{"1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := readString(tt.in, tt.opt)
			if err != nil {
				t.Fatal(err)
			}
			checkDataset(t, d)
			if d.N != len(tt.labels) || !slices.Equal(d.X, tt.x) || !slices.Equal(labelsOf(d), tt.labels) {
				t.Fatalf("got %d×%d X=%v labels %q, want X=%v labels %q", d.N, d.D, d.X, labelsOf(d), tt.x, tt.labels)
			}
			if d.Features != nil || d.Times != nil || d.Ordered {
				t.Fatalf("headerless numbers: features %q times %v ordered %v", d.Features, d.Times, d.Ordered)
			}
		})
	}
}

func TestDenseMaxRows(t *testing.T) {
	d, err := readString("1 1\n2 2\n3 3 3\n", &Options{MaxRows: 2})
	if err != nil {
		t.Fatal(err)
	}
	if d.N != 2 || d.D != 1 {
		t.Fatalf("got %d×%d", d.N, d.D)
	}
}

func TestDenseMalformed(t *testing.T) {
	tests := []struct {
		name, in string
		opt      *Options
		line     int
		msg      string
	}{
		{"invalid number", "1 2 3 4 5\n" + "1 2 3 4 x\n", first, 2, `column 5: invalid number "x"`},
		{"too few columns", "1 2 3\n\n1 2\n", nil, 3, "2 columns, want 3 as on line 1"},
		{"too many columns", "# c\n1,2\n1,2,3\n", nil, 3, "3 columns, want 2 as on line 2"},
		{"NaN refused", "1 2\n1 nan\n", &Options{Format: FormatDense, LabelColumn: Column{Index: 1}, RefuseMissing: true}, 2, `column 2: data: missing value: "nan" (read missing values without --refuse-missing`},
		{"Inf", "1 +Inf\n", first, 1, "not a finite number"},
		{"overflow", "1 -1e40\n", first, 1, "out of float32 range"},
		{"empty field refused", "1,,2\n", &Options{RefuseMissing: true}, 1, `column 2: data: missing value: ""`},
		{"empty label", ",1,2\n", first, 1, "column 1: empty label"},
		{"single column", "5\n", &Options{Format: FormatDense}, 1, "need a label and at least one feature"},
		{"label column out of range", "1 2\n", &Options{LabelColumn: Column{Index: 3}}, 1, "label column 3 but the line has 2 columns"},
		{"NumFeatures mismatch", "1 2 3\n", &Options{NumFeatures: 3}, 1, "2 features, want NumFeatures 3"},
		{"label string in a feature", "1 2 3\n1 two 3\n", nil, 2, `column 2: invalid number "two"`},
		{"label first without saying so", "cat 1 2\ndog 3 4\n", nil, 1, `column 1: invalid number "cat" (if the column is not a feature`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := readString(tt.in, tt.opt)
			wantParseError(t, err, "t.txt", tt.line, tt.msg)
		})
	}
}

// TestMissingValues: empty fields, "?", "NA", "NaN" and the like read as
// NaN and are counted; a missing label is still an error.
func TestMissingValues(t *testing.T) {
	d, err := readString("a,b,c,label\n1,,2,x\n?,NA,NaN,y\n3,4,null,x\n", nil)
	if err != nil {
		t.Fatal(err)
	}
	if d.N != 3 || d.D != 3 || d.Missing != 5 {
		t.Fatalf("%d×%d with %d missing, want 3×3 with 5", d.N, d.D, d.Missing)
	}
	nan := 0
	for _, v := range d.X {
		if v != v {
			nan++
		}
	}
	if nan != 5 || d.X[0] != 1 || d.X[6] != 3 {
		t.Fatalf("X = %v", d.X)
	}
	if _, err := readString("a,b,label\n1,2,\n", nil); err == nil || !strings.Contains(err.Error(), "empty label") {
		t.Fatalf("missing label: %v", err)
	}
	if _, err := readString("a,b,label\n1,?,x\n", &Options{RefuseMissing: true}); !errors.Is(err, ErrMissing) {
		t.Fatalf("refused: %v", err)
	}
}
