package rollout

import (
	"strings"
	"testing"
	"time"

	"github.com/trit-iot/trit/api"
)

// The audit trail's words for a rollout request and a stored rollout:
// every field that decides what it does, in one line (fleet/server's
// TestRolloutRecordsComplete checks them over the API).
func TestRolloutTexts(t *testing.T) {
	req := &api.RolloutRequest{Bundle: strings.Repeat("ab", 32) + "extra", Devices: []string{"gw-1", "gw-2"},
		Selector: map[string]string{"site": "north", "hw": "pi4"},
		Pace:     api.Pace{Phases: []api.Phase{{Count: 1}, {Percent: 100}}},
		Abort:    api.AbortPolicy{On: "failed", ThresholdPercent: 20, MinExecuted: 3},
		Timeout:  10 * time.Minute, Retries: map[string]int{"failed": 2}, Rollback: true, NoGate: true}
	want := "bundle " + strings.Repeat("ab", 32) + "… (69 bytes); targets selector hw=pi4,site=north, 2 devices (gw-1, gw-2); phases 1,100%; " +
		"abort on failed > 20% after 3; timeout 10m0s; retries failed=2; no shadow; confidence gate off; rollback yes"
	if got := RequestText(req); got != want {
		t.Errorf("RequestText:\n%s\nwant\n%s", got, want)
	}
	if got := SelectorText(nil); got != "(every device)" {
		t.Errorf("SelectorText(nil) = %q", got)
	}
	r := &Rollout{Rollout: api.Rollout{ID: "r1", Bundle: strings.Repeat("0", 64), ModelID: "vib", Release: 3, Order: []string{"gw-1"},
		State: api.RolloutAborted, CreatedBy: "otto", Approval: &api.Approval{}}}
	for _, part := range []string{"bundle 000000000000 (vib release 3)", "targets 1 devices (gw-1)", "all at once", "no abort criterion",
		"confidence gate -", "rollback no; created by otto; approval never given (aborted)"} {
		if got := Text(r); !strings.Contains(got, part) {
			t.Errorf("Text: %q lacks %q", got, part)
		}
	}
	// The confidence gate: judged after its windows, or on the shadow
	// reports of a shadow rollout.
	r.Gate = &api.ConfidenceGate{MaxUnknownIncrease: 0.1, MaxConfidenceDrop: 0.2, MinWindows: 50}
	if got, want := Text(r), "confidence gate unknown ≤ +0.1, confidence ≥ −0.2, from 50 windows, decided by 200"; !strings.Contains(got, want) {
		t.Errorf("Text: %q lacks %q", got, want)
	}
	r.Shadow = &api.ShadowPolicy{MinWindows: 40}
	if got, want := Text(r), "confidence ≥ −0.2, on the shadow reports"; !strings.Contains(got, want) {
		t.Errorf("Text of a shadow rollout: %q lacks %q", got, want)
	}
}
