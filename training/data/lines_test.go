package data

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// wideText returns a header of d feature names and a label, then n rows,
// every field separated by delim: with d = 10,000 the header alone is
// about 130 KB, twice the window the delimiter is sniffed in.
func wideText(d, n int, delim string) []byte {
	var b bytes.Buffer
	for j := range d {
		fmt.Fprintf(&b, "sensor_%05d%s", j, delim)
	}
	b.WriteString("label\n")
	for i := range n {
		for j := range d {
			fmt.Fprintf(&b, "%d.%d5%s", i, j%10, delim) // never whole numbers: not the row number
		}
		fmt.Fprintf(&b, "c%d\n", i%2)
	}
	return b.Bytes()
}

// TestWideCSV: a header longer than 64 KiB (the sniff window) was read as
// one column ("1 column: need a label and at least one feature"). Every
// delimiter, compressed or not, from a file or a stream, with data rows
// or none after the header.
func TestWideCSV(t *testing.T) {
	const d = 10000
	for _, delim := range []string{",", ";", "\t", " "} {
		in := wideText(d, 3, delim)
		if i := bytes.IndexByte(in, '\n'); i <= sniffSize {
			t.Fatalf("header of %d bytes; the test needs one over %d", i, sniffSize)
		}
		for name, b := range map[string][]byte{"plain": in, "gzip": gzipBytes(t, in), "xz": xzBytes(t, in)} {
			t.Run(fmt.Sprintf("%q/%s", delim, name), func(t *testing.T) {
				ds, err := Read(bytes.NewReader(b), "wide.csv", nil)
				if err != nil {
					t.Fatal(err)
				}
				checkDataset(t, ds)
				if ds.D != d || ds.N != 3 || ds.Features[d-1] != fmt.Sprintf("sensor_%05d", d-1) || ds.Spec.Delimiter != rune(delim[0]) {
					t.Fatalf("%d×%d, last feature %q, delimiter %q", ds.N, ds.D, ds.Features[d-1], ds.Spec.Delimiter)
				}
				if got := ds.Row(2)[d-1]; got != 2.95 {
					t.Fatalf("row 3's last feature %v, want 2.95", got)
				}
				if labels := labelsOf(ds); strings.Join(labels, " ") != "c0 c1 c0" {
					t.Fatalf("labels %q", labels)
				}
			})
		}
	}
	t.Run("file", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "wide.csv")
		if err := os.WriteFile(path, wideText(d, 40, ","), 0o644); err != nil {
			t.Fatal(err)
		}
		ds, err := Load(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if ds.D != d || ds.N != 40 {
			t.Fatalf("%d×%d, want 40×%d", ds.N, ds.D, d)
		}
	})
	t.Run("header then one row", func(t *testing.T) {
		in := wideText(d, 1, ",")
		ds, err := Read(bytes.NewReader(in[:len(in)-1]), "wide.csv", nil) // no final newline
		if err != nil {
			t.Fatal(err)
		}
		if ds.D != d || ds.N != 1 {
			t.Fatalf("%d×%d, want 1×%d", ds.N, ds.D, d)
		}
	})
	t.Run("blank lines and a comment first", func(t *testing.T) {
		in := append([]byte("\n# wide\n\n"), wideText(d, 2, ";")...)
		ds, err := Read(bytes.NewReader(in), "wide.csv", nil)
		if err != nil {
			t.Fatal(err)
		}
		if ds.D != d || ds.N != 2 || ds.Spec.Delimiter != ';' {
			t.Fatalf("%d×%d delimiter %q, want 2×%d ';'", ds.N, ds.D, ds.Spec.Delimiter, d)
		}
	})
}

// TestWideARFF: as many attributes, so a data row is over 64 KiB too.
func TestWideARFF(t *testing.T) {
	const d = 10000
	var b bytes.Buffer
	b.WriteString("@relation wide\n")
	for j := range d {
		fmt.Fprintf(&b, "@attribute s%d numeric\n", j)
	}
	b.WriteString("@attribute class {a,b}\n@data\n")
	for i := range 2 {
		b.WriteString(strings.Repeat("0.123456,", d))
		b.WriteString([]string{"a\n", "b\n"}[i])
	}
	ds, err := Read(&b, "wide.arff", nil)
	if err != nil {
		t.Fatal(err)
	}
	if ds.D != d || ds.N != 2 {
		t.Fatalf("%d×%d, want 2×%d", ds.N, ds.D, d)
	}
}

// TestWideLIBSVM: a sparse row with 10,000 entries.
func TestWideLIBSVM(t *testing.T) {
	in := genText(2, 10000, true)
	ds, err := Read(bytes.NewReader(in), "wide.svm", nil)
	if err != nil {
		t.Fatal(err)
	}
	if ds.D != 10000 || ds.N != 2 {
		t.Fatalf("%d×%d", ds.N, ds.D)
	}
}

// TestLongLineRefused: a line over maxLine is an ErrTooLarge *ParseError
// naming the file and the line, in every text format and wherever the line
// is (first line, inside the sniff window, far after it), never a misread.
func TestLongLineRefused(t *testing.T) {
	defer func(m int) { maxLine = m }(maxLine)
	maxLine = 4 << 10
	long := strings.Repeat("1,", 3<<10) + "x"       // 6 KiB of CSV
	longWS := strings.Repeat("1 ", 3<<10) + "x"     // of white-space separated text
	longSVM := "1" + strings.Repeat(" 1:1", 2<<10)  // 8 KiB of LIBSVM
	rows := strings.Repeat("1,2,a\n", 20000)        // far past any buffer
	rowsWS := strings.Repeat("1 2 a\n", 20000)      // likewise
	rowsSVM := strings.Repeat("1 1:1 2:2\n", 20000) // likewise
	arff := "@relation r\n@attribute a numeric\n@attribute b numeric\n@attribute c {a,x}\n@data\n"
	for _, c := range []struct {
		name, in string
		opt      *Options
		line     int
	}{
		{"csv first line", long + "\n1,2,a\n", nil, 1},
		{"csv second line", "a,b,c\n" + long + "\n", nil, 2},
		{"csv no newline", "a,b,c\n1,2,a\n" + long, nil, 3},
		{"csv far", "a,b,c\n" + rows + long + "\n" + rows, nil, 20002},
		{"csv far, delimiter given", "a,b,c\n" + rows + long + "\n", &Options{Delimiter: ','}, 20002},
		{"csv quoted line breaks", "a,b,c\n1,2,\"a\nb\"\n" + long + "\n", nil, 4},
		{"csv after max rows", "a,b,c\n1,2,a\n" + long + "\n", &Options{MaxRows: 1}, 0},
		{"white space first line", longWS + "\n1 2 a\n", nil, 1},
		{"white space far", "a b c\n" + rowsWS + longWS + "\n", nil, 20002},
		{"libsvm", "1 1:1\n" + longSVM + "\n", nil, 2},
		{"libsvm far", rowsSVM + longSVM + "\n", nil, 20001},
		{"arff header", "@relation r\n@attribute '" + strings.Repeat("n", 5<<10) + "' numeric\n", nil, 2},
		{"arff data", arff + "1,2,a\n" + long + "\n", nil, 7},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, gz := range []bool{false, true} {
				in := []byte(c.in)
				if gz {
					in = gzipBytes(t, in)
				}
				ds, err := Read(bytes.NewReader(in), "long.txt", c.opt)
				if c.line == 0 {
					if err != nil || ds.N != 1 {
						t.Fatalf("gzip %v: rows before the long line: %v", gz, err)
					}
					continue
				}
				var pe *ParseError
				if !errors.As(err, &pe) || !errors.Is(err, ErrTooLarge) || pe.Line != c.line || pe.File != "long.txt" ||
					!strings.Contains(err.Error(), "longer than 4 KiB") {
					t.Fatalf("gzip %v: got %v, want an ErrTooLarge *ParseError for long.txt:%d, longer than 4 KiB", gz, err, c.line)
				}
			}
		})
	}
	// Exactly maxLine bytes is accepted.
	header := "a," + strings.Repeat("b", maxLine-4) + ",c"
	if len(header) != maxLine {
		t.Fatal(len(header))
	}
	if _, err := readString(header+"\n1,2,x\n3,4,y\n", nil); err != nil {
		t.Fatalf("a line of exactly maxLine bytes: %v", err)
	}
}
