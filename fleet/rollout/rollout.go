package rollout

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/trit-iot/trit/api"
)

// Rollout is the persistent state of one rollout (api.Rollout, the JSON the
// store and the API hold) with the logic that moves it on.
type Rollout struct {
	api.Rollout

	// changed is set by every change Step makes (not stored): the service
	// writes a rollout back only when a step changed it.
	changed bool
}

// Changed reports whether a change was made to r since it was read (by
// Step, Apply or any other method): the service writes a rollout back
// only then.
func (r *Rollout) Changed() bool { return r.changed }

// maxResends bounds how often one device is sent a command again after
// refusing it as superseded: once is enough when its reported sequence is
// believed; the bound stops a loop if it is not.
const maxResends = 3

// DefaultTimeout is the per-device timeout when a rollout gives none.
const DefaultTimeout = 10 * time.Minute

// New checks a rollout definition and returns it running, with every
// device pending, to be notified in the order given.
func New(id, bundle string, devices []string, pace api.Pace, abort api.AbortPolicy, now time.Time) (*Rollout, error) {
	r := &Rollout{Rollout: api.Rollout{ID: id, Bundle: bundle, Pace: pace, Abort: abort, State: api.RolloutRunning,
		Devices: make(map[string]*api.DeviceProgress, len(devices)), Started: now, Updated: now, Timeout: DefaultTimeout}}
	if id == "" || bundle == "" {
		return nil, fmt.Errorf("%w: a rollout needs an ID and a bundle", ErrInvalid)
	}
	if len(devices) == 0 {
		return nil, fmt.Errorf("%w: no target devices", ErrInvalid)
	}
	for _, d := range devices {
		if d == "" {
			return nil, fmt.Errorf("%w: empty device ID", ErrInvalid)
		}
		if r.Devices[d] != nil {
			return nil, fmt.Errorf("%w: device %q listed twice", ErrInvalid, d)
		}
		r.Devices[d] = &api.DeviceProgress{State: api.DevicePending}
		r.Order = append(r.Order, d)
	}
	if err := r.checkPolicy(); err != nil {
		return nil, err
	}
	return r, nil
}

// checkPolicy validates Pace, Abort, Timeout and Retries.
func (r *Rollout) checkPolicy() error {
	p := r.Pace
	if len(p.Phases) > 0 && p.Rate != nil {
		return fmt.Errorf("%w: give phases or a rate, not both", ErrInvalid)
	}
	// Counts must not shrink, nor percentages: that is a mistake on any
	// fleet. A percentage after a count may round below it on a small
	// fleet (5,50%,100% on 3 devices); phaseTarget lifts it.
	prevCount, prevPercent := 0, 0.0
	for i, ph := range p.Phases {
		if (ph.Percent > 0) == (ph.Count > 0) {
			return fmt.Errorf("%w: phase %d needs exactly one of percent and count", ErrInvalid, i+1)
		}
		if ph.Percent < 0 || ph.Percent > 100 || ph.Count < 0 || math.IsNaN(ph.Percent) {
			return fmt.Errorf("%w: phase %d: percent %g, count %d", ErrInvalid, i+1, ph.Percent, ph.Count)
		}
		if ph.Count > 0 && ph.Count < prevCount {
			return fmt.Errorf("%w: phase %d covers %d devices, fewer than the %d before it", ErrInvalid, i+1, ph.Count, prevCount)
		}
		if ph.Percent > 0 && ph.Percent < prevPercent {
			return fmt.Errorf("%w: phase %d covers %g%% of the devices, less than the %g%% before it", ErrInvalid, i+1, ph.Percent, prevPercent)
		}
		prevCount, prevPercent = max(prevCount, ph.Count), max(prevPercent, ph.Percent)
	}
	if rt := p.Rate; rt != nil {
		if !(rt.BasePerMinute > 0) || math.IsInf(rt.BasePerMinute, 0) || !(rt.Factor >= 1) || math.IsInf(rt.Factor, 0) || rt.IncreaseAfter < 1 {
			return fmt.Errorf("%w: rate needs base_per_minute > 0, factor >= 1 and increase_after >= 1", ErrInvalid)
		}
	}
	a := r.Abort
	switch a.On {
	case "", api.FailureFailed, api.FailureRejected, api.FailureTimedOut, api.FailureAny:
	default:
		return fmt.Errorf("%w: abort on %q, want failed, rejected, timed-out or any", ErrInvalid, a.On)
	}
	if a.ThresholdPercent < 0 || a.ThresholdPercent > 100 || math.IsNaN(a.ThresholdPercent) || a.MinExecuted < 0 {
		return fmt.Errorf("%w: abort threshold %g%% after %d", ErrInvalid, a.ThresholdPercent, a.MinExecuted)
	}
	if r.Timeout <= 0 {
		return fmt.Errorf("%w: per-device timeout %v", ErrInvalid, r.Timeout)
	}
	if err := checkShadow(r.Shadow, r); err != nil {
		return err
	}
	for k, n := range r.Retries {
		switch k {
		case api.FailureFailed, api.FailureRejected, api.FailureTimedOut, api.FailureAny:
		default:
			return fmt.Errorf("%w: retries for %q", ErrInvalid, k)
		}
		if n < 0 || n > 100 {
			return fmt.Errorf("%w: %d retries for %s", ErrInvalid, n, k)
		}
	}
	return nil
}

// SetShadow makes a new rollout shadow its candidate first (nil: not).
func (r *Rollout) SetShadow(p *api.ShadowPolicy) error {
	old := r.Shadow
	r.Shadow = p
	if err := r.checkPolicy(); err != nil {
		r.Shadow = old
		return err
	}
	return nil
}

// SetTimeout and SetRetries adjust a new rollout's policy before it starts.
func (r *Rollout) SetTimeout(d time.Duration) error {
	old := r.Timeout
	r.Timeout = d
	if err := r.checkPolicy(); err != nil {
		r.Timeout = old
		return err
	}
	return nil
}

// SetRetries sets how often a device is retried per failure kind.
func (r *Rollout) SetRetries(retries map[string]int) error {
	old := r.Retries
	r.Retries = retries
	if err := r.checkPolicy(); err != nil {
		r.Retries = old
		return err
	}
	return nil
}

// phaseTarget is the number of devices notified once phase i has started:
// its count, or its percentage of the devices rounded up, at most all of
// them, and never fewer than the phase before it covered (on 3 devices,
// 5,50%,100% covers 3, 3, 3: the 50% phase adds none).
func (r *Rollout) phaseTarget(i int) int {
	n, target := len(r.Order), 0
	for _, ph := range r.Pace.Phases[:i+1] {
		t := min(n, int(math.Ceil(ph.Percent*float64(n)/100-1e-9)))
		if ph.Count > 0 {
			t = min(ph.Count, n)
		}
		target = max(target, t)
	}
	return target
}

// Notification is a deployment command Step asks the service to send.
type Notification struct {
	Device string
	Seq    uint64
	Shadow bool // send the command in shadow mode
}

// Step advances the rollout to time now: it times out devices that took too
// long, retries or finishes them, applies the abort criterion, and returns
// the devices to notify now, each with the sequence number its command must
// carry, taken from nextSeq (the device's persistent, ever-growing counter).
// The caller persists the rollout after sending.
func (r *Rollout) Step(now time.Time, nextSeq func(device string) uint64) []Notification {
	if r.State.Done() {
		return nil
	}
	// The gates first: a device whose time is up with enough windows is
	// judged as counted (checkGates, checkVerify), not timed out.
	if r.checkGates(now) || r.checkVerify(now) {
		return nil
	}
	for _, id := range r.Order {
		d := r.Devices[id]
		if r.timedOut(d, now) {
			why := fmt.Sprintf("no result within %v", r.Timeout)
			if d.State == api.DeviceVerifying && d.Verify != nil && r.Gate != nil {
				why = fmt.Sprintf("confidence gate: %d of the %d windows it needs reported with the new model within %v", d.Verify.Windows, r.Gate.MinWindows, r.Timeout)
			}
			r.finish(d, api.DeviceTimedOut, why, now)
		}
	}
	if r.checkAbort(now) || r.State == api.RolloutPaused {
		return nil
	}
	var out []Notification
	// Retries first: a device that failed with retries left is sent the
	// command again, with a new sequence number; so is one that refused it
	// as superseded (not an attempt of its own).
	for _, id := range r.Order {
		d := r.Devices[id]
		switch {
		case d.Resend:
			d.Resend = false
			out = append(out, r.notify(id, d, nextSeq(id), now))
			d.Attempts-- // the same attempt, sent again
		case d.State.Finished() && d.State != api.DeviceSucceeded && d.Attempts <= r.retriesFor(d.State):
			out = append(out, r.notify(id, d, nextSeq(id), now))
		}
	}
	allowed := r.approvalCap(r.allowance(now))
	var promote []string
	if !(r.Approval.Pending() && r.Approval.Promotion) {
		promote = r.promotions(allowed)
	}
	for _, id := range promote {
		d := r.Devices[id]
		d.Stage, d.Attempts = api.StagePromote, 0
		out = append(out, r.notify(id, d, nextSeq(id), now))
	}
	notified := 0
	for _, id := range r.Order {
		if r.Devices[id].State != api.DevicePending {
			notified++
		}
	}
	for _, id := range r.Order {
		if notified >= allowed {
			break
		}
		if d := r.Devices[id]; d.State == api.DevicePending {
			out = append(out, r.notify(id, d, nextSeq(id), now))
			notified++
			if r.Pace.Rate != nil {
				r.RateCredit--
			}
		}
	}
	r.checkComplete(now)
	return out
}

func (r *Rollout) notify(id string, d *api.DeviceProgress, seq uint64, now time.Time) Notification {
	d.State, d.Seq = api.DeviceNotified, seq
	if d.Stage != api.StagePromote {
		d.Reason = "" // a promoted device keeps its gate verdict
	}
	d.Attempts++
	d.NotifiedAt, d.UpdatedAt = now, now
	r.Updated, r.changed = now, true
	if d.Stage == "" && r.Shadow != nil && slices.Index(r.Order[:r.ShadowCount()], id) >= 0 {
		d.Stage = api.StageShadow
	}
	return Notification{Device: id, Seq: d.Seq, Shadow: d.Stage == api.StageShadow}
}

// retriesFor returns the retries allowed after a failure of state s.
func (r *Rollout) retriesFor(s api.DeviceState) int {
	n := r.Retries[api.FailureAny]
	if k, ok := r.Retries[failureKind(s)]; ok {
		n = k
	}
	return n
}

func failureKind(s api.DeviceState) string {
	switch s {
	case api.DeviceFailed:
		return api.FailureFailed
	case api.DeviceRejected:
		return api.FailureRejected
	case api.DeviceTimedOut:
		return api.FailureTimedOut
	}
	return ""
}

// allowance is how many devices may have been notified by now.
func (r *Rollout) allowance(now time.Time) int {
	n := len(r.Order)
	switch {
	case len(r.Pace.Phases) > 0:
		allowed := 0
		for i, ph := range r.Pace.Phases {
			if !ph.StartAt.IsZero() && now.Before(ph.StartAt) {
				break
			}
			// Every device of the earlier phases must have finished (and not
			// be waiting for a retry) before this phase starts.
			if i > 0 && !r.finishedUpTo(allowed) {
				break
			}
			allowed = r.phaseTarget(i)
		}
		return allowed
	case r.Pace.Rate != nil:
		return min(n, r.rateAllowance(now))
	}
	return n
}

// finishedUpTo reports whether the first k devices in Order have finished
// for good: succeeded, or failed with no retry left.
func (r *Rollout) finishedUpTo(k int) bool {
	for _, id := range r.Order[:k] {
		d := r.Devices[id]
		if !d.State.Finished() || (d.State != api.DeviceSucceeded && d.Attempts <= r.retriesFor(d.State)) {
			return false
		}
	}
	return true
}

// rateAllowance accrues notification credit at the rate in effect,
// BasePerMinute·Factor^⌊successes/IncreaseAfter⌋, from the last step to now:
// a faster rate applies from when it was earned, never retroactively. The
// first minute's worth is granted at the start.
func (r *Rollout) rateAllowance(now time.Time) int {
	rt := r.Pace.Rate
	steps := min(r.Successes/rt.IncreaseAfter, 64)
	perMinute := rt.BasePerMinute * math.Pow(rt.Factor, float64(steps))
	if r.RateAt.IsZero() {
		r.RateCredit, r.RateAt, r.changed = math.Max(1, rt.BasePerMinute), now, true
	}
	if now.After(r.RateAt) {
		r.RateCredit += now.Sub(r.RateAt).Minutes() * perMinute
		r.RateAt, r.changed = now, true
	}
	sent := 0
	for _, id := range r.Order {
		if r.Devices[id].State != api.DevicePending {
			sent++
		}
	}
	r.RateCredit = math.Min(r.RateCredit, float64(len(r.Order)))
	return sent + int(math.Floor(r.RateCredit))
}

// checkComplete ends the rollout once every device has finished for good:
// completed if any device succeeded, failed if none did.
func (r *Rollout) checkComplete(now time.Time) {
	if r.State != api.RolloutRunning || !r.finishedUpTo(len(r.Order)) {
		return
	}
	r.State, r.Updated, r.Finished, r.changed = api.RolloutCompleted, now, now, true
	if n := len(r.Order) - r.Successes; n > 0 {
		r.Reason = fmt.Sprintf("%d of %d devices did not succeed (%s)", n, len(r.Order), r.failureSummary())
		if r.Successes == 0 {
			r.State = api.RolloutFailed
			r.Reason = fmt.Sprintf("no device succeeded: %s", r.failureSummary())
		}
	}
}

// failureSummary counts the devices that did not succeed by final state,
// e.g. "2 rejected, 1 timed-out".
func (r *Rollout) failureSummary() string {
	counts := r.Counts()
	var parts []string
	for _, s := range []api.DeviceState{api.DeviceFailed, api.DeviceRejected, api.DeviceTimedOut} {
		if counts[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[s], s))
		}
	}
	return strings.Join(parts, ", ")
}

func (r *Rollout) finish(d *api.DeviceProgress, s api.DeviceState, reason string, now time.Time) {
	if reason == "" && d.Stage == api.StagePromote {
		reason = d.Reason // a promoted device keeps its gate verdict
	}
	d.State, d.Reason, d.UpdatedAt = s, reason, now
	if s == api.DeviceSucceeded {
		r.Successes++
	}
	r.Updated, r.changed = now, true
}

// Report is a device's job event as the service received it.
type Report struct {
	Device string
	Seq    uint64
	State  api.DeviceState // one of Queued, Downloading, Installing, Succeeded, Failed, Rejected
	Reason string
	// Resend marks a Rejected report of a command the device refused as
	// superseded, when the fleet's counter for the device has since moved
	// above the device's highest sequence: the command is sent again.
	Resend bool
}

// Apply records a device's report. It returns false, changing nothing, for a
// device not in the rollout, a report for an older command (stale sequence),
// or a report about an attempt that has already finished (duplicates after a
// reconnect). Progress only moves forward within an attempt.
func (r *Rollout) Apply(rep Report, now time.Time) bool {
	d := r.Devices[rep.Device]
	if d == nil || rep.Seq != d.Seq || d.Seq == 0 || d.State.Finished() && d.State != api.DeviceTimedOut || d.Resend {
		return false // d.Resend: the command is being sent again; this one is done
	}
	if d.State == api.DeviceTimedOut && !rep.State.Finished() {
		return false // a late progress event does not revive a timed-out attempt
	}
	if d.State == api.DeviceShadowing || d.State == api.DeviceShadowPassed || d.State == api.DeviceVerifying {
		return false // the job ended; only its reports and gates count now
	}
	switch rep.State {
	case api.DeviceQueued, api.DeviceDownloading, api.DeviceInstalling:
		if rank(rep.State) <= rank(d.State) {
			return false
		}
		d.State, d.UpdatedAt = rep.State, now
		if rep.Reason != "" || d.Stage != api.StagePromote {
			d.Reason = rep.Reason // a promoted device keeps its gate verdict
		}
		r.Updated = now
		return true
	case api.DeviceSucceeded, api.DeviceFailed, api.DeviceRejected:
		if rep.State == api.DeviceRejected && rep.Resend && d.State != api.DeviceTimedOut && d.Resends < maxResends {
			d.State, d.Resend, d.Reason, d.UpdatedAt = api.DeviceNotified, true, rep.Reason+"; sending again with a higher sequence", now
			d.Resends++
			r.Updated = now
			return true
		}
		if rep.State == api.DeviceSucceeded && d.Stage == "" && d.State != api.DeviceTimedOut && r.Gated(rep.Device) {
			// Installed: the confidence gate judges it on what it reports
			// now (gate.go), within a new timeout.
			d.State, d.Reason, d.NotifiedAt, d.UpdatedAt = api.DeviceVerifying, "", now, now
			if d.Verify == nil {
				d.Verify = &api.VerifyReport{}
			}
			r.Updated = now
			return true
		}
		if rep.State == api.DeviceSucceeded && d.Stage == api.StageShadow {
			// The candidate is stored and scored: its gates decide what
			// comes next, within a new timeout.
			d.State, d.Reason, d.NotifiedAt, d.UpdatedAt = api.DeviceShadowing, "", now, now
			r.Updated = now
			return true
		}
		if d.State == api.DeviceTimedOut && rep.State != api.DeviceSucceeded {
			// Already counted as a failure; keep the first verdict's kind.
			d.Reason = rep.Reason
			return true
		}
		r.finish(d, rep.State, rep.Reason, now)
		return true
	}
	return false
}

func rank(s api.DeviceState) int {
	switch s {
	case api.DeviceNotified:
		return 1
	case api.DeviceQueued:
		return 2
	case api.DeviceDownloading:
		return 3
	case api.DeviceInstalling:
		return 4
	}
	return 0
}

// Pause stops notifying devices; in-progress devices still report.
func (r *Rollout) Pause(reason string, now time.Time) error {
	if r.State != api.RolloutRunning {
		return fmt.Errorf("%w: cannot pause a %s rollout", ErrInvalid, r.State)
	}
	r.State, r.Reason, r.Updated = api.RolloutPaused, reason, now
	return nil
}

// Resume continues a paused rollout.
func (r *Rollout) Resume(now time.Time) error {
	if r.State != api.RolloutPaused {
		return fmt.Errorf("%w: cannot resume a %s rollout", ErrInvalid, r.State)
	}
	r.State, r.Reason, r.Updated = api.RolloutRunning, "", now
	return nil
}

// AbortNow stops the rollout for good at the operator's request.
func (r *Rollout) AbortNow(reason string, now time.Time) error {
	if r.State.Done() {
		return fmt.Errorf("%w: the rollout is already %s", ErrInvalid, r.State)
	}
	r.State, r.Reason, r.Updated, r.Finished = api.RolloutAborted, reason, now, now
	return nil
}

// Counts returns the number of devices in each state.
func (r *Rollout) Counts() map[api.DeviceState]int {
	out := map[api.DeviceState]int{}
	for _, d := range r.Devices {
		out[d.State]++
	}
	return out
}

// Failing returns the devices whose latest attempt failed, sorted by ID.
func (r *Rollout) Failing() []string {
	var out []string
	for id, d := range r.Devices {
		if d.State.Finished() && d.State != api.DeviceSucceeded {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}

// PhaseTarget is the number of devices notified once phase i of the
// rollout's phases has started (the web console draws phases with it).
func (r *Rollout) PhaseTarget(i int) int { return r.phaseTarget(i) }

// timedOut reports whether device d has been in progress for longer than
// the rollout's timeout (a device waiting to be sent again is not).
func (r *Rollout) timedOut(d *api.DeviceProgress, now time.Time) bool {
	return d.State.InProgress() && !d.Resend && now.Sub(d.NotifiedAt) > r.Timeout
}
