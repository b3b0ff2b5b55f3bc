package tritctl

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trit-iot/trit/training"
)

// writeCSV writes ds as dense text with the label last (the default label
// column of a file without a header).
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

func runCtl(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(&env{stdout: &out, stderr: &errb}, args)
	return out.String(), errb.String(), code
}

func TestTrainThenEvalJSON(t *testing.T) {
	dir := t.TempDir()
	train, test, model := filepath.Join(dir, "train.csv"), filepath.Join(dir, "test.csv"), filepath.Join(dir, "m.trit")
	writeCSV(t, train, 1000, 1)
	writeCSV(t, test, 500, 2)
	out, stderr, code := runCtl(t, "train", train, "-o", model, "--p", "256", "--sigma-grid", "0.25,0.5", "--c-grid", "1,10", "--test", test, "--json")
	if code != 0 {
		t.Fatalf("train exited %d: %s", code, stderr)
	}
	var s map[string]any
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("train --json printed %q: %v", out, err)
	}
	for _, k := range []string{"accuracy", "train_seconds", "p", "classes", "nonzero", "model_bytes"} {
		if _, ok := s[k]; !ok {
			t.Errorf("train --json lacks %q", k)
		}
	}
	if s["accuracy_on"] != "test" || s["accuracy"].(float64) < 95 || s["p"].(float64) != 256 || s["classes"].(float64) != 2 {
		t.Fatalf("train summary %v", s)
	}
	if stderr != "" {
		t.Errorf("--json run wrote to stderr: %q", stderr)
	}
	fi, _ := os.Stat(model)
	if int64(s["model_bytes"].(float64)) != fi.Size() {
		t.Errorf("model_bytes %v, file has %d bytes", s["model_bytes"], fi.Size())
	}

	out, stderr, code = runCtl(t, "eval", model, test, "--json")
	if code != 0 {
		t.Fatalf("eval exited %d: %s", code, stderr)
	}
	var e evalSummary
	if err := json.Unmarshal([]byte(out), &e); err != nil {
		t.Fatal(err)
	}
	// eval recomputes what train reported on the same test file.
	if e.Accuracy != s["accuracy"].(float64) || e.Rows != 500 || len(e.Confusion) != 2 {
		t.Fatalf("eval %+v disagrees with train %v", e, s)
	}
	// The search's validation rows calibrated the model: eval reports
	// confidence and unknown, with the bundle's thresholds or overrides.
	c := e.Confidence
	if c == nil || !c.Calibrated || c.Coverage < 90 || c.Coverage > 100 || len(c.Curve) != 8 || len(c.Segments) != 10 || c.Answered < c.Accuracy-1e-9 {
		t.Fatalf("eval confidence %+v", c)
	}
	for _, o := range []struct {
		args []string
		ok   func(r *training.ConfidenceReport) bool
	}{
		{[]string{"--min-confidence", "0", "--max-novelty", "0"}, func(r *training.ConfidenceReport) bool { return r.Unknown == 0 && r.Coverage == 100 }},
		{[]string{"--min-confidence", "1", "--max-novelty", "0"}, func(r *training.ConfidenceReport) bool { return r.Unknown > 0 && r.LowConf == r.Unknown }},
		{[]string{"--min-confidence", "0", "--max-novelty", "1"}, func(r *training.ConfidenceReport) bool { return r.Novel == r.Unknown && r.Unknown > 0 }},
	} {
		out, stderr, code = runCtl(t, append([]string{"eval", model, test, "--json"}, o.args...)...)
		var e evalSummary
		if code != 0 || json.Unmarshal([]byte(out), &e) != nil || !o.ok(e.Confidence) {
			t.Errorf("eval %v: exit %d %s, confidence %+v", o.args, code, stderr, e.Confidence)
		}
	}
	if out, _, code := runCtl(t, "bundle", "inspect", model); code != 0 || !strings.Contains(out, "format version 5") || !strings.Contains(out, "margin bins (edges") {
		t.Errorf("bundle inspect of a calibrated model: %q", out)
	}
	out, _, code = runCtl(t, "eval", model, test)
	if code != 0 || !strings.Contains(out, "accuracy") || !strings.Contains(out, "true\\pred") || !strings.Contains(out, "accuracy vs coverage: 100% →") {
		t.Fatalf("eval text output: %q", out)
	}
}

func TestUsageErrors(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "d.csv")
	writeCSV(t, data, 50, 1)
	for _, args := range [][]string{
		{"train", data},      // no --out
		{"train", "-o", "x"}, // no data
		{"train", data, "-o", "x", "--loss", "cubic"},  // bad loss
		{"train", data, "-o", "x", "--format", "xml"},  // bad format
		{"train", data, "-o", "x", "--c-grid", "1,-2"}, // bad grid
		{"train", data, "-o", "x", "--p", "many"},      // bad flag value
		{"eval", "only-one-arg"},
		{"eval", "m.trit", "d.csv", "--split", "train"},
		{"eval", "m.trit", "d.csv", "--min-confidence", "2"},
	} {
		if _, _, code := runCtl(t, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}

// TestEvalThresholdsNeedCalibration: an uncalibrated bundle calls nothing
// unknown, so a threshold that would make something unknown is refused,
// not ignored; 0 ("never") asks for nothing it lacks.
func TestEvalThresholdsNeedCalibration(t *testing.T) {
	dir := t.TempDir()
	data, model := filepath.Join(dir, "d.csv"), filepath.Join(dir, "m.trit")
	writeCSV(t, data, 200, 1)
	if _, stderr, code := runCtl(t, "train", data, "-o", model, "--p", "64", "--sigma", "1", "--c", "1", "--unknown-target", "-1"); code != 0 {
		t.Fatal(stderr)
	}
	for _, args := range [][]string{{"--min-confidence", "0.9"}, {"--max-novelty", "3"}} {
		_, stderr, code := runCtl(t, append([]string{"eval", model, data}, args...)...)
		if code != 2 || !strings.Contains(stderr, "has no calibration") {
			t.Errorf("%v: exit %d (%s), want 2 saying the bundle has no calibration", args, code, stderr)
		}
	}
	if _, stderr, code := runCtl(t, "eval", model, data, "--min-confidence", "0", "--max-novelty", "0"); code != 0 {
		t.Errorf("thresholds 0: exit %d (%s)", code, stderr)
	}
}

func TestBadFilesFailClearly(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.csv")
	os.WriteFile(bad, []byte("1,2,a\n1,x,b\n"), 0o644)
	_, stderr, code := runCtl(t, "train", bad, "-o", filepath.Join(dir, "m"))
	if code != 1 || !strings.Contains(stderr, `bad.csv:2: column 2: invalid number "x"`) {
		t.Fatalf("exit %d, stderr %q: want the file and line named", code, stderr)
	}
	notModel := filepath.Join(dir, "nm")
	os.WriteFile(notModel, []byte("{}"), 0o644)
	_, stderr, code = runCtl(t, "eval", notModel, bad)
	if code != 1 || !strings.Contains(stderr, "not a trit model") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
}

func TestDemo(t *testing.T) {
	out, stderr, code := runCtl(t, "demo")
	if code != 0 {
		t.Fatalf("demo exited %d: %s", code, stderr)
	}
	if !strings.Contains(out, "test accuracy") || !strings.Contains(out, "demo finished") {
		t.Fatalf("demo output: %s", out)
	}
}

func TestParseSince(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	if got, err := parseSince("2h", now); err != nil || !got.Equal(now.Add(-2*time.Hour)) {
		t.Errorf("2h: %v %v", got, err)
	}
	if got, err := parseSince("2026-04-30T00:00:00Z", now); err != nil || !got.Equal(time.Date(2026, 4, 30, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("RFC 3339: %v %v", got, err)
	}
	for _, bad := range []string{"-2h", "0s", "yesterday", ""} {
		if _, err := parseSince(bad, now); err == nil {
			t.Errorf("parseSince(%q) accepted", bad)
		}
	}
}
