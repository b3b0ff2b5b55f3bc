package ctl

import (
	"encoding/json"
	"strings"
	"testing"
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
