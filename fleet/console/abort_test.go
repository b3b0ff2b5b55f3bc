package console

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet/rollout"
)

// TestAbortShownAsTheEngineDecides: for every abort policy over every mix
// of device outcomes, the page says "Met" exactly when Step aborts the
// rollout, with the counts the engine's reason gives. It fails if the
// console counts failures any other way than the engine does (by a state's
// name rather than its failure kind, say: gate-failed is finished but no
// failure kind, and a renamed state would part the two).
func TestAbortShownAsTheEngineDecides(t *testing.T) {
	t0 := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	states := []api.DeviceState{api.DeviceSucceeded, api.DeviceFailed, api.DeviceRejected, api.DeviceTimedOut,
		api.DeviceGateFailed, api.DeviceNotified}
	ids := []string{"a", "b", "c"}
	build := func(p api.AbortPolicy, mix []api.DeviceState) *rollout.Rollout {
		r, err := rollout.New("r", "b", ids, api.Pace{}, p, t0)
		if err != nil {
			t.Fatal(err)
		}
		for i, id := range ids {
			d := r.Devices[id]
			d.State, d.Attempts, d.NotifiedAt, d.UpdatedAt = mix[i], 1, t0, t0
		}
		return r
	}
	checked := 0
	for _, on := range []string{"", api.FailureAny, api.FailureFailed, api.FailureRejected, api.FailureTimedOut} {
		for _, threshold := range []float64{0, 50} {
			for _, minExec := range []int{0, 2, 3} {
				p := api.AbortPolicy{On: on, ThresholdPercent: threshold, MinExecuted: minExec}
				for n := range len(states) * len(states) * len(states) {
					mix := []api.DeviceState{states[n%6], states[n/6%6], states[n/36]}
					shown := newAbortStatus(build(p, mix))
					r := build(p, mix)
					r.Step(t0.Add(time.Second), func(string) uint64 { return 100 })
					aborted := r.State == api.RolloutAborted
					if shown.Met != aborted {
						t.Fatalf("policy %+v, devices %v: the console says met=%v (%q), the engine aborted=%v (%q)",
							p, mix, shown.Met, shown.Status, aborted, r.Reason)
					}
					if aborted {
						checked++
						if want := fmt.Sprintf("%d of %d finished devices", shown.Failed, shown.Executed); !strings.Contains(r.Reason, want) {
							t.Fatalf("policy %+v, devices %v: the console counts %q, the engine %q", p, mix, want, r.Reason)
						}
					}
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no mix aborted: the test proves nothing")
	}
}
