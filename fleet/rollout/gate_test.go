package rollout

import (
	"strings"
	"testing"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/wire"
)

// The shadow rollout's gates include the confidence gate by default:
// a candidate that reports every window unknown fails it, with no
// max_unknown_increase given.
func TestConfidenceGateInShadow(t *testing.T) {
	r, err := New("s", strings.Repeat("a", 64), []string{"gw-1"}, api.Pace{}, api.AbortPolicy{}, t0)
	if err != nil {
		t.Fatal(err)
	}
	r.Shadow = &api.ShadowPolicy{MinWindows: 10}
	g := api.DefaultConfidenceGate
	r.Gate = &g
	rep := &wire.ShadowReport{Rollout: "s", Windows: 50, Agree: 50, ActiveUnknown: 1, CandidateUnknown: 50, ActiveCalibrated: true, CandidateCalibrated: true,
		ActiveConfidence: 49 * 230, ConfidenceReported: true}
	ok, verdict := r.judgeShadowConfidence(rep)
	if ok || !strings.Contains(verdict, "unknown 100.0% exceeds the active model's 2.0%") || !strings.Contains(verdict, "confidence of answered windows none answered (active 90.2%)") {
		t.Fatalf("%v %s", ok, verdict)
	}
	rep.CandidateUnknown, rep.CandidateConfidence = 1, 49*100
	if ok, verdict := r.judgeShadowConfidence(rep); ok || !strings.Contains(verdict, "confidence of answered windows 39.2% is below the active model's 90.2% by more than 20%") {
		t.Fatalf("a less confident candidate: %v %s", ok, verdict)
	}
}
