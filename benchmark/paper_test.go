package benchmark

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trit-iot/trit/training"
)

// writeCSV writes two-circles data as dense text with the label last.
func writeCSV(t *testing.T, path string, n int, seed uint64) {
	t.Helper()
	ds := training.TwoCircles(n, 0.5, 0.08, seed)
	var b strings.Builder
	for i := range ds.N {
		x := ds.Row(i)
		fmt.Fprintf(&b, "%g,%g,%s\n", x[0], x[1], ds.Classes[ds.Y[i]])
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

func runBench(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(&env{stdout: &out, stderr: &errb}, args)
	return out.String(), errb.String(), code
}

// TestMain lets paper's --isolate children run: paper re-executes its own
// binary (here the test binary) with benchChildEnv set, and that process
// must behave as trit-bench.
func TestMain(m *testing.M) {
	if os.Getenv(benchChildEnv) == "1" {
		os.Exit(Main(os.Args[1:]))
	}
	os.Exit(m.Run())
}

func benchFiles(t *testing.T) (train, test string) {
	t.Helper()
	dir := t.TempDir()
	train, test = filepath.Join(dir, "train.csv"), filepath.Join(dir, "test.csv")
	writeCSV(t, train, 300, 1)
	writeCSV(t, test, 200, 2)
	return train, test
}

func decodeRows(t *testing.T, out string) []benchRow {
	t.Helper()
	var rows []benchRow
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("paper --json output: %v\n%s", err, out)
	}
	return rows
}

func TestBenchJSONAllMethods(t *testing.T) {
	train, test := benchFiles(t)
	out, errOut, code := runBench(t, "paper", train, "--test", test, "--p", "128",
		"--sigma-grid", "0.25,1", "--c-grid", "0.1,10", "--isolate=false", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	rows := decodeRows(t, out)
	if len(rows) != 6 {
		t.Fatalf("%d rows, want one per method (6)", len(rows))
	}
	for i, r := range rows {
		if want := []string{"rfe", "fastfood", "bjle", "bcsik", "trit-full", "trit-ternary"}[i]; r.Method != want {
			t.Errorf("row %d is %s, want %s", i, r.Method, want)
		}
		if r.TrainRows != 300 || r.TestRows != 200 || r.Features != 2 || r.Vectors != 1 || r.P != 128 {
			t.Errorf("%s: shape %+v", r.Method, r)
		}
		if !strings.HasPrefix(r.Grid, "custom (σ {2^-2,2^0} × C {0.1,10})") {
			t.Errorf("%s: grid %q", r.Method, r.Grid)
		}
		wantPoints := 4
		if r.Method == "bjle" {
			wantPoints = 2
		}
		if r.SearchPoints != wantPoints || len(r.Search) != wantPoints {
			t.Errorf("%s: %d search points, want %d", r.Method, r.SearchPoints, wantPoints)
		}
		if r.Method != "bjle" && r.Accuracy < 95 {
			t.Errorf("%s: accuracy %.1f%%, want ≥ 95%% on two circles", r.Method, r.Accuracy)
		}
		if r.MemoryTotal != r.Memory.Transformation+r.Memory.Embedding+r.Memory.Classifier || r.MemoryTotal <= 0 {
			t.Errorf("%s: memory %+v total %d", r.Method, r.Memory, r.MemoryTotal)
		}
		if !(r.InferMicros > 0) || !(r.TrainSeconds > 0) || r.PeakRSS != 0 {
			t.Errorf("%s: infer %g µs, train %g s, rss %d (in-process: none)", r.Method, r.InferMicros, r.TrainSeconds, r.PeakRSS)
		}
		if (r.BundleBytes > 0) != (r.Method == "trit-ternary") {
			t.Errorf("%s: bundle %d bytes", r.Method, r.BundleBytes)
		}
	}
	// RFE's memory is d·p·4 + p·4 + p·4 for one vector (2 features here).
	if rows[0].MemoryTotal != 2*128*4+128*4+128*4 || rows[0].Reduction != 1 {
		t.Errorf("rfe memory %d, reduction %g", rows[0].MemoryTotal, rows[0].Reduction)
	}
	// trit-ternary: 5·p·4 + p/8 + p/8. With d = 2 < 5 the Fastfood
	// parameters outweigh a dense R: the paper's accounting says so too.
	if tt := rows[5]; tt.MemoryTotal != 5*128*4+16+16 || tt.Reduction != 2048.0/2592 || tt.BundleBytes < 72 ||
		tt.BundleReduction != 2048/float64(tt.BundleBytes) {
		t.Errorf("trit-ternary: reduction %g, bundle %d", tt.Reduction, tt.BundleBytes)
	}
}

func TestBenchIsDeterministic(t *testing.T) {
	train, test := benchFiles(t)
	args := []string{"paper", train, "--test", test, "--p", "64", "--sigma-grid", "0.5,2", "--c-grid", "1",
		"--methods", "bcsik,trit-ternary", "--isolate=false", "--json"}
	a, _, c1 := runBench(t, args...)
	b, _, c2 := runBench(t, append(args, "--workers", "1")...)
	if c1 != 0 || c2 != 0 {
		t.Fatalf("exit codes %d, %d", c1, c2)
	}
	ra, rb := decodeRows(t, a), decodeRows(t, b)
	for i := range ra {
		if ra[i].Accuracy != rb[i].Accuracy || ra[i].Sigma != rb[i].Sigma || ra[i].C != rb[i].C || ra[i].BundleBytes != rb[i].BundleBytes {
			t.Errorf("%s differs between runs: %+v vs %+v", ra[i].Method, ra[i], rb[i])
		}
	}
}

// With --isolate each method runs in a child process, whose peak RSS is
// reported; the Markdown table has a row per method.
func TestBenchIsolatedMarkdown(t *testing.T) {
	train, test := benchFiles(t)
	out, errOut, code := runBench(t, "paper", train, "--test", test, "--p", "64", "--sigma", "1", "--c", "1",
		"--methods", "rfe,trit-ternary")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(out, "\n")
	if !strings.HasPrefix(lines[0], "| dataset | method | accuracy % |") {
		t.Fatalf("no table header:\n%s", out)
	}
	var body []string
	for _, l := range lines[2:] {
		if strings.HasPrefix(l, "| ") {
			body = append(body, l)
		}
	}
	if len(body) != 2 || !strings.Contains(body[0], "| rfe |") || !strings.Contains(body[1], "| trit-ternary |") {
		t.Fatalf("table rows:\n%s", out)
	}
	for _, l := range body {
		if !strings.HasSuffix(l, " MB |") {
			t.Errorf("no peak RSS in %q", l)
		}
	}
	if !strings.Contains(out, "σ and C fixed (no search)") {
		t.Errorf("the table does not say the grid was fixed:\n%s", out)
	}
}

func TestBenchUsageErrors(t *testing.T) {
	train, test := benchFiles(t)
	cases := [][]string{
		{"paper"},
		{"paper", train},
		{"paper", train, "--test", test, "--methods", "svm"},
		{"paper", train, "--test", test, "--grid", "huge"},
		{"paper", train, "--test", test, "--c-grid", "1,-2"},
		{"paper", train, "--test", test, "--p", "0"},
		{"paper", "--standard", "usps", "--test", test},
		{"figures", "--only", "nope"},
		{"figures", "--only", "p"},
	}
	for _, args := range cases {
		if _, _, code := runBench(t, args...); code != 2 {
			t.Errorf("%q: exit %d, want 2", args, code)
		}
	}
	if _, errOut, code := runBench(t, "paper", filepath.Join(t.TempDir(), "missing"), "--test", test, "--isolate=false"); code != 1 || !strings.Contains(errOut, "missing") {
		t.Errorf("missing file: exit %d, %q", code, errOut)
	}
}

func checkPNG(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if b := img.Bounds(); b.Dx() < 200 || b.Dy() < 200 {
		t.Errorf("%s: %v", path, b)
	}
}

func TestFiguresCirclesAndTime(t *testing.T) {
	dir := t.TempDir()
	rows := []benchRow{
		{Dataset: "covtype", Method: "rfe", TrainRows: 10000, TrainSeconds: 2},
		{Dataset: "covtype", Method: "rfe", TrainRows: 50000, TrainSeconds: 11},
		{Dataset: "covtype", Method: "trit-ternary", TrainRows: 10000, TrainSeconds: 1},
		{Dataset: "covtype", Method: "trit-ternary", TrainRows: 50000, TrainSeconds: 4},
	}
	b, _ := json.Marshal(rows)
	from := filepath.Join(dir, "rows.json")
	if err := os.WriteFile(from, b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := runBench(t, "figures", "--only", "circles,time", "--from", from, "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, name := range []string{"two_circles_binary.png", "two_circles_ternary.png", "time_vs_n.png"} {
		checkPNG(t, filepath.Join(dir, name))
	}
	// The binary model may not use 0; the ternary one reports its count.
	if !strings.Contains(errOut, "binary {-1,+1} coefficients: 256 of 256 non-zero") {
		t.Errorf("binary model has zeros or was not reported:\n%s", errOut)
	}
}

func TestBenchTableFromJSON(t *testing.T) {
	train, test := benchFiles(t)
	out, _, code := runBench(t, "paper", train, "--test", test, "--p", "64", "--sigma", "1", "--c", "1",
		"--methods", "trit-full", "--isolate=false", "--json")
	if code != 0 {
		t.Fatal("bench failed")
	}
	path := filepath.Join(t.TempDir(), "rows.json")
	if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	table, errOut, code := runBench(t, "table", path, path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if n := strings.Count(table, "| trit-full |"); n != 2 {
		t.Errorf("%d trit-full rows, want 2:\n%s", n, table)
	}
	if _, _, code := runBench(t, "table", filepath.Join(t.TempDir(), "none.json")); code != 1 {
		t.Errorf("missing file: exit %d, want 1", code)
	}
}
