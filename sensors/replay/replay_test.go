package replay

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ulikunitz/xz"

	"github.com/trit-iot/trit/sensors"
	"github.com/trit-iot/trit/sensors/sensortest"
)

func fromString(data string) func() (io.ReadCloser, error) {
	return func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(data)), nil }
}

// readAll reads until an error and returns the readings and that error.
func readAll(s sensors.Source, limit int) ([]sensors.Reading, error) {
	var out []sensors.Reading
	for range limit {
		r, err := s.Read(context.Background())
		if err != nil {
			return out, err
		}
		out = append(out, r)
	}
	return out, nil
}

func TestCSVWithTimeColumn(t *testing.T) {
	const data = "time,accel.x, accel.y\n" +
		"2025-01-02T03:04:05Z,1,2\n" +
		"# a comment\n" +
		"1735787045.5,3.5,-4e-1\n"
	s, err := New("data.csv", fromString(data), &Options{Format: CSV})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.Channels(), []string{"accel.x", "accel.y"}) {
		t.Fatalf("channels %q", s.Channels())
	}
	rs, err := readAll(s, 10)
	if !errors.Is(err, io.EOF) || len(rs) != 2 {
		t.Fatalf("%d readings, then %v", len(rs), err)
	}
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	if !rs[0].Time.Equal(t0) || !rs[1].Time.Equal(t0.Add(500*time.Millisecond)) {
		t.Fatalf("times %v %v", rs[0].Time, rs[1].Time)
	}
	if !slices.Equal(rs[1].Values, []float64{3.5, -0.4}) {
		t.Fatalf("values %v", rs[1].Values)
	}
}

func TestCSVPacedAndLooped(t *testing.T) {
	clock := sensortest.NewFakeClock(time.Unix(100, 0))
	s, err := New("d", fromString("a,b\n1,2\n3,4\n"), &Options{Format: CSV, Rate: 20, Loop: true, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	rs, err := readAll(s, 5)
	if err != nil {
		t.Fatal(err)
	}
	var firsts []float64
	for i, r := range rs {
		firsts = append(firsts, r.Values[0])
		if want := time.Unix(100, 0).Add(time.Duration(i) * 50 * time.Millisecond); !r.Time.Equal(want) {
			t.Fatalf("reading %d at %v, want %v", i, r.Time, want)
		}
	}
	if !slices.Equal(firsts, []float64{1, 3, 1, 3, 1}) {
		t.Fatalf("looped values %v", firsts)
	}
	s.Close()
	if _, err := s.Read(context.Background()); !errors.Is(err, sensors.ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
}

func TestCSVErrors(t *testing.T) {
	cases := []struct{ data, want string }{
		{"", "empty file"},
		{"a,,b\n1,2,3\n", "column 2 has no name"},
		{"a,a\n1,2\n", `column "a" appears twice`},
		{"time\n2025-01-01T00:00:00Z\n", "no data columns"},
		{"a,b\n1,x\n", `line 2, column "b": "x" is not a number`},
		{"a,b\n1,2\n3,NaN\n", `line 3, column "b": "NaN" is not a finite`},
		{"a,b\n1,2\n3\n", "line 3"},
		{"time,a\nyesterday,1\n", `line 2: time "yesterday"`},
		{"a\n", "no data rows"},
	}
	for _, c := range cases {
		s, err := New("bad.csv", fromString(c.data), &Options{Format: CSV, Loop: true})
		if err == nil {
			_, err = readAll(s, 10)
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want an error containing %q", c.data, err, c.want)
		}
	}
	if _, err := New("x", fromString("a\n1\n"), &Options{Format: CSV, TimeColumn: "t"}); err == nil {
		t.Error("missing time column accepted")
	}
}

func TestLIBSVM(t *testing.T) {
	const data = "+1 1:0.5 3:-2 # comment\n\n-1 2:7\n"
	s, err := New("a9a", fromString(data), &Options{Format: LIBSVM, Name: "ds"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.Channels(), []string{"ds.label", "ds.1", "ds.2", "ds.3"}) {
		t.Fatalf("channels %v", s.Channels())
	}
	rs, err := readAll(s, 10)
	if !errors.Is(err, io.EOF) || len(rs) != 2 {
		t.Fatalf("%d readings then %v", len(rs), err)
	}
	if !slices.Equal(rs[0].Values, []float64{1, 0.5, 0, -2}) || !slices.Equal(rs[1].Values, []float64{-1, 0, 7, 0}) {
		t.Fatalf("values %v %v", rs[0].Values, rs[1].Values)
	}
	// With dims configured, an index beyond it is an error naming the line.
	s, err = New("a9a", fromString(data), &Options{Format: LIBSVM, Dims: 2})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := readAll(s, 10); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("index beyond dims: %v", err)
	}
}

func TestParseLIBSVMErrors(t *testing.T) {
	dst := make([]float64, 5)
	for _, line := range []string{"x 1:1", "1 1:1 1:2", "1 2:1 1:2", "1 0:1", "1 a:1", "1 1-1", "1 9:1", "1 1:inf", "1 1:"} {
		if _, err := parseLIBSVM(line, dst); err == nil {
			t.Errorf("%q accepted", line)
		}
	}
	if ok, err := parseLIBSVM("   # only a comment", dst); ok || err != nil {
		t.Errorf("comment line: %v %v", ok, err)
	}
}

func TestOpenCompressedFiles(t *testing.T) {
	dir := t.TempDir()
	const data = "a,b\n1,2\n"
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(data))
	zw.Close()
	var xzb bytes.Buffer
	xw, _ := xz.NewWriter(&xzb)
	xw.Write([]byte("1 2:3\n"))
	xw.Close()
	files := map[string][]byte{"d.csv.gz": gz.Bytes(), "train.libsvm.xz": xzb.Bytes(), "plain.csv": []byte(data)}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name := range files {
		s, err := Open(filepath.Join(dir, name), nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		r, err := s.Read(context.Background())
		if err != nil || r.Values[len(r.Values)-1] == 0 {
			t.Fatalf("%s: %v %v", name, r.Values, err)
		}
		s.Close()
	}
	if _, err := Open(filepath.Join(dir, "data.txt"), nil); err == nil || !strings.Contains(err.Error(), "set format") {
		t.Fatalf("unknown extension: %v", err)
	}
	if _, err := Open(filepath.Join(dir, "missing.csv"), nil); err == nil {
		t.Fatal("missing file opened")
	}
}

func TestRegistry(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rec.csv")
	if err := os.WriteFile(path, []byte("accel.x,accel.y\n1,2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := sensors.Config{Kind: "replay", File: path}
	ch, err := cfg.Channels()
	if err != nil || !slices.Equal(ch, []string{"accel.x", "accel.y"}) {
		t.Fatalf("channels %v %v", ch, err)
	}
	src, err := sensors.OpenWith(cfg, &sensors.Env{Buses: &sensortest.Buses{}})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := src.Read(context.Background()); err != nil || r.Values[1] != 2 {
		t.Fatalf("%v %v", r, err)
	}
	src.Close()
	for _, c := range []sensors.Config{
		{Kind: "replay"},
		{Kind: "replay", File: path, Format: "json"},
		{Kind: "replay", File: path, Format: LIBSVM, TimeColumn: "t"},
		{Kind: "replay", File: path, Dims: -1},
		{Kind: "replay", File: path, Bus: "I2C1"},
	} {
		var ce *sensors.ConfigError
		if err := c.Validate(); !errors.As(err, &ce) {
			t.Errorf("%+v accepted (%v)", c, err)
		}
	}
	if _, err := (sensors.Config{Kind: "replay", File: path + ".missing.csv"}).Channels(); err == nil {
		t.Error("channels of a missing file")
	}
}

func FuzzLIBSVMLine(f *testing.F) {
	for _, s := range []string{"+1 1:0.5 3:-2 # c", "-1", "", "1 1:1 1:1", "0 65536:1", "3 2:1e308 4:-0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		dst := make([]float64, 9)
		ok, err := parseLIBSVM(line, dst)
		if err == nil && ok && maxIndexLIBSVM(line) >= len(dst) {
			t.Fatalf("%q accepted with an index beyond dims", line)
		}
	})
}

// lowerMaxLine lets fuzzed inputs reach the line limit.
func lowerMaxLine(f *testing.F) {
	m := maxLine
	maxLine = 1 << 10
	f.Cleanup(func() { maxLine = m })
}

func FuzzCSV(f *testing.F) {
	lowerMaxLine(f)
	for _, s := range []string{"a,b\n1,2\n", "time,a\n2025-01-02T03:04:05Z,1\n1.5,2\n", "a\n\"1\"\n", "a,b\n1\n", "\"a\nb\",c\n1,2\n",
		wideCSV(30, 2), wideCSV(100, 2)} { // wide; over the 1 KiB line limit
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data string) {
		s, err := New("fuzz.csv", fromString(data), &Options{Format: CSV, Loop: true})
		if err != nil {
			return
		}
		rs, _ := readAll(s, 50)
		for _, r := range rs {
			if len(r.Values) != len(s.Channels()) {
				t.Fatalf("%d values for %d channels", len(r.Values), len(s.Channels()))
			}
		}
	})
}

func FuzzLIBSVMFile(f *testing.F) {
	lowerMaxLine(f)
	f.Add("+1 1:0.5 3:-2\n-1 2:7\n")
	f.Add("1" + strings.Repeat(" 1:1", 300) + "\n") // over the 1 KiB line limit
	f.Add("1 99999999:1\n")
	f.Fuzz(func(t *testing.T, data string) {
		s, err := New("fuzz", fromString(data), &Options{Format: LIBSVM})
		if err != nil {
			return
		}
		rs, _ := readAll(s, 50)
		for _, r := range rs {
			if len(r.Values) != len(s.Channels()) {
				t.Fatalf("%d values for %d channels", len(r.Values), len(s.Channels()))
			}
		}
	})
}
