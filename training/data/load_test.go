package data

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// manyLines returns n LIBSVM rows.
func manyLines(n int) []byte {
	var b bytes.Buffer
	for i := range n {
		fmt.Fprintf(&b, "%d 1:%d 2:0.%d\n", i%3, i, i)
	}
	return b.Bytes()
}

func TestCompression(t *testing.T) {
	plain := manyLines(500)
	want, err := Read(bytes.NewReader(plain), "x", nil)
	if err != nil {
		t.Fatal(err)
	}
	bz2, err := os.ReadFile("testdata/small.svm.bz2")
	if err != nil {
		t.Fatal(err)
	}
	small, err := os.ReadFile("testdata/small.svm")
	if err != nil {
		t.Fatal(err)
	}
	wantSmall, err := Read(bytes.NewReader(small), "x", nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		in   []byte
		want *Dataset
	}{
		{"gzip", gzipBytes(t, plain), want},
		{"xz", xzBytes(t, plain), want},
		{"bzip2", bz2, wantSmall}, // made with the bzip2 command: the stdlib has no writer
		{"gzip small", gzipBytes(t, small), wantSmall},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Read(bytes.NewReader(tt.in), "x", nil)
			if err != nil {
				t.Fatal(err)
			}
			if got.N != tt.want.N || got.D != tt.want.D || !slices.Equal(got.X, tt.want.X) ||
				!slices.Equal(got.Y, tt.want.Y) || !slices.Equal(got.Classes, tt.want.Classes) {
				t.Fatalf("decompressed dataset differs from the plain one")
			}
		})
	}
}

func TestTruncatedCompressed(t *testing.T) {
	plain := manyLines(20000)
	bz2, err := os.ReadFile("testdata/small.svm.bz2")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		in      []byte
		minLine int // the error must name a line at least this far in
	}{
		{"gzip", gzipBytes(t, plain), 100},
		{"xz", xzBytes(t, plain), 1}, // one LZMA2 chunk: decoded only once complete
		{"bzip2", bz2, 1},            // bzip2 decodes whole blocks: the error comes at once
	}
	for _, tt := range tests {
		for _, cut := range []int{len(tt.in) / 2, len(tt.in) - 4} {
			t.Run(fmt.Sprintf("%s/%d", tt.name, cut), func(t *testing.T) {
				_, err := Read(bytes.NewReader(tt.in[:cut]), "cut.gz", nil)
				var pe *ParseError
				if !errors.As(err, &pe) {
					t.Fatalf("got %v, want *ParseError", err)
				}
				if pe.File != "cut.gz" || pe.Line < tt.minLine || pe.Line > 20001 {
					t.Fatalf("got %q: want a line >= %d", pe, tt.minLine)
				}
			})
		}
	}
	// A flipped byte in the gzip payload fails the checksum at the end.
	gz := gzipBytes(t, plain)
	gz[len(gz)/2] ^= 0xff
	if _, err := Read(bytes.NewReader(gz), "bad.gz", nil); err == nil {
		t.Fatal("corrupt gzip read without error")
	}
}

func TestCompressedHeader(t *testing.T) {
	for _, in := range [][]byte{{0x1f, 0x8b, 0, 0}, {0xfd, '7', 'z', 'X', 'Z', 0, 0, 0}} {
		_, err := Read(bytes.NewReader(in), "h", nil)
		wantParseError(t, err, "h", 0, "compressed header")
	}
}

func TestSniff(t *testing.T) {
	tests := []struct {
		in   string
		want *Dataset // nil: just check the format
		d    int
	}{
		{"1 1:1 2:1\n", nil, 2},
		{"-1\n-1\n1 3:1\n", nil, 3},                       // label-only rows first
		{"# c\n1 2 3\n", nil, 2},                          // dense
		{"1,2,3\n", nil, 2},                               // dense, comma
		{"-1\n", nil, 0},                                  // nothing decides: LIBSVM with no features
		{"1 1:1 # see a, b 2\n", nil, 1},                  // comment text does not count
		{strings.Repeat("\n", 70000) + "1 1 1\n", nil, 2}, // beyond the sniff window: LIBSVM, then fail
	}
	for i, tt := range tests {
		d, err := readString(tt.in, nil)
		if i == len(tests)-1 {
			if err == nil {
				t.Errorf("case %d: want an error, dense data read as LIBSVM", i)
			}
			continue
		}
		if err != nil {
			t.Errorf("case %d: %v", i, err)
			continue
		}
		if d.D != tt.d {
			t.Errorf("case %d: D=%d, want %d", i, d.D, tt.d)
		}
	}
}

func TestLongLine(t *testing.T) {
	var b strings.Builder
	b.WriteString("1")
	for i := 1; i <= 300000; i++ { // about 3 MB, beyond the 1 MB buffer
		fmt.Fprintf(&b, " %d:1", i)
	}
	b.WriteString("\n2 5:2\n")
	d, err := readString(b.String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if d.N != 2 || d.D != 300000 || d.X[299999] != 1 || d.X[300000+4] != 2 {
		t.Fatalf("got %d×%d", d.N, d.D)
	}
}

func TestOptionsErrors(t *testing.T) {
	for _, opt := range []Options{
		{Format: 9}, {NumFeatures: -1}, {LabelColumn: Column{Index: -2}}, {MaxRows: -1},
		{Delimiter: '\n'}, {Delimiter: -5}, {Delimiter: '"'}, {NumFeatures: 1 << 40}, {Header: 7},
		{NoTime: true, TimeColumns: []Column{{Index: 1}}}, {TimeColumns: []Column{{}}}, {Ignore: []Column{{}}},
		{Features: []string{"a", "a"}}, {Features: []string{""}},
	} {
		_, err := readString("1 1\n", &opt)
		if !errors.Is(err, ErrOptions) && !errors.Is(err, ErrTooLarge) {
			t.Errorf("%+v: got %v, want ErrOptions", opt, err)
		}
	}
	if _, err := Read(strings.NewReader("\x00\x00\x08\x03"), "x", nil); !errors.Is(err, ErrOptions) {
		t.Errorf("IDX through Read: got %v, want ErrOptions", err)
	}
}

func TestLoadFiles(t *testing.T) {
	dir := t.TempDir()
	plain := manyLines(100)
	files := map[string][]byte{
		"a.svm":    plain,
		"a.svm.gz": gzipBytes(t, plain),
		"b.noext":  xzBytes(t, plain), // detection goes by content, not name
	}
	var first *Dataset
	for name, b := range files {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		d, err := Load(p, nil)
		if err != nil {
			t.Fatal(err)
		}
		if d.Name != name {
			t.Errorf("name %q, want %q", d.Name, name)
		}
		if first == nil {
			first = d
		} else if !slices.Equal(first.X, d.X) || !slices.Equal(first.Y, d.Y) {
			t.Errorf("%s differs", name)
		}
	}
	if _, err := Load(filepath.Join(dir, "missing"), nil); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: got %v", err)
	}
}

// stopReader fails the test if it is read after stopped is set: Read must
// not leave a goroutine reading the caller's reader.
type stopReader struct {
	t       *testing.T
	r       io.Reader
	stopped bool
}

func (s *stopReader) Read(p []byte) (int, error) {
	if s.stopped {
		s.t.Error("reader used after Read returned")
	}
	return s.r.Read(p[:min(len(p), 100)])
}

func TestReadStopsEarly(t *testing.T) {
	r := &stopReader{t: t, r: bytes.NewReader(gzipBytes(t, manyLines(50000)))}
	d, err := Read(r, "x", &Options{MaxRows: 3})
	r.stopped = true
	if err != nil || d.N != 3 {
		t.Fatalf("got %v, %v", d, err)
	}
}
