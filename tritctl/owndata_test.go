package tritctl

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trit-iot/trit/internal/cli"
)

// TestJSONErrorsOnStdout: with --json, a failure is one JSON object on
// stdout naming the file, line and column, nothing on stderr, and the exit
// code is the one without --json (1 a failure, 2 a usage error).
func TestJSONErrorsOnStdout(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "room.csv")
	os.WriteFile(bad, []byte("Temp,CO2,room\n21.5,400,empty\nwarm,410,empty\n"), 0o644)
	model := filepath.Join(dir, "m.trit")
	for _, c := range []struct {
		args []string
		want cli.ErrorReport
	}{
		{[]string{"train", bad, "-o", model, "--json"}, cli.ErrorReport{ExitCode: 1, File: "room.csv", Line: 3, Column: 1, ColumnName: "Temp",
			Error: `room.csv:3: column 1 "Temp": invalid number "warm"`}},
		{[]string{"train", bad, "-o", model, "--json", "--label-column", "Room"}, cli.ErrorReport{ExitCode: 2, File: "room.csv", Line: 1,
			Error: `room.csv:1: data: column: label column: no column named "Room" (there is "room": names are case-sensitive)`}},
		{[]string{"train", bad, "--json"}, cli.ErrorReport{ExitCode: 2, Error: "--out is required: the model file to write (-o MODEL.trit)"}},
		{[]string{"eval", model, "--json"}, cli.ErrorReport{ExitCode: 2}},
	} {
		out, stderr, code := runCtl(t, c.args...)
		var got cli.ErrorReport
		if err := json.Unmarshal([]byte(out), &got); err != nil || code != c.want.ExitCode || stderr != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit %d, a JSON object on stdout and nothing on stderr", c.args, code, out, stderr, c.want.ExitCode)
			continue
		}
		if c.want.Error == "" {
			c.want.Error = got.Error // the wording is cobra's
		}
		if got != c.want {
			t.Errorf("%q: got %+v\nwant %+v", c.args, got, c.want)
		}
	}
	// Without --json the same error is a line on stderr.
	out, stderr, code := runCtl(t, "train", bad, "-o", model)
	if code != 1 || out != "" || !strings.HasPrefix(stderr, `tritctl: room.csv:3: column 1 "Temp"`) {
		t.Errorf("without --json: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
}

// fakeOccupancy writes a data directory holding a file shaped like the
// standard occupancy dataset (Date, Time, sensors, Room_Occupancy_Count):
// n rows, of which the latest 3,039 are its test split.
func fakeOccupancy(t *testing.T, n int) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "occupancy-estimation"), 0o755); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("Date,Time,S1_Temp,S1_Light,S5_CO2,Room_Occupancy_Count\n")
	for i := range n {
		people := (i / 40) % 3
		fmt.Fprintf(&b, "2017/12/%02d,%02d:%02d:%02d,%.2f,%d,%d,%d\n", 22+i/2880, i/120%24, i/2%60, i%2*30,
			24+0.3*float64(people)+0.05*float64(i%7), 20+90*people+(i*13)%17, 380+60*people+(i*7)%23, people)
	}
	if err := os.WriteFile(filepath.Join(dir, "occupancy-estimation", "Occupancy_Estimation.csv"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestEvalStandard: eval --standard NAME evaluates a model on the standard
// dataset's test split, as train --standard reported it.
func TestEvalStandard(t *testing.T) {
	dataDir := fakeOccupancy(t, 3039+400)
	model := filepath.Join(t.TempDir(), "occupancy.trit")
	out, stderr, code := runCtl(t, "train", "--standard", "occupancy", "--data-dir", dataDir, "-o", model, "--p", "64", "--sigma", "1", "--c", "1", "--json")
	if code != 0 {
		t.Fatalf("train exited %d: %s%s", code, out, stderr)
	}
	var tr trainSummary
	if err := json.Unmarshal([]byte(out), &tr); err != nil {
		t.Fatal(err)
	}
	out, stderr, code = runCtl(t, "eval", model, "--standard", "occupancy", "--data-dir", dataDir, "--json")
	if code != 0 {
		t.Fatalf("eval --standard exited %d: %s%s", code, out, stderr)
	}
	var ev evalSummary
	if err := json.Unmarshal([]byte(out), &ev); err != nil {
		t.Fatal(err)
	}
	if ev.Rows != 3039 || ev.Accuracy != tr.Accuracy || ev.Balanced != tr.Balanced || tr.AccuracyOn != "test" {
		t.Fatalf("eval --standard: %d rows, accuracy %.2f%% (balanced %.2f%%); train reported %.2f%% (%.2f%%) on %s", ev.Rows, ev.Accuracy, ev.Balanced, tr.Accuracy, tr.Balanced, tr.AccuracyOn)
	}
	if ev.Dataset != "occupancy (test split)" {
		t.Errorf("dataset %q", ev.Dataset)
	}
	out, _, code = runCtl(t, "eval", model, "--standard", "occupancy", "--data-dir", dataDir)
	if code != 0 || !strings.Contains(out, "on occupancy (test split): accuracy") {
		t.Errorf("eval --standard text: exit %d, %q", code, out)
	}
	// A file or the standard, not both, not neither.
	for _, args := range [][]string{
		{"eval", model},
		{"eval", model, "x.csv", "--standard", "occupancy"},
		{"eval", model, "--standard", "occupancy", "--label-column", "S1_Temp"},
	} {
		if _, stderr, code := runCtl(t, args...); code != 2 {
			t.Errorf("%q: exit %d (%s), want 2", args, code, stderr)
		}
	}
	// A model of other features is refused by name.
	other := filepath.Join(t.TempDir(), "other.trit")
	csv := filepath.Join(t.TempDir(), "d.csv")
	writeCSV(t, csv, 200, 1)
	if _, stderr, code := runCtl(t, "train", csv, "-o", other, "--p", "64", "--sigma", "1", "--c", "1"); code != 0 {
		t.Fatal(stderr)
	}
	if _, stderr, code := runCtl(t, "eval", other, "--standard", "occupancy", "--data-dir", dataDir); code != 1 || !strings.Contains(stderr, "3 features") {
		t.Errorf("other model: exit %d, %s", code, stderr)
	}
}

// writeNoisyCSV writes n rows of two features whose sign decides the
// class, a or b, except that every 20th row is class c whatever its
// features: a class no model recognises.
func writeNoisyCSV(t *testing.T, path string, n int, seed int) {
	t.Helper()
	var b strings.Builder
	b.WriteString("x1,x2,class\n")
	for i := range n {
		k := i*7919 + seed*104729
		x1, x2 := float64(k%997)/498.5-1, float64(k%991)/495.5-1
		c := "a"
		switch {
		case i%20 == 0:
			c = "c"
		case x1+x2 < 0:
			c = "b"
		}
		fmt.Fprintf(&b, "%.4f,%.4f,%s\n", x1, x2, c)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestTrainSummaryAtEnd: the last lines of train's text output are what a
// person reads first: accuracy, balanced accuracy, the weakest class and
// the warnings; the search list (--verbose) comes before them, and the
// --json object stays compact.
func TestTrainSummaryAtEnd(t *testing.T) {
	dir := t.TempDir()
	train, test, model := filepath.Join(dir, "train.csv"), filepath.Join(dir, "test.csv"), filepath.Join(dir, "m.trit")
	writeNoisyCSV(t, train, 600, 1)
	writeNoisyCSV(t, test, 300, 2)
	args := []string{"train", train, "--test", test, "-o", model, "--p", "128", "--sigma-grid", "0.5,1", "--c-grid", "1"}
	for _, verbose := range []bool{false, true} {
		a := args
		if verbose {
			a = append(a, "--verbose")
		}
		out, stderr, code := runCtl(t, a...)
		if code != 0 {
			t.Fatalf("train exited %d: %s", code, stderr)
		}
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		w := len(lines)
		for w > 0 && strings.HasPrefix(lines[w-1], "warning: ") {
			w--
		}
		if w == len(lines) || w < 2 {
			t.Fatalf("verbose %v: no warning lines at the end (class c is never recognised):\n%s", verbose, out)
		}
		if !strings.Contains(strings.Join(lines[w:], "\n"), `"c"`) {
			t.Errorf("verbose %v: the warnings do not name class c:\n%s", verbose, strings.Join(lines[w:], "\n"))
		}
		result, weakest := lines[w-2], lines[w-1]
		if !strings.HasPrefix(result, "result: accuracy ") || !strings.Contains(result, "balanced accuracy ") || !strings.Contains(result, "on the 300 test rows") {
			t.Errorf("verbose %v: the line before the weakest class is %q, want the accuracy and balanced accuracy on the test rows", verbose, result)
		}
		if !strings.HasPrefix(weakest, `weakest class: "c", recall `) {
			t.Errorf("verbose %v: the line before the warnings is %q, want the weakest class, c, with its recall", verbose, weakest)
		}
		if verbose != strings.Contains(out, "search (") {
			t.Errorf("verbose %v: search list present %v", verbose, !verbose)
		}
	}
	out, _, code := runCtl(t, append(args, "--json")...)
	var s map[string]any
	if err := json.Unmarshal([]byte(out), &s); code != 0 || err != nil {
		t.Fatalf("--json: exit %d, %v", code, err)
	}
	if _, ok := s["search"]; ok {
		t.Error("--json without --verbose lists the search")
	}
	if w, _ := s["warnings"].([]any); len(w) == 0 {
		t.Error("--json has no warnings")
	}
	if n := strings.Count(out, "\n"); n > 200 {
		t.Errorf("--json printed %d lines", n)
	}
}
