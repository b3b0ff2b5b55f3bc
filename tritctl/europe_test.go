package tritctl

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trit-iot/trit/training"
)

// writeTwoCircles writes n rows of the two-circles data with a header,
// the label last, delim between the columns and decimal as the decimal
// mark.
func writeTwoCircles(t *testing.T, path string, n int, seed uint64, delim, decimal string) {
	t.Helper()
	ds := training.TwoCircles(n, 0.5, 0.08, seed)
	var b strings.Builder
	b.WriteString("x" + delim + "y" + delim + "label\n")
	for i := range ds.N {
		x := ds.Row(i)
		v := func(f float32) string { return strings.Replace(fmt.Sprintf("%.4f", f), ".", decimal, 1) }
		fmt.Fprintf(&b, "%s%s%s%s%s\n", v(x[0]), delim, v(x[1]), delim, ds.Classes[ds.Y[i]])
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestEuropeanCSV: a ';' file with decimal commas, as spreadsheets in
// much of Europe save one, trains as it is (the comma detected and said);
// eval reads the next such file without flags; a comma-separated test file
// for it is read with its own delimiter and decimal point (said on
// stderr); a decimal comma the first rows do not show is named with the
// flag that reads it, and --decimal , reads it.
func TestEuropeanCSV(t *testing.T) {
	dir := t.TempDir()
	eu, euNext, us, model := filepath.Join(dir, "eu.csv"), filepath.Join(dir, "eu-next.csv"), filepath.Join(dir, "us.csv"), filepath.Join(dir, "m.trit")
	writeTwoCircles(t, eu, 300, 1, ";", ",")
	writeTwoCircles(t, euNext, 200, 2, ";", ",")
	writeTwoCircles(t, us, 200, 3, ",", ".")

	out, stderr, code := runCtl(t, "train", eu, "-o", model, "--test", us)
	if code != 0 {
		t.Fatalf("train eu.csv --test us.csv: exit %d\n%s", code, stderr)
	}
	for _, want := range []string{"delimiter ';', decimal comma, header row", "reading us.csv with its own delimiter ',' (the training file's is ';')"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("train's stderr has no %q:\n%s", want, stderr)
		}
	}
	if !strings.Contains(out, "on the 200 test rows") {
		t.Errorf("train evaluated on no test rows:\n%s", out)
	}

	out, _, code = runCtl(t, "eval", model, euNext, "--json")
	var s evalSummary
	if code != 0 || json.Unmarshal([]byte(out), &s) != nil || s.Rows != 200 || !strings.Contains(s.Read, "delimiter=';' decimal=','") || s.Accuracy < 90 {
		t.Errorf("eval eu-next.csv: exit %d, %d rows, read %q, accuracy %.1f%%", code, s.Rows, s.Read, s.Accuracy)
	}
	out, stderr, code = runCtl(t, "eval", model, us)
	if code != 0 || !strings.Contains(out, "delimiter ','") || !strings.Contains(stderr, "with its own delimiter ','") {
		t.Errorf("eval us.csv: exit %d\n%s%s", code, out, stderr)
	}

	// The first rows hold integers only: the decimal comma shows on line 4.
	late := filepath.Join(dir, "late.csv")
	text := "x;y;label\n1;2;a\n2;1;b\n3;2,5;a\n"
	for i := range 40 {
		text += fmt.Sprintf("%d,5;%d;%c\n", i%7, i%5, 'a'+i%2)
	}
	os.WriteFile(late, []byte(text), 0o644)
	_, stderr, code = runCtl(t, "train", late, "-o", model, "--sigma", "1", "--c", "1")
	if code != 1 || !strings.Contains(stderr, `late.csv:4: column 2 "y": invalid number "2,5" (a decimal comma? read the file with --decimal ,)`) {
		t.Errorf("a late decimal comma: exit %d, %s", code, stderr)
	}
	if _, stderr, code = runCtl(t, "train", late, "-o", model, "--sigma", "1", "--c", "1", "--decimal", ","); code != 0 {
		t.Errorf("--decimal ,: exit %d, %s", code, stderr)
	}
	if _, stderr, code = runCtl(t, "train", late, "-o", model, "--decimal", ";"); code != 2 {
		t.Errorf("--decimal ';': exit %d, %s; want 2", code, stderr)
	}
}

// TestTestFileErrors: a test file read with the training file's delimiter
// because --delimiter was given says how it was read and what to give; a
// column a flag names that the file lacks is a usage error (exit 2), as
// docs/CLI.md says of a bad flag value.
func TestTestFileErrors(t *testing.T) {
	dir := t.TempDir()
	semi, comma, model := filepath.Join(dir, "semi.csv"), filepath.Join(dir, "comma.csv"), filepath.Join(dir, "m.trit")
	writeTwoCircles(t, semi, 200, 1, ";", ".")
	writeTwoCircles(t, comma, 100, 2, ",", ".")
	_, stderr, code := runCtl(t, "train", semi, "--delimiter", ";", "-o", model, "--test", comma, "--sigma", "1", "--c", "1")
	if code != 1 || !strings.Contains(stderr, `no column named "label"`) || !strings.Contains(stderr, "the test file is read as the training file was: csv, delimiter ';'") ||
		!strings.Contains(stderr, "give --delimiter") {
		t.Errorf("a comma test file read with ';': exit %d, %s", code, stderr)
	}
	for _, args := range [][]string{
		{"train", semi, "-o", model, "--label-column", "Label"},
		{"train", semi, "-o", model, "--label-column", "9"},
		{"train", semi, "-o", model, "--time-column", "when"},
		{"train", semi, "-o", model, "--ignore-column", "z"},
		{"train", semi, "-o", model, "--header", "no", "--label-column", "label"},
	} {
		if _, stderr, code := runCtl(t, args...); code != 2 || !strings.Contains(stderr, "tritctl: semi.csv:") {
			t.Errorf("%q: exit %d, %s; want 2 and the place", args[4:], code, stderr)
		}
	}
	// eval with a flag naming a column the file lacks: 2 too; without
	// flags (the model's record) a missing column is the file's fault: 1.
	if _, stderr, code := runCtl(t, "train", semi, "-o", model, "--sigma", "1", "--c", "1"); code != 0 {
		t.Fatalf("train: %d %s", code, stderr)
	}
	if _, stderr, code := runCtl(t, "eval", model, semi, "--label-column", "Label"); code != 2 {
		t.Errorf("eval --label-column Label: exit %d %s, want 2", code, stderr)
	}
	os.WriteFile(comma, []byte("x;y;class\n1;2;a\n"), 0o644)
	if _, stderr, code := runCtl(t, "eval", model, comma); code != 1 || !strings.Contains(stderr, `no column named "label"`) {
		t.Errorf("eval of a file without the model's label column: exit %d %s, want 1", code, stderr)
	}
}
