package rollout

import (
	"fmt"
	"time"

	"github.com/trit-iot/trit/api"
)

// The abort criterion has one owner: AbortStatus evaluates it, checkAbort
// acts on that evaluation, and the console shows the same evaluation
// rather than recounting. Two counts could disagree (the console once
// matched a device state's name against the criterion, the engine its
// failure kind), and then the page would say "not met" for a rollout the
// engine had stopped.

// AbortStatus is where a rollout stands against its abort criterion
// (api.AbortPolicy), as the engine decides it.
//
// Invariants:
//   - Executed counts the devices whose current attempt has finished
//     (api.DeviceState.Finished), Failed those of them that did not
//     succeed in the way Policy.On names (failureKind; FailureAny: any).
//   - The criterion is checked only once Executed reaches Need, the
//     policy's MinExecuted and at least one.
//   - Met is Checked and Pct above Policy.ThresholdPercent: exactly when
//     Step aborts a running rollout.
type AbortStatus struct {
	Policy   api.AbortPolicy
	Need     int     // finished devices needed before the criterion is checked
	Executed int     // devices finished
	Failed   int     // of those, failed in the way Policy.On names
	Pct      float64 // Failed as a percentage of Executed (0 when none finished)
	Checked  bool    // Executed has reached Need
	Met      bool    // checked and over the threshold: the rollout aborts
}

// Enabled reports whether the rollout has an abort criterion at all.
func (a AbortStatus) Enabled() bool { return a.Policy.On != "" }

// AbortStatus evaluates the rollout's abort criterion against its devices
// now. It changes nothing; Step acts on it.
func (r *Rollout) AbortStatus() AbortStatus {
	a := r.Abort
	st := AbortStatus{Policy: a, Need: max(a.MinExecuted, 1)}
	if a.On == "" {
		return st
	}
	for _, id := range r.Order {
		d := r.Devices[id]
		if !d.State.Finished() {
			continue
		}
		st.Executed++
		if d.State != api.DeviceSucceeded && (a.On == api.FailureAny || failureKind(d.State) == a.On) {
			st.Failed++
		}
	}
	if st.Executed > 0 {
		st.Pct = 100 * float64(st.Failed) / float64(st.Executed)
	}
	st.Checked = st.Executed >= st.Need
	st.Met = st.Checked && st.Pct > a.ThresholdPercent
	return st
}

// checkAbort applies the abort criterion and reports whether the rollout is
// (now) aborted.
func (r *Rollout) checkAbort(now time.Time) bool {
	if r.State == api.RolloutAborted {
		return true
	}
	st := r.AbortStatus()
	if !st.Met {
		return false
	}
	a := st.Policy
	r.State = api.RolloutAborted
	r.Reason = fmt.Sprintf("abort criterion met: %d of %d finished devices %s (%.1f%% > %g%%)", st.Failed, st.Executed, a.On, st.Pct, a.ThresholdPercent)
	r.Updated, r.Finished, r.changed = now, now, true
	return true
}
