package replay

import (
	"fmt"
	"strings"
	"testing"
)

// wideCSV is a header of d channels (and a time column) and n rows: with
// d = 10,000 the header is about 130 KB, twice bufio.Scanner's default
// limit.
func wideCSV(d, n int) string {
	var b strings.Builder
	b.WriteString("time")
	for j := range d {
		fmt.Fprintf(&b, ",channel_%05d", j)
	}
	b.WriteString("\n")
	for i := range n {
		fmt.Fprintf(&b, "%d", 1700000000+i)
		for j := range d {
			fmt.Fprintf(&b, ",%d.%d", i, j%10)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// TestWideCSV: a header and rows far longer than 64 KiB replay whole.
func TestWideCSV(t *testing.T) {
	const d = 10000
	s, err := New("wide.csv", fromString(wideCSV(d, 3)), &Options{Format: CSV})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if ch := s.Channels(); len(ch) != d || ch[d-1] != "channel_09999" {
		t.Fatalf("%d channels, last %q", len(ch), ch[len(ch)-1])
	}
	rs, err := readAll(s, 10)
	if len(rs) != 3 || err == nil {
		t.Fatalf("%d readings, then %v", len(rs), err)
	}
	if v := rs[2].Values[d-1]; v != 2.9 {
		t.Fatalf("last value of row 3: %v", v)
	}
}

// TestWideLIBSVM: a row with 10,000 features.
func TestWideLIBSVM(t *testing.T) {
	var b strings.Builder
	for i := range 2 {
		fmt.Fprintf(&b, "%d", i)
		for j := 1; j <= 10000; j++ {
			fmt.Fprintf(&b, " %d:%d.5", j, i)
		}
		b.WriteString("\n")
	}
	s, err := New("wide.svm", fromString(b.String()), &Options{Format: LIBSVM})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rs, _ := readAll(s, 10)
	if len(rs) != 2 || len(rs[1].Values) != 10001 || rs[1].Values[10000] != 1.5 {
		t.Fatalf("%d readings", len(rs))
	}
}

// TestLongLineRefused: a line over maxLine is an error that names the file
// and the line, in the header, a row or a LIBSVM file, never a misread.
func TestLongLineRefused(t *testing.T) {
	defer func(m int) { maxLine = m }(maxLine)
	maxLine = 1 << 10
	longRow := "1" + strings.Repeat(",1", 600) + "\n" // 1.2 KB
	header := "a" + strings.Repeat(",a", 600) + "\n"
	rows := strings.Repeat("1,2\n", 5000)
	svm := "1" + strings.Repeat(" 1:1", 300) + "\n"
	for _, c := range []struct {
		name, format, data, want string
	}{
		{"csv header", CSV, header + longRow, "replay: long: header: line 1 is longer than 1 KiB"},
		{"csv row", CSV, "a,b\n1,2\n" + longRow, "replay: long: line 3 is longer than 1 KiB"},
		{"csv row far", CSV, "a,b\n" + rows + longRow, "replay: long: line 5002 is longer than 1 KiB"},
		{"libsvm scan", LIBSVM, "1 1:1\n" + svm, "replay: long: line 2 is longer than 1 KiB"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := New("long", fromString(c.data), &Options{Format: c.format})
			if err == nil {
				_, err = readAll(s, 10000)
				s.Close()
			}
			if err == nil || !strings.HasPrefix(err.Error(), c.want) {
				t.Fatalf("got %v, want %q…", err, c.want)
			}
		})
	}
	// LIBSVM rows read after the scan, with dims given.
	s, err := New("long", fromString("1 1:1\n"+svm), &Options{Format: LIBSVM, Dims: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rs, err := readAll(s, 10)
	if want := "replay: long: line 2 is longer than 1 KiB"; len(rs) != 1 || err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("%d readings, then %v; want 1, then %q…", len(rs), err, want)
	}
}
