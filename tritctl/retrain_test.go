package tritctl

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
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

// TestRetrainOnFleet: --on-fleet asks the fleet for a retraining job,
// waits for it, prints the comparison and downloads a better challenger;
// a refused one writes nothing and fails.
func TestRetrainOnFleet(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("a,b,label\n")
	stream := retrain.RotatingStream(300, 0, 1)
	for i := range stream.N {
		fmt.Fprintf(&b, "%g,%g,%s\n", stream.Row(i)[0], stream.Row(i)[1], stream.Classes[stream.Y[i]])
	}
	orig := filepath.Join(dir, "o.csv")
	os.WriteFile(orig, []byte(b.String()), 0o600)
	model := filepath.Join(dir, "c.trit")
	if _, stderr, code := runCtl(t, "train", orig, "--p", "64", "--sigma", "1", "--c", "1", "--model-id", "m", "--release", "4", "-o", model); code != 0 {
		t.Fatalf("train: %s", stderr)
	}
	challenger, _ := os.ReadFile(model)
	job := func(better bool) string {
		j := api.TrainJob{ID: "train-1", State: api.TrainSucceeded, Request: api.TrainRequest{ModelID: "m", Retrain: true},
			Retrain: &api.RetrainResult{Active: strings.Repeat("a", 64), ActiveRelease: 3, Windows: 80, Newest: 20, OriginalRows: 300, TrainedRows: 700, MaxCopies: 8,
				ActiveScores: api.RetrainScores{Windows: 20, Accuracy: 55, Balanced: 52}, Challenger: api.RetrainScores{Windows: 20, Accuracy: 80, Balanced: 79},
				Better: better, Why: map[bool]string{true: "better on the 20 newest labelled windows", false: "refused: no better"}[better]}}
		raw, _ := json.Marshal(j)
		return string(raw)
	}
	f, _ := newFakeFleet(t, map[string]string{"POST /v1/train": job(true), "GET /v1/train/train-1/bundle": string(challenger)})
	out := filepath.Join(dir, "m-4.trit")
	stdout, stderr, code := runCtl(t, "retrain", "m", "--on-fleet", "m/train.csv", "-o", out, "--interval", "10ms")
	if code != 0 || !strings.Contains(stdout, "wrote "+out+": release 4") || !strings.Contains(stdout, "55.00%") {
		t.Fatalf("on the fleet: %d %q %q", code, stdout, stderr)
	}
	var sent api.TrainRequest
	json.Unmarshal([]byte(f.bodies["POST /v1/train"]), &sent)
	if !sent.Retrain || sent.Dataset != "m/train.csv" || sent.ModelID != "m" {
		t.Fatalf("request %+v", sent)
	}
	newFakeFleet(t, map[string]string{"POST /v1/train": job(false)})
	out2 := filepath.Join(dir, "m-5.trit")
	if _, stderr, code := runCtl(t, "retrain", "m", "--on-fleet", "m/train.csv", "-o", out2); code != 1 || !strings.Contains(stderr, "no challenger proposed") {
		t.Fatalf("refused: %d %q", code, stderr)
	}
	if _, err := os.Stat(out2); !os.IsNotExist(err) {
		t.Fatal("a refused challenger was written")
	}
	if _, stderr, code := runCtl(t, "retrain", "m", "--on-fleet", "x", "--data", orig, "-o", out2); code != 2 {
		t.Fatalf("--on-fleet with --data: %d %q", code, stderr)
	}
	// --standard reads the original data as docs/DATA.md defines it: a
	// flag that says otherwise is refused, not ignored.
	if _, stderr, code := runCtl(t, "retrain", "m", "--active", filepath.Join(dir, "none.trit"), "--standard", "occupancy", "--ignore-column", "S1_Temp", "-o", out2); code != 2 || !strings.Contains(stderr, "--ignore-column") {
		t.Fatalf("--standard with --ignore-column: %d %q", code, stderr)
	}
}

// TestRetrainStatus: per model, the labelled windows by day with the
// model's accuracy on them, the challengers with their comparison, the
// policies with why; without the admin role the windows are said to need
// it and the rest is shown.
func TestRetrainStatus(t *testing.T) {
	day := func(d, h int) time.Time { return time.Date(2026, 11, d, h, 0, 0, 0, time.UTC) }
	ws := api.WindowList{Windows: []api.FieldWindow{
		{ID: "gw-1/1", Model: "vib", Time: day(27, 1), Predicted: "normal", Label: "normal"},
		{ID: "gw-1/2", Model: "vib", Time: day(28, 1), Predicted: "normal", Label: "fault"},
		{ID: "gw-1/3", Model: "vib", Time: day(28, 2), Predicted: "fault", Label: "fault"},
	}}
	raw, _ := json.Marshal(ws)
	jobs := `[{"id":"train-2","state":"succeeded","request":{"model_id":"vib","retrain":true},"retrain":{"active":"` + strings.Repeat("a", 64) + `","active_release":3,
	 "labelled_windows":80,"newest_windows":20,"original_rows":300,"trained_rows":700,"max_copies":8,
	 "active_scores":{"windows":20,"accuracy":55,"balanced_accuracy":52,"ece":9,"unknown":5},"challenger_scores":{"windows":20,"accuracy":80,"balanced_accuracy":79,"ece":4,"unknown":2},
	 "better":true,"why":"better on the 20 newest labelled windows"}},{"id":"train-1","state":"succeeded","request":{"model_id":"usps"}}]`
	policies := `[{"model":"vib","rule":"model vib on site=north: accuracy on new labels < 85.0%","stage":"watching","why":"no threshold crossed: accuracy on the new labels 90.0% (threshold 85.0%)","since":"2026-11-28T00:00:00Z","changed":"2026-11-28T00:00:00Z","devices":2,"new_labels":3}]`
	newFakeFleet(t, map[string]string{"GET /v1/windows": string(raw), "GET /v1/train": jobs, "GET /v1/policies": policies})
	stdout, stderr, code := runCtl(t, "retrain", "status")
	if code != 0 {
		t.Fatalf("status: %d %s", code, stderr)
	}
	for _, want := range []string{"vib: 3 labelled, 66.7% predicted right", "2026-11-28       2   50.0%", "train-2 vib r3, 80 windows (20 newest): accuracy 55.00% → 80.00%",
		"calibration error 9.00% → 4.00%", "vib: watching", "no threshold crossed"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("status lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, "usps") {
		t.Errorf("a training job that is no retraining listed:\n%s", stdout)
	}
	// A role that may not read the windows sees the rest, and why not the windows.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/windows":
			w.WriteHeader(http.StatusForbidden)
			io.WriteString(w, `{"error":"viewer may not do this"}`)
		case "/v1/train":
			io.WriteString(w, jobs)
		default:
			io.WriteString(w, policies)
		}
	}))
	defer srv.Close()
	t.Setenv("TRIT_FLEET_URL", srv.URL)
	stdout, stderr, code = runCtl(t, "retrain", "policies") // the former name
	if code != 0 || !strings.Contains(stdout, "the labelled windows need the admin role") || !strings.Contains(stdout, "train-2") {
		t.Fatalf("as a viewer: %d %q %q", code, stdout, stderr)
	}
}

// TestRetrainDamagedRecords: a stored window or training job that does
// not decode is named by the fleet (GET /v1/windows's damaged, an entry
// with damaged in GET /v1/train), but retrain status dropped both
// silently: the damaged job was filtered out as no retraining, the
// damaged windows never mentioned. Now the job is listed as (damaged)
// among the challengers and both are named on stderr with what to do, as
// devices list, rollout list and bundles list do; --json carries them.
func TestRetrainDamagedRecords(t *testing.T) {
	ws := api.WindowList{Windows: []api.FieldWindow{{ID: "gw-1/1", Model: "vib", Time: time.Date(2026, 11, 27, 1, 0, 0, 0, time.UTC), Predicted: "normal", Label: "normal"}},
		Total: 1, Damaged: []api.Damaged{{Collection: "fleet_windows", Key: "w/gw-1/1700000000000", Error: "parsing time"}}}
	raw, _ := json.Marshal(ws)
	jobs := `[{"id":"train-1","state":"succeeded","request":{"model_id":"usps"}},{"id":"train-2","damaged":"invalid character"}]`
	newFakeFleet(t, map[string]string{"GET /v1/windows": string(raw), "GET /v1/train": jobs, "GET /v1/policies": `[]`})
	stdout, stderr, code := runCtl(t, "retrain", "status")
	if code != 0 || !strings.Contains(stdout, "vib: 1 labelled") || !strings.Contains(stdout, "  train-2 (damaged)\n") || strings.Contains(stdout, "train-1") {
		t.Fatalf("status: %d\n%s\n%s; want train-2 listed as (damaged), train-1 (no retraining) not", code, stdout, stderr)
	}
	for _, want := range []string{
		"1 window record(s) in the fleet's database do not decode and are skipped: w/gw-1/1700000000000; restore a backup",
		"1 training job record(s) in the fleet's database do not decode and are skipped: train-2; restore a backup",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	stdout, stderr, code = runCtl(t, "retrain", "status", "--json")
	var st loopStatusOut
	if code != 0 || json.Unmarshal([]byte(stdout), &st) != nil || len(st.DamagedWindows) != 1 || st.DamagedWindows[0].Key != "w/gw-1/1700000000000" ||
		len(st.Challengers) != 1 || st.Challengers[0].ID != "train-2" || st.Challengers[0].Damaged == "" || !strings.Contains(stderr, "train-2") {
		t.Fatalf("status --json: %d %s %s", code, stdout, stderr)
	}
}

// TestWarnDamagedBounded: the stderr hint names at most maxDamagedNamed
// records (a store may hold 100,000 damaged windows) and counts the rest.
func TestWarnDamagedBounded(t *testing.T) {
	keys := make([]string, 100_000)
	for i := range keys {
		keys[i] = fmt.Sprintf("w/gw-1/%013d", i)
	}
	var b strings.Builder
	warnDamaged(&b, "window", keys, "restore a backup")
	if got := b.String(); len(got) > 1000 || !strings.HasPrefix(got, "100000 window record(s)") || !strings.Contains(got, keys[maxDamagedNamed-1]+" and 99980 more; restore a backup\n") {
		t.Errorf("warnDamaged of 100,000 keys: %d bytes: %.300s", len(got), got)
	}
}

// TestRetrainNamesDamagedWindows: retrain (on this machine) reads the
// fleet's labelled windows; the damaged ones, which the fleet skips and
// names, were not mentioned. Now they are named on stderr.
func TestRetrainNamesDamagedWindows(t *testing.T) {
	dir := t.TempDir()
	active := filepath.Join("..", "inference", "bundle", "testdata", "golden", "sensor-v2.trit")
	orig := filepath.Join(dir, "orig.csv")
	var b strings.Builder
	b.WriteString("date;time;temperature;humidity;light;co2;humidity_ratio;occupancy\n")
	for i := range 30 {
		fmt.Fprintf(&b, "2026-11-27;01:%02d:00;%d;40;100;400;0.004;class-%d\n", i, 20+i%5, i%3)
	}
	if err := os.WriteFile(orig, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(api.WindowList{Damaged: []api.Damaged{{Collection: "fleet_windows", Key: "w/gw-1/1700000000000", Error: "parsing time"}}})
	newFakeFleet(t, map[string]string{"GET /v1/windows": string(raw)})
	_, stderr, code := runCtl(t, "retrain", "sensor-v2", "--active", active, "--data", orig, "--label-column", "occupancy", "--delimiter", ";", "-o", filepath.Join(dir, "out.trit"))
	if code != 1 || !strings.Contains(stderr, "1 window record(s) in the fleet's database do not decode and are skipped: w/gw-1/1700000000000") ||
		!strings.Contains(stderr, "0 labelled windows of model sensor-v2") {
		t.Fatalf("retrain: %d %s; want the damaged window named, then too few windows", code, stderr)
	}
}
