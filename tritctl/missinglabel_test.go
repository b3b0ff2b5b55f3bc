package tritctl

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTrainMissingLabelMark: tritctl train on a CSV one of whose rows has
// a missing-value mark for its label (NA, ?, null, NaN, N/A) exits 1 with
// an error naming the file, the line, the label column and the mark, and
// writes no bundle (issue 41: a label of NA trained a 3-class model with
// a one-row "NA" class, exit 0, no warning); --json gives the same error
// with the file, line and column as fields. With --skip-unlabelled the row is left out, said in the
// notes, and the model has the file's two classes. The mark in the file
// given to train --test or eval is the same error.
func TestTrainMissingLabelMark(t *testing.T) {
	dir := t.TempDir()
	clean := filepath.Join(dir, "clean.csv")
	writeTwoCircles(t, clean, 200, 1, ",", ".")
	raw, err := os.ReadFile(clean)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(raw), "\n")
	// Line 5 of the file (the header is line 1): its label replaced.
	const line = 5
	withMark := func(mark string) string {
		ls := append([]string(nil), lines...)
		f := strings.Split(ls[line-1], ",")
		f[len(f)-1] = mark
		ls[line-1] = strings.Join(f, ",")
		return strings.Join(ls, "\n")
	}
	for _, mark := range []string{"NA", "?", "null", "NaN", "N/A"} {
		t.Run(mark, func(t *testing.T) {
			csv, model := filepath.Join(dir, "bad.csv"), filepath.Join(dir, "bad.trit")
			if err := os.WriteFile(csv, []byte(withMark(mark)), 0o644); err != nil {
				t.Fatal(err)
			}
			os.Remove(model)
			out, stderr, code := runCtl(t, "train", csv, "-o", model, "--sigma", "1", "--c", "1")
			want := `bad.csv:5: column 3 "label": missing label "` + mark + `"`
			if code != 1 || !strings.Contains(stderr, want) || !strings.Contains(stderr, "--skip-unlabelled") {
				t.Errorf("train with label %q on line %d: exit %d, want 1 and %q\nstdout: %s\nstderr: %s", mark, line, code, want, out, stderr)
			}
			if _, err := os.Stat(model); !os.IsNotExist(err) {
				t.Errorf("train with label %q wrote %s (stat: %v)", mark, model, err)
			}
			out, _, code = runCtl(t, "train", csv, "-o", model, "--sigma", "1", "--c", "1", "--json")
			var e struct {
				Error      string `json:"error"`
				ExitCode   int    `json:"exit_code"`
				File       string `json:"file"`
				Line       int    `json:"line"`
				ColumnName string `json:"column_name"`
			}
			if err := json.Unmarshal([]byte(out), &e); code != 1 || err != nil || e.ExitCode != 1 || e.File != "bad.csv" || e.Line != line ||
				e.ColumnName != "label" || !strings.Contains(e.Error, want) {
				t.Errorf("train --json with label %q: exit %d, want 1 and the file, line and column named\n%s", mark, code, out)
			}
			if _, err := os.Stat(model); !os.IsNotExist(err) {
				t.Errorf("train --json with label %q wrote %s", mark, model)
			}
		})
	}

	csv, model := filepath.Join(dir, "skip.csv"), filepath.Join(dir, "skip.trit")
	if err := os.WriteFile(csv, []byte(withMark("NA")), 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := runCtl(t, "train", csv, "-o", model, "--sigma", "1", "--c", "1", "--skip-unlabelled", "--json")
	var s struct {
		Classes int      `json:"classes"`
		Notes   []string `json:"notes"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &s) != nil {
		t.Fatalf("--skip-unlabelled: exit %d\n%s%s", code, out, stderr)
	}
	if s.Classes != 2 || !strings.Contains(strings.Join(s.Notes, "; "), "1 rows without a label were left out") {
		t.Errorf("--skip-unlabelled: %d classes, notes %q; want 2 and the left-out row said", s.Classes, s.Notes)
	}
	if _, err := os.Stat(model); err != nil {
		t.Fatalf("--skip-unlabelled wrote no bundle: %v", err)
	}

	// The mark in a test file, for train --test and for eval, is the same
	// error, and train --test writes no bundle either.
	bad, out2 := filepath.Join(dir, "bad.csv"), filepath.Join(dir, "tested.trit")
	if err := os.WriteFile(bad, []byte(withMark("NA")), 0o644); err != nil {
		t.Fatal(err)
	}
	want := `bad.csv:5: column 3 "label": missing label "NA"`
	if _, stderr, code := runCtl(t, "train", clean, "-o", out2, "--sigma", "1", "--c", "1", "--test", bad); code != 1 || !strings.Contains(stderr, want) {
		t.Errorf("train --test with an NA label: exit %d, want 1 and %q\n%s", code, want, stderr)
	}
	if _, err := os.Stat(out2); !os.IsNotExist(err) {
		t.Errorf("train --test with an NA label wrote %s (stat: %v)", out2, err)
	}
	if _, stderr, code := runCtl(t, "eval", model, bad); code != 1 || !strings.Contains(stderr, want) {
		t.Errorf("eval with an NA label: exit %d, want 1 and %q\n%s", code, want, stderr)
	}
}
