package data

import (
	"bufio"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestLIBSVM(t *testing.T) {
	in := "# header comment\n" +
		"+1 1:0.5 3:-2 # tail comment\n" +
		"\n" +
		"-1 qid:7 2:1.25\r\n" +
		"1.0 1:1e2 2:2 3:3   \n" +
		"-1\n" + // a row with no features
		"   \t\n" +
		"-1.000 3:0.25"
	d, err := readString(in, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkDataset(t, d)
	if d.N != 5 || d.D != 3 {
		t.Fatalf("N=%d D=%d, want 5×3", d.N, d.D)
	}
	// -1 sorts before 1 numerically; "+1" and "1.0" are both "1".
	if want := []string{"-1", "1"}; !slices.Equal(d.Classes, want) {
		t.Errorf("classes %q, want %q", d.Classes, want)
	}
}

func TestLIBSVMValues(t *testing.T) {
	in := "+1 1:0.5 3:-2\n-1 qid:3 2:1.25\r\n1.0 1:1e2 2:2 3:3 \n-1\n\n-1.000 3:0.25\n"
	d, err := readString(in, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkDataset(t, d)
	wantX := []float32{
		0.5, 0, -2,
		0, 1.25, 0,
		100, 2, 3,
		0, 0, 0,
		0, 0, 0.25,
	}
	if d.N != 5 || d.D != 3 || !slices.Equal(d.X, wantX) {
		t.Fatalf("got %d×%d %v, want 5×3 %v", d.N, d.D, d.X, wantX)
	}
	if got, want := labelsOf(d), []string{"1", "-1", "1", "-1", "-1"}; !slices.Equal(got, want) {
		t.Errorf("labels %q, want %q", got, want)
	}
	if d.Name != "t.txt" {
		t.Errorf("name %q", d.Name)
	}
}

func TestLIBSVMNumFeatures(t *testing.T) {
	d, err := readString("1 2:1\n2 1:3\n", &Options{NumFeatures: 5})
	if err != nil {
		t.Fatal(err)
	}
	if want := []float32{0, 1, 0, 0, 0, 3, 0, 0, 0, 0}; d.D != 5 || !slices.Equal(d.X, want) {
		t.Fatalf("D=%d X=%v, want 5, %v", d.D, d.X, want)
	}
	_, err = readString("1 2:1\n2 6:3\n", &Options{NumFeatures: 5})
	wantParseError(t, err, "t.txt", 2, "index 6 beyond NumFeatures 5")
}

func TestLIBSVMMaxRows(t *testing.T) {
	d, err := readString("1 1:1\n2 2:2\n3 3:3\nbroken line\n", &Options{MaxRows: 2})
	if err != nil {
		t.Fatal(err)
	}
	if d.N != 2 || d.D != 2 || !slices.Equal(d.Classes, []string{"1", "2"}) {
		t.Fatalf("got %d×%d %q", d.N, d.D, d.Classes)
	}
}

func TestLabels(t *testing.T) {
	tests := []struct {
		in   []string
		want []string // classes
	}{
		{[]string{"+1", "-1", "1", "-1.0"}, []string{"-1", "1"}},
		{[]string{"10", "9", "1", "2.5", "1e1"}, []string{"1", "2.5", "9", "10"}},
		{[]string{"-0", "0.0", "+0"}, []string{"0"}},
		{[]string{"b", "a", "10", "9"}, []string{"10", "9", "a", "b"}}, // not all numeric: lexical
		{[]string{"cat", "dog", "cat"}, []string{"cat", "dog"}},
		{[]string{"NaN", "1"}, []string{"1", "NaN"}}, // NaN is not a number label
		{[]string{"1000000", "0.125"}, []string{"0.125", "1000000"}},
	}
	for _, tt := range tests {
		var sb strings.Builder
		for _, l := range tt.in {
			sb.WriteString(l + " 1:1\n")
		}
		d, err := readString(sb.String(), nil)
		if err != nil {
			t.Fatalf("%q: %v", tt.in, err)
		}
		if !slices.Equal(d.Classes, tt.want) {
			t.Errorf("labels %q: classes %q, want %q", tt.in, d.Classes, tt.want)
		}
		for i, l := range labelsOf(d) {
			if canonicalLabel(tt.in[i]) != l {
				t.Errorf("labels %q: row %d is %q", tt.in, i, l)
			}
		}
	}
}

func TestLIBSVMMalformed(t *testing.T) {
	tests := []struct {
		name, in string
		line     int
		msg      string
	}{
		{"index 0", "1 1:1\n1 0:1\n", 2, "column 2: index 0: indices start at 1"},
		{"negative index", "1 1:1\n\n1 -3:1\n", 3, "index -3: indices start at 1"},
		{"non-increasing", "1 1:1 3:2 3:4\n", 1, "column 4: index 3 after 3: indices must increase"},
		{"decreasing", "1 2:1 1:2\n", 1, "index 1 after 2"},
		{"bad value", "1 1:1\n1 1:1 2:x\n", 2, `column 3: index 2: invalid number "x"`},
		{"empty value", "1 1:\n", 1, `invalid number ""`},
		{"bad index", "1 a:1\n", 1, `column 2: invalid index "a"`},
		{"empty index", "1 :1\n", 1, `invalid index ""`},
		{"NaN", "1 1:NaN\n", 1, `not a finite number "NaN"`},
		{"Inf", "1 1:1\n1 1:-inf\n", 2, "not a finite number"},
		{"float32 overflow", "1 1:1e39\n", 1, "out of float32 range"},
		{"no colon", "1 1:1 2\n", 1, `column 3: "2" is not index:value`},
		{"missing label", "1:1 2:2\n", 1, "column 1: missing label"},
		{"huge index", "1 99999999999:1\n", 1, "dataset too large"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := readString(tt.in, nil)
			wantParseError(t, err, "t.txt", tt.line, tt.msg)
		})
	}
}

func TestLIBSVMTooLarge(t *testing.T) {
	defer func(m int) { maxValues = m }(maxValues)
	maxValues = 100
	_, err := readString("1 1:1\n1 60:1\n", nil)
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("got %v, want ErrTooLarge", err)
	}
	wantParseError(t, err, "t.txt", 2, "2 rows × 60 features exceeds 100 values (read as libsvm)")
}

func TestEmptyInput(t *testing.T) {
	for _, in := range []string{"", "\n\n", "# only a comment\n"} {
		_, err := readString(in, &Options{Format: FormatLIBSVM})
		wantParseError(t, err, "t.txt", 0, "no data rows")
		_, err = readString(in, &Options{Format: FormatDense})
		wantParseError(t, err, "t.txt", 0, "no data rows")
	}
}

// TestGarbageIsNotLIBSVM: text with colons but no index:value pairs (a log,
// a binary file) is not taken for LIBSVM, and a file read as LIBSVM that
// holds none stops within libsvmProbeRows lines with an error that names
// the format — not after reading gigabytes, with "0 features".
func TestGarbageIsNotLIBSVM(t *testing.T) {
	var b strings.Builder
	for i := range 200000 {
		fmt.Fprintf(&b, "x%d at 12:3 said hello\n", i)
	}
	garbage := b.String()
	if f := sniff("log.csv", bufio.NewReader(strings.NewReader(garbage)), 0); f == FormatLIBSVM {
		t.Fatalf("garbage sniffed as %v", f)
	}
	_, err := Read(strings.NewReader(garbage), "log.csv", &Options{Format: FormatLIBSVM})
	wantParseError(t, err, "log.csv", 1, `column 2: "at" is not index:value`)
	// Lines of one token each (a binary blob, a list): no pair in sight.
	blob := strings.Repeat("\x00\x13garbage\x7f\n", 200000)
	_, err = Read(strings.NewReader(blob), "blob.csv", &Options{Format: FormatLIBSVM})
	wantParseError(t, err, "blob.csv", libsvmProbeRows, "1000 lines and not one index:value pair: this is not LIBSVM data (read as libsvm")
	// Real LIBSVM is still found, time-of-day CSVs are still CSV.
	if f := sniff("a.txt", bufio.NewReader(strings.NewReader("+1 3:0.5 7:1\n-1 2:1\n")), 0); f != FormatLIBSVM {
		t.Fatalf("LIBSVM sniffed as %v", f)
	}
	// The rows × features bound holds while reading.
	defer func(m int) { maxValues = m }(maxValues)
	maxValues = 100
	_, err = Read(strings.NewReader(strings.Repeat("1 10:1\n", 50)), "big.txt", &Options{Format: FormatLIBSVM})
	wantParseError(t, err, "big.txt", 11, "11 rows × 10 features exceeds 100 values (read as libsvm)")
}

// TestLIBSVMSparseIndexBeyondItsData: a one-line file "1 268435455:1" is
// within the 2^28-value bound, and made the reader allocate a 1 GiB dense
// matrix for one value. Without --features (NumFeatures) the dense matrix
// may now hold at most libsvmDensePerValue values per value the file holds
// (a row's label, an index:value pair) past libsvmDenseFree: a larger one
// is refused, naming the line and column of the index that made it and
// the flag that reads it anyway. With NumFeatures the user said how wide
// the data is, and only the 2^28 bound applies.
func TestLIBSVMSparseIndexBeyondItsData(t *testing.T) {
	_, err := readString("1 268435455:1\n", nil)
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("got %v, want ErrTooLarge", err)
	}
	pe := wantParseError(t, err, "t.txt", 1, "column 2: data: dataset too large: index 268435455 makes 1 row × 268435455 features (1.0 GiB as float32) of the 2 values the file holds (1 row, 1 index:value pair); if the data has 268435455 features, give --features 268435455 (read as libsvm)")
	if pe.Column != 2 {
		t.Fatalf("column %d, want 2", pe.Column)
	}
	// Named where the highest index is, not where reading stopped.
	_, err = readString("1 1:1 2:1\n1 3:1 40000000:2\n2 1:1\n", nil)
	wantParseError(t, err, "t.txt", 2, "column 3: data: dataset too large: index 40000000 makes 3 rows × 40000000 features (458 MiB as float32) of the 8 values the file holds (3 rows, 5 index:value pairs)")

	// With NumFeatures, as the message says, or within the free size, it
	// reads.
	d, err := readString("1 3000000:1\n", &Options{NumFeatures: 3000000})
	if err != nil || d.N != 1 || d.D != 3000000 || d.X[2999999] != 1 {
		t.Fatalf("with NumFeatures: %v", err)
	}
	if d, err := readString(fmt.Sprintf("1 %d:1\n", libsvmDenseFree), nil); err != nil || d.D != libsvmDenseFree {
		t.Fatalf("%d values: %v", libsvmDenseFree, err)
	}
	_, err = readString(fmt.Sprintf("1 %d:1\n", libsvmDenseFree+1), nil)
	wantParseError(t, err, "t.txt", 1, fmt.Sprintf("give --features %d", libsvmDenseFree+1))
	// Past the free size (lowered here), sparse data holding one value in
	// libsvmDensePerValue reads, one in more does not: rows of a label and
	// one pair, the last pair at the width.
	defer func(f int) { libsvmDenseFree = f }(libsvmDenseFree)
	libsvmDenseFree = 1 << 12
	rows := 2 * libsvmDenseFree / libsvmDensePerValue
	sparse := func(width int) string {
		var b strings.Builder
		for i := range rows - 1 {
			fmt.Fprintf(&b, "%d %d:1\n", i%2, 1+i%5)
		}
		fmt.Fprintf(&b, "1 %d:1\n", width)
		return b.String()
	}
	width := 2 * libsvmDensePerValue
	if d, err := readString(sparse(width), nil); err != nil || d.N*d.D <= libsvmDenseFree || d.D != width {
		t.Fatalf("%d rows × %d: %v", rows, width, err)
	}
	_, err = readString(sparse(width+1), nil)
	wantParseError(t, err, "t.txt", rows, fmt.Sprintf("column 2: data: dataset too large: index %d makes %d rows × %d features", width+1, rows, width+1))
}
