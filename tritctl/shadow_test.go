package tritctl

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/wire"
)

// rollout create --shadow sends the gates; rollout status prints each
// shadowing device's figures and verdict.
func TestRolloutShadowFlagsAndStatus(t *testing.T) {
	f, _ := newFakeFleet(t, map[string]string{
		"POST /v1/rollouts": `{"id":"s1","model_id":"vib","release":3,"order":["gw-1","gw-2"]}`,
		"GET /v1/rollouts/s1": `{"id":"s1","bundle":"ab12ab12ab12ab12","model_id":"vib","release":3,"state":"aborted",
 "reason":"shadow gate failed","order":["gw-1","gw-2"],
 "shadow":{"min_windows":50,"min_agreement":0.9},
 "devices":{"gw-1":{"state":"gate-failed","seq":4,"attempts":1,"stage":"shadow","reason":"gate failed: agreement 60.0% < 90%",
   "shadow":{"rollout":"s1","seq":4,"bundle":"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef","windows":100,"agree":60,
   "active_classes":["a","b"],"candidate_classes":["a","b"],"confusion":[[30,20],[20,30]],"active_low_margin":0,"candidate_low_margin":5,"low_margin":0.1}},
  "gw-2":{"state":"pending"}}}`,
	})
	_, stderr, code := runCtl(t, "rollout", "create", "--id", "s1", "--bundle", "ab12", "--device", "gw-1", "--device", "gw-2",
		"--phases", "1,100%", "--shadow", "--min-agreement", "0.9", "--min-windows", "50", "--max-divergence", "0.05")
	if code != 0 {
		t.Fatalf("create: %d %s", code, stderr)
	}
	var body struct {
		Shadow map[string]float64 `json:"shadow"`
	}
	if err := json.Unmarshal([]byte(f.bodies["POST /v1/rollouts"]), &body); err != nil {
		t.Fatal(err)
	}
	if body.Shadow["min_agreement"] != 0.9 || body.Shadow["min_windows"] != 50 || body.Shadow["max_divergence"] != 0.05 {
		t.Errorf("shadow policy sent: %v", body.Shadow)
	}
	stdout, stderr, code := runCtl(t, "rollout", "status", "s1")
	if code != 0 {
		t.Fatalf("status: %d %s", code, stderr)
	}
	for _, want := range []string{"shadow gates: min 50 windows, agreement >= 90%", "gw-1", "gate-failed", "60.0%", "5.0%", "agreement 60.0% < 90%"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("status lacks %q:\n%s", want, stdout)
		}
	}
}

// The retraining loop on tritctl's side: samples pull writes a CSV with
// the model's feature names and an empty label column; once labelled,
// tritctl train reads it (ignoring the prediction columns) and the model
// is signed, ready to be shadowed.
func TestSamplesPullLabelTrainSign(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	set := wire.SampleSet{Features: []string{"rms", "peak"}, MaxBytes: 32768}
	for i := range 400 {
		x := []float32{float32(rng.Float64()*2 - 1), float32(rng.Float64()*2 - 1)}
		set.Samples = append(set.Samples, wire.Sample{Time: 1_750_000_000_000 + int64(i)*100, X: x, Class: "normal", Margin: 0.02, Reason: wire.SampleLowMargin})
	}
	set.Samples[0].Candidate, set.Samples[0].Reason = "fault", wire.SampleDisagreement
	body, _ := json.Marshal(set)
	f, _ := newFakeFleet(t, map[string]string{"GET /v1/devices/gw-1/samples": string(body), "POST /v1/labels": `{"labelled":400}`})
	dir := t.TempDir()
	file := filepath.Join(dir, "gw-1.csv")
	stdout, stderr, code := runCtl(t, "samples", "pull", "--device", "gw-1", "--out", file)
	if code != 0 || !strings.Contains(stdout, "400 samples of 1 device") {
		t.Fatalf("pull: %d %q %q", code, stdout, stderr)
	}
	if len(f.calls) != 1 {
		t.Fatalf("calls %v", f.calls)
	}
	if _, _, code := runCtl(t, "samples", "pull", "--device", "gw-1", "--out", file); code == 0 {
		t.Error("pull overwrote an existing file without --force")
	}
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	if lines[0] != "time,rms,peak,window,device,predicted,candidate,margin,reason,label" || len(lines) != 401 {
		t.Fatalf("header %q, %d lines", lines[0], len(lines))
	}
	if !strings.HasSuffix(lines[1], ",gw-1/1750000000000,gw-1,normal,fault,0.0200,disagreement,") {
		t.Errorf("first row %q", lines[1])
	}
	// Label: what an operator would do, here by a rule the model can learn.
	var b strings.Builder
	b.WriteString(lines[0] + "\n")
	for _, l := range lines[1:] {
		cells := strings.Split(l, ",")
		rms, _ := strconv.ParseFloat(cells[1], 64)
		label := "normal"
		if rms > 0 {
			label = "fault"
		}
		b.WriteString(l + label + "\n")
	}
	if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	// The labels go to the fleet's store, one request for the file.
	stdout, stderr, code = runCtl(t, "samples", "label", file)
	if code != 0 || !strings.Contains(stdout, "400 windows labelled") {
		t.Fatalf("samples label: %d %q %q", code, stdout, stderr)
	}
	var sent api.LabelRequest
	if err := json.Unmarshal([]byte(f.bodies["POST /v1/labels"]), &sent); err != nil {
		t.Fatal(err)
	}
	if sent.Via != api.LabelCLI || len(sent.Labels) != 400 || sent.Labels[0].Window != "gw-1/1750000000000" || sent.Labels[399].Window != "gw-1/1750000039900" {
		t.Fatalf("labels sent: via %q, %d, first %+v", sent.Via, len(sent.Labels), sent.Labels[0])
	}
	model := filepath.Join(dir, "next.trit")
	if _, stderr, code := runCtl(t, "train", file, "--ignore-column", "window,device,predicted,candidate,margin,reason", "-o", model,
		"--p", "256", "--sigma", "0.5", "--c", "10"); code != 0 {
		t.Fatalf("train on the labelled samples: %d %s", code, stderr)
	}
	key := filepath.Join(dir, "release")
	if _, stderr, code := runCtl(t, "keys", "gen", "--out", key); code != 0 {
		t.Fatalf("keys gen: %s", stderr)
	}
	if _, stderr, code := runCtl(t, "bundle", "sign", "--key", key+".key", "--model-id", "vib", "--release", "2", model, "-o", filepath.Join(dir, "next-2.trit")); code != 0 {
		t.Fatalf("sign: %s", stderr)
	}
	out, stderr, code := runCtl(t, "eval", model, file, "--json")
	if code != 0 {
		t.Fatalf("eval: %d %s", code, stderr)
	}
	var ev struct {
		Accuracy float64 `json:"accuracy"`
	}
	json.Unmarshal([]byte(out), &ev)
	if ev.Accuracy < 0.8 {
		t.Errorf("the retrained model scores %.2f on its own labelled samples: %s", ev.Accuracy, out)
	}
}

func TestRolloutPlan(t *testing.T) {
	f, _ := newFakeFleet(t, map[string]string{"POST /v1/plan": `{"bundle":"ab","windows":300,"changed":45,"answered":2,
 "devices":[{"device":"gw-1","plan":{"bundle":"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef","windows":200,"changed":40,"transitions":{"normal→fault":40}}},
 {"device":"gw-2","plan":{"bundle":"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef","windows":100,"changed":5}},
 {"device":"gw-3","error":"fleet: no response from the device: gw-3 did not answer within 20s (is it online?)"}]}`})
	stdout, stderr, code := runCtl(t, "rollout", "plan", "--bundle", "ab", "--selector", "site=north")
	if code != 0 {
		t.Fatalf("plan: %d %s", code, stderr)
	}
	for _, want := range []string{"gw-1", "200", "20.0%", "normal→fault 40", "did not answer", "overall: 45 of 300 predictions would change (15.0%) on 2 of 3 devices"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("plan output lacks %q:\n%s", want, stdout)
		}
	}
	if !strings.Contains(f.bodies["POST /v1/plan"], `"selector":{"site":"north"}`) {
		t.Errorf("request body %s", f.bodies["POST /v1/plan"])
	}
}

func TestSamplesPullBySelector(t *testing.T) {
	set := `{"features":["a","b"],"max_bytes":4096,"samples":[{"time":1750000000000,"x":[1,2],"class":"n","margin":0.01,"reason":"low-margin"}]}`
	newFakeFleet(t, map[string]string{
		"GET /v1/devices":              `[{"id":"gw-1","labels":{"site":"n"}},{"id":"gw-2","labels":{"site":"n"}},{"id":"gw-3","labels":{"site":"s"}},{"id":"gw-4","labels":{"site":"n"}}]`,
		"GET /v1/devices/gw-1/samples": set,
		"GET /v1/devices/gw-2/samples": set,
	})
	file := filepath.Join(t.TempDir(), "north.csv")
	stdout, stderr, code := runCtl(t, "samples", "pull", "--selector", "site=n", "--out", file)
	if code != 0 || !strings.Contains(stdout, "2 samples of 2 devices") || !strings.Contains(stderr, "gw-4 skipped") {
		t.Fatalf("pull: %d %q %q", code, stdout, stderr)
	}
	raw, _ := os.ReadFile(file)
	if !strings.Contains(string(raw), ",gw-1/1750000000000,gw-1,n,,0.0100,low-margin,") || !strings.Contains(string(raw), ",gw-2,") || strings.Contains(string(raw), "gw-3") {
		t.Errorf("file:\n%s", raw)
	}
}
