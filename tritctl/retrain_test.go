package tritctl

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/training/retrain"
)

// TestRetrainCommand: the active model, trained on the early rows of a
// drifting stream, loses to a challenger trained on those rows and the
// fleet's labelled late windows, which is written; with labels the active
// model already gets right, nothing is written and the command fails.
func TestRetrainCommand(t *testing.T) {
	dir := t.TempDir()
	stream := retrain.RotatingStream(4000, math.Pi/2, 1)
	var b strings.Builder
	b.WriteString("a,b,label\n")
	for i := range 1500 {
		x := stream.Row(i)
		fmt.Fprintf(&b, "%g,%g,%s\n", x[0], x[1], stream.Classes[stream.Y[i]])
	}
	orig := filepath.Join(dir, "orig.csv")
	os.WriteFile(orig, []byte(b.String()), 0o600)
	active := filepath.Join(dir, "m.trit")
	if _, stderr, code := runCtl(t, "train", orig, "--p", "256", "--sigma", "1", "--c", "1", "-o", active); code != 0 {
		t.Fatalf("train: %s", stderr)
	}
	windows := func(from, to int, label func(i int) string) string {
		var l api.WindowList
		for i := from; i < to; i += 7 {
			l.Windows = append(l.Windows, api.FieldWindow{ID: api.WindowID("gw-1", int64(i)), Device: "gw-1", Time: time.UnixMilli(int64(i)),
				Model: "m", Release: 1, Features: []string{"a", "b"}, X: stream.Row(i), Label: label(i)})
		}
		l.Windows = append(l.Windows, api.FieldWindow{ID: "gw-1/9999999999999", Features: []string{"x", "y"}, X: []float32{1, 2}, Label: "high"})
		l.Total = len(l.Windows)
		raw, _ := json.Marshal(l)
		return string(raw)
	}
	truth := func(i int) string { return stream.Classes[stream.Y[i]] }
	f, _ := newFakeFleet(t, map[string]string{"GET /v1/windows": windows(2600, 4000, truth)})
	out := filepath.Join(dir, "m-2.trit")
	stdout, stderr, code := runCtl(t, "retrain", "m", "--active", active, "--data", orig, "-o", out, "--p", "256", "--sigma", "1", "--c", "1", "--json")
	if code != 0 {
		t.Fatalf("retrain: %d %s %s", code, stdout, stderr)
	}
	var s retrainSummary
	if err := json.Unmarshal([]byte(stdout), &s); err != nil {
		t.Fatal(err)
	}
	if !s.Better || s.Out != out || s.OutRelease != 2 || s.Windows != 200 || s.Skipped != 1 || s.Original != 1500 || s.Challenger.Accuracy <= s.Active.Accuracy {
		t.Fatalf("summary %+v", s)
	}
	if q := f.queries["GET /v1/windows"]; !strings.Contains(q, "model=m") || !strings.Contains(q, "labelled=true") {
		t.Fatalf("query %q", q)
	}
	if _, stderr, code := runCtl(t, "bundle", "inspect", out); code != 0 {
		t.Fatalf("inspect the challenger: %s", stderr)
	}
	// Windows labelled as the active model classifies them: it is right on
	// every one, so a challenger can at best tie.
	m, _, err := readModelSized(active)
	if err != nil {
		t.Fatal(err)
	}
	newFakeFleet(t, map[string]string{"GET /v1/windows": windows(2600, 4000, func(i int) string {
		c, _ := m.Predict(nil, stream.Row(i))
		return m.Classes()[c]
	})})
	out2 := filepath.Join(dir, "m-3.trit")
	_, stderr, code = runCtl(t, "retrain", "m", "--active", active, "--data", orig, "-o", out2, "--p", "256", "--sigma", "1", "--c", "1")
	if code != 1 || !strings.Contains(stderr, "no challenger proposed") {
		t.Fatalf("not better: %d %s", code, stderr)
	}
	if _, err := os.Stat(out2); !os.IsNotExist(err) {
		t.Fatalf("a challenger that is not better was written: %v", err)
	}
}
