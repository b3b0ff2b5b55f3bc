package tritctl

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestParseLabels(t *testing.T) {
	good := "time,a,window,label\nt,1,gw-1/0000000000001,fault\nt,2,gw-1/0000000000002,\nt,3,gw-1/0000000000003, normal \n"
	ls, empty, err := parseLabels("f.csv", []byte(good), "window", "label")
	if err != nil || len(ls) != 2 || empty != 1 || ls[1].Label != "normal" || ls[1].Window != "gw-1/0000000000003" {
		t.Fatalf("%+v, %d empty, %v", ls, empty, err)
	}
	// A spreadsheet's semicolons.
	ls, _, err = parseLabels("f.csv", []byte(strings.ReplaceAll(good, ",", ";")), "window", "label")
	if err != nil || len(ls) != 2 {
		t.Fatalf("semicolons: %+v, %v", ls, err)
	}
	for _, tt := range []struct{ name, in, says string }{
		{"twice", "window,label\nw/1,a\nw/1,b\n", "f.csv line 3: window w/1 is labelled on line 2 already"},
		{"no window", "window,label\n,a\n", "f.csv line 2: label \"a\" for no window"},
		{"no columns", "x,y\n1,2\n", `no "window" and "label" columns`},
		{"short row", "window,label\nw/1\n", "f.csv line 2: 1 fields"},
		{"empty", "", "f.csv: empty file"},
	} {
		if _, _, err := parseLabels("f.csv", []byte(tt.in), "window", "label"); err == nil || !strings.Contains(err.Error(), tt.says) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.says)
		}
	}
	var b strings.Builder
	b.WriteString("window,label\n")
	for i := range maxLabelsPerFile + 1 {
		b.WriteString("gw/" + strconv.Itoa(i) + ",x\n")
	}
	if _, _, err := parseLabels("f.csv", []byte(b.String()), "window", "label"); err == nil || !strings.Contains(err.Error(), "split the file") {
		t.Errorf("too many: %v", err)
	}
}

// TestSamplesLabelRefused: the fleet's refusal (here a class the model
// does not have) is an error saying nothing was labelled, and a file
// without labels is not sent.
func TestSamplesLabelRefused(t *testing.T) {
	f, _ := newFakeFleet(t, map[string]string{})
	dir := t.TempDir()
	file := filepath.Join(dir, "l.csv")
	os.WriteFile(file, []byte("window,label\ngw-1/0000000000001,\n"), 0o600)
	if _, stderr, code := runCtl(t, "samples", "label", file); code != 1 || !strings.Contains(stderr, "no row has a label") || len(f.calls) != 0 {
		t.Fatalf("no labels: %d %q, calls %v", code, stderr, f.calls)
	}
	os.WriteFile(file, []byte("window,label\ngw-1/0000000000001,sideways\n"), 0o600)
	_, stderr, code := runCtl(t, "samples", "label", file)
	if code != 1 || !strings.Contains(stderr, "nothing labelled") || len(f.calls) != 1 {
		t.Fatalf("refused: %d %q, calls %v", code, stderr, f.calls)
	}
}

func FuzzParseLabels(f *testing.F) {
	f.Add([]byte("time,a,window,label\nt,1,gw-1/0000000000001,fault\n"))
	f.Add([]byte("window;label\n\"w;1\";\"a\"\"b\"\n"))
	f.Add([]byte("window\tlabel\nw\t\n"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		ls, empty, err := parseLabels("f", raw, "window", "label")
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, l := range ls {
			if l.Window == "" || l.Label == "" || seen[l.Window] {
				t.Fatalf("label %+v (seen %v)", l, seen[l.Window])
			}
			seen[l.Window] = true
		}
		if len(ls) > maxLabelsPerFile || empty < 0 {
			t.Fatalf("%d labels, %d empty", len(ls), empty)
		}
	})
}
