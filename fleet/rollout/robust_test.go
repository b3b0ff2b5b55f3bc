package rollout

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/wire"
)

// The robustness test, in the style of etcd's: a random but reproducible
// run of one rollout against a simulated fleet whose network loses,
// repeats and reorders messages both ways, whose devices refuse commands
// they have seen a higher sequence than, whose sequence counters fall
// behind (a restored database), whose operators pause, resume, approve
// and abort, and whose leader changes (the rollout resumes from its
// persisted JSON). After every action the invariants of doc.go are
// checked; at the end the faults stop and the rollout must end.
//
// TRIT_ROBUST_SEED=n replays one seed (a failure prints its own);
// TRIT_ROBUST_RUNS=n runs more seeds than the default (-short: fewer).

func TestRobustInterleavings(t *testing.T) {
	runs := 400
	if testing.Short() {
		runs = 50
	}
	if s := os.Getenv("TRIT_ROBUST_RUNS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("TRIT_ROBUST_RUNS=%q: %v", s, err)
		}
		runs = n
	}
	first := uint64(time.Now().UnixNano())
	if s := os.Getenv("TRIT_ROBUST_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("TRIT_ROBUST_SEED=%q: %v", s, err)
		}
		first, runs = n, 1
	}
	for i := range runs {
		seed := first + uint64(i)
		if err := runRobust(seed); err != nil {
			t.Fatalf("seed %d (replay: TRIT_ROBUST_SEED=%d go test -run TestRobustInterleavings ./fleet/rollout):\n%v", seed, seed, err)
		}
	}
}

// sim is the simulated fleet around one rollout.
type sim struct {
	rng *rand.Rand
	r   *Rollout
	now time.Time
	ids []string
	log []string // the actions so far, for a failure's report

	counter map[string]uint64 // the fleet's persistent per-device counter (nextSeq)
	highest map[string]uint64 // the highest sequence each device has accepted
	down    []command         // commands on their way to the devices
	up      []uplink          // device messages on their way to the fleet
	windows map[string]uint64 // shadow windows a device has scored for its command
	late    map[string]bool   // devices whose success came after they timed out
	bad     map[string]bool   // devices whose current command's model reports figures that fail the gates
	near    map[string]bool   // devices whose current command's model reports figures near the gates' limits (undecided)

	maxRetries int
	original   []string // the devices the rollout was created with
}

type command struct {
	device string
	seq    uint64
	shadow bool
}

// uplink is a job event (rep), a shadow report or gate telemetry.
type uplink struct {
	device  string
	rep     *Report
	highest uint64 // of a superseded refusal: the device's highest sequence
	shadow  *wire.ShadowReport
	telem   *wire.Telemetry
}

// newRobust builds a random rollout: pace, abort policy, retries, and
// perhaps a shadow policy, a confidence gate and the two-person rule.
func newRobust(rng *rand.Rand) (*Rollout, error) {
	n := 1 + rng.IntN(10)
	var pace api.Pace
	switch rng.IntN(3) {
	case 0:
		k := 1 + rng.IntN(3)
		for i := range k {
			if rng.IntN(2) == 0 {
				pace.Phases = append(pace.Phases, api.Phase{Count: 1 + i + rng.IntN(2)})
			} else {
				pace.Phases = append(pace.Phases, api.Phase{Percent: float64(25 * (i + 1 + rng.IntN(2)))})
			}
		}
		pace.Phases = append(pace.Phases, api.Phase{Percent: 100})
	case 1:
		pace.Rate = &api.Rate{BasePerMinute: 0.5 + 2*rng.Float64(), Factor: 1 + rng.Float64(), IncreaseAfter: 1 + rng.IntN(3)}
	}
	var abort api.AbortPolicy
	if rng.IntN(3) > 0 {
		abort = api.AbortPolicy{On: []string{api.FailureFailed, api.FailureRejected, api.FailureTimedOut, api.FailureAny}[rng.IntN(4)],
			ThresholdPercent: float64(rng.IntN(80)), MinExecuted: rng.IntN(4)}
	}
	r, err := New("r1", hashB, deviceIDs(n), pace, abort, t0)
	if err != nil {
		return nil, err
	}
	if rng.IntN(2) == 0 {
		retries := map[string]int{}
		for _, k := range []string{api.FailureFailed, api.FailureRejected, api.FailureTimedOut, api.FailureAny} {
			if rng.IntN(2) == 0 {
				retries[k] = rng.IntN(3)
			}
		}
		if err := r.SetRetries(retries); err != nil {
			return nil, err
		}
	}
	if err := r.SetTimeout(time.Duration(1+rng.IntN(10)) * time.Minute); err != nil {
		return nil, err
	}
	if pace.Rate == nil && rng.IntN(3) == 0 {
		p := &api.ShadowPolicy{MinWindows: uint64(10 + rng.IntN(40)), MinAgreement: 0.8}
		if len(pace.Phases) > 1 {
			p.Phases = 1 + rng.IntN(len(pace.Phases)-1)
		}
		if err := r.SetShadow(p); err != nil {
			return nil, err
		}
	}
	if rng.IntN(2) == 0 { // as the service sets it on a calibrated model's rollout
		g := api.DefaultConfidenceGate
		g.MinWindows = uint64(10 + rng.IntN(40))
		r.Gate = &g
	}
	if rng.IntN(3) == 0 { // the two-person rule, as the service sets it
		r.CreatedBy = "alice"
		r.Approval = &api.Approval{After: r.ShadowCount(), Promotion: r.Shadow != nil && rng.IntN(2) == 0}
	}
	return r, nil
}

func runRobust(seed uint64) (err error) {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	r, err := newRobust(rng)
	if err != nil {
		return fmt.Errorf("a random rollout did not pass New: %v", err)
	}
	s := &sim{rng: rng, r: r, now: t0, ids: slices.Clone(r.Order), counter: map[string]uint64{}, highest: map[string]uint64{},
		windows: map[string]uint64{}, late: map[string]bool{}, bad: map[string]bool{}, near: map[string]bool{}, original: slices.Clone(r.Order)}
	for _, n := range r.Retries {
		s.maxRetries = max(s.maxRetries, n)
	}
	defer func() {
		if err != nil {
			tail := s.log[max(0, len(s.log)-25):]
			js, _ := json.MarshalIndent(s.r.Rollout, "", "  ")
			err = fmt.Errorf("%v\nlast actions:\n  %s\nrollout: %s", err, strings.Join(tail, "\n  "), js)
		}
	}()
	for range 150 + rng.IntN(250) {
		if err := s.chaos(); err != nil {
			return err
		}
		if err := s.check(); err != nil {
			return err
		}
	}
	return s.calm()
}

// chaos takes one random action.
func (s *sim) chaos() error {
	switch k := s.rng.IntN(100); {
	case k < 20:
		return s.step(time.Duration(s.rng.IntN(60)) * time.Second)
	case k < 24:
		return s.step(s.r.Timeout + time.Duration(s.rng.IntN(60))*time.Second)
	case k < 44:
		s.deliverDown(s.rng.IntN(4) == 0)
	case k < 70:
		return s.deliverUp(s.rng.IntN(4) == 0)
	case k < 74: // lose a message
		if len(s.up) > 0 && s.rng.IntN(2) == 0 {
			s.up = slices.Delete(s.up, 0, 1)
		} else if len(s.down) > 0 {
			s.down = slices.Delete(s.down, 0, 1)
		}
		s.logf("lose a message")
	case k < 86:
		s.deviceReports()
	case k < 88: // a restored database: the fleet's counter falls behind
		id := s.ids[s.rng.IntN(len(s.ids))]
		s.counter[id] -= min(s.counter[id], uint64(1+s.rng.IntN(3)))
		s.logf("counter of %s falls back to %d", id, s.counter[id])
	case k < 91:
		return s.failover()
	case k < 93:
		err := s.r.Pause("robust", s.now)
		s.logf("pause: %v", err)
	case k < 96:
		err := s.r.Resume(s.now)
		s.logf("resume: %v", err)
	case k < 98:
		by := []string{"alice", "bob", ""}[s.rng.IntN(3)]
		err := s.r.Approve(by, s.rng.IntN(4) == 0, s.now)
		s.logf("approve by %q: %v", by, err)
	default:
		if s.rng.IntN(4) == 0 {
			err := s.r.AbortNow("robust", s.now)
			s.logf("abort now: %v", err)
		}
	}
	return nil
}

func (s *sim) logf(format string, args ...any) {
	s.log = append(s.log, fmt.Sprintf("%s ", s.now.Sub(t0))+fmt.Sprintf(format, args...))
}

// nextSeq is the fleet's counter: the service's Device.LastSeq.
func (s *sim) nextSeq(calls *[]command) func(string) uint64 {
	return func(id string) uint64 {
		s.counter[id]++
		*calls = append(*calls, command{device: id, seq: s.counter[id]})
		return s.counter[id]
	}
}

// step advances the clock by d and steps the rollout, checking what Step
// alone promises.
func (s *sim) step(d time.Duration) error {
	s.now = s.now.Add(d)
	before := s.snapshot()
	wasDone, prev := s.r.State.Done(), s.r.State
	var calls []command
	ns := s.r.Step(s.now, s.nextSeq(&calls))
	s.logf("step +%v: %d notified, %s", d, len(ns), s.r.State)
	if wasDone && (len(ns) > 0 || !reflect.DeepEqual(before, s.snapshot())) {
		return fmt.Errorf("a %s rollout changed or notified %v on Step", prev, ns)
	}
	if len(calls) != len(ns) {
		return fmt.Errorf("Step took %d sequences for %d notifications", len(calls), len(ns))
	}
	seen := map[string]bool{}
	retried := false // a retry takes a device out of the abort criterion's count
	for i, n := range ns {
		if calls[i].device != n.Device || calls[i].seq != n.Seq {
			return fmt.Errorf("notification %d: %s seq %d, the counter gave %s seq %d", i, n.Device, n.Seq, calls[i].device, calls[i].seq)
		}
		if seen[n.Device] {
			return fmt.Errorf("%s notified twice in one Step", n.Device)
		}
		seen[n.Device] = true
		was, d := before.Devices[n.Device], s.r.Devices[n.Device]
		promoted := d.Stage == api.StagePromote && was.Stage == api.StageShadow
		// Not in progress, unless it timed out in this Step (a retry), or
		// it was shadowing and passed the gates in this Step (a promotion).
		if was.State.InProgress() && !was.Resend && s.now.Sub(was.NotifiedAt) <= s.r.Timeout && !(promoted && was.State == api.DeviceShadowing) {
			return fmt.Errorf("%s notified again in the middle of its attempt (was %s)", n.Device, was.State)
		}
		if d.State != api.DeviceNotified || d.Seq != n.Seq || n.Shadow != (d.Stage == api.StageShadow) {
			return fmt.Errorf("%s notified with seq %d shadow %v, recorded as %s seq %d stage %q", n.Device, n.Seq, n.Shadow, d.State, d.Seq, d.Stage)
		}
		if was.State.Finished() || was.State.InProgress() && !was.Resend {
			retried = true
		}
		if was.Resend && d.Attempts != was.Attempts {
			return fmt.Errorf("%s sent again after a superseded refusal used an attempt (%d → %d)", n.Device, was.Attempts, d.Attempts)
		}
		if was.State == api.DevicePending {
			if err := s.checkPhaseStart(n.Device); err != nil {
				return err
			}
		}
		if promoted {
			if err := s.checkPromotion(before, n.Device); err != nil {
				return err
			}
		}
		s.down = append(s.down, command{device: n.Device, seq: n.Seq, shadow: n.Shadow})
		delete(s.late, n.Device)
	}
	if len(ns) > 0 && s.r.State.Done() && s.r.State != api.RolloutCompleted && s.r.State != api.RolloutFailed {
		return fmt.Errorf("Step notified %d devices and %s the rollout", len(ns), s.r.State)
	}
	if !s.r.State.Done() {
		if st := s.r.AbortStatus(); st.Met && !retried {
			return fmt.Errorf("Step left the rollout %s with its abort criterion met (%+v)", s.r.State, st)
		}
		for _, id := range s.r.Order {
			d := s.r.Devices[id]
			if d.State.InProgress() && !d.Resend && s.now.Sub(d.NotifiedAt) > s.r.Timeout {
				return fmt.Errorf("%s is %s for %v after Step, beyond the %v timeout", id, d.State, s.now.Sub(d.NotifiedAt), s.r.Timeout)
			}
		}
	}
	if !wasDone && (s.r.State == api.RolloutCompleted || s.r.State == api.RolloutFailed) {
		if err := s.checkOutcome(); err != nil {
			return err
		}
	}
	if !wasDone && s.r.State == api.RolloutAborted && !s.r.GateFailed && !strings.HasPrefix(s.r.Reason, "shadow ") && !s.r.AbortStatus().Met {
		return fmt.Errorf("Step aborted the rollout (%s) while AbortStatus says not met", s.r.Reason)
	}
	return nil
}

// checkOutcome checks a rollout Step has just ended by itself. Reports
// that come later are still recorded (a late success is a device that
// runs the bundle), so this holds as of the end, not after it.
func (s *sim) checkOutcome() error {
	r := s.r
	for _, id := range r.Order {
		if d := r.Devices[id]; !s.finishedForGood(d) {
			return fmt.Errorf("%s with %s at %s (attempt %d)", r.State, id, d.State, d.Attempts)
		}
	}
	if (r.State == api.RolloutCompleted) != (r.Successes > 0) {
		return fmt.Errorf("%s with %d successes", r.State, r.Successes)
	}
	if miss := len(r.Order) - r.Successes; miss > 0 && r.State == api.RolloutCompleted && !strings.HasPrefix(r.Reason, fmt.Sprintf("%d of %d devices did not succeed", miss, len(r.Order))) {
		return fmt.Errorf("completed with %d not succeeded: reason %q", miss, r.Reason)
	}
	return nil
}

// checkPhaseStart: a device first notified now is in a phase all of whose
// earlier phases' devices have finished for good.
func (s *sim) checkPhaseStart(id string) error {
	pos := slices.Index(s.r.Order, id)
	for i := range s.r.Pace.Phases {
		if i == 0 || pos < s.r.phaseTarget(i-1) {
			continue
		}
		for _, e := range s.r.Order[:s.r.phaseTarget(i-1)] {
			if d := s.r.Devices[e]; !s.finishedForGood(d) {
				return fmt.Errorf("%s (phase %d) notified while %s of an earlier phase is %s (attempt %d)", id, i+1, e, d.State, d.Attempts)
			}
		}
	}
	return nil
}

// checkPromotion: a shadowing device is promoted only once every device
// of its phase notified so far has passed the gates (and is promoted with
// it) or finished for good.
func (s *sim) checkPromotion(before api.Rollout, id string) error {
	lo, hi := s.phaseOf(id)
	for _, e := range s.r.Order[lo:hi] {
		d := s.r.Devices[e]
		if before.Devices[e].State == api.DevicePending || d.Stage != api.StageShadow {
			continue
		}
		if !s.finishedForGood(d) {
			return fmt.Errorf("%s promoted while %s of its phase is %s (attempt %d)", id, e, d.State, d.Attempts)
		}
	}
	return nil
}

// phaseOf returns the positions in Order of device id's phase: [lo, hi).
func (s *sim) phaseOf(id string) (lo, hi int) {
	pos := slices.Index(s.r.Order, id)
	for i := range s.r.Pace.Phases {
		hi = s.r.phaseTarget(i)
		if pos < hi {
			return lo, hi
		}
		lo = hi
	}
	return 0, len(s.r.Order)
}

// finishedForGood is the test's own reading of "finished for good":
// succeeded, or failed with no retry left.
func (s *sim) finishedForGood(d *api.DeviceProgress) bool {
	if d.State == api.DeviceSucceeded {
		return true
	}
	if !d.State.Finished() {
		return false
	}
	n, ok := s.r.Retries[failureKindOf(d.State)]
	if !ok {
		n = s.r.Retries[api.FailureAny]
	}
	return d.Attempts > n
}

// failureKindOf restates the engine's failureKind on purpose: the model
// the invariants are checked against must not share the code it checks.
func failureKindOf(st api.DeviceState) string {
	switch st {
	case api.DeviceFailed:
		return api.FailureFailed
	case api.DeviceRejected:
		return api.FailureRejected
	case api.DeviceTimedOut:
		return api.FailureTimedOut
	}
	return ""
}

// deliverDown hands a random command to its device (dup: and keeps it in
// flight, to come again). A device refuses one whose sequence is not above
// the highest it accepted, reporting that sequence; it answers another
// with progress and, mostly, a final state, or not at all.
func (s *sim) deliverDown(dup bool) {
	if len(s.down) == 0 {
		return
	}
	i := s.rng.IntN(len(s.down))
	c := s.down[i]
	if !dup {
		s.down = slices.Delete(s.down, i, i+1)
	}
	s.logf("command %s seq %d reaches the device (highest %d)", c.device, c.seq, s.highest[c.device])
	if c.seq <= s.highest[c.device] {
		s.up = append(s.up, uplink{device: c.device, rep: &Report{Device: c.device, Seq: c.seq, State: api.DeviceRejected,
			Reason: "superseded"}, highest: s.highest[c.device]})
		return
	}
	s.highest[c.device] = c.seq
	s.windows[c.device] = 0
	s.bad[c.device] = s.rng.IntN(4) == 0
	s.near[c.device] = !s.bad[c.device] && s.rng.IntN(3) == 0
	for _, st := range []api.DeviceState{api.DeviceQueued, api.DeviceDownloading, api.DeviceInstalling} {
		if s.rng.IntN(3) > 0 {
			s.up = append(s.up, uplink{device: c.device, rep: &Report{Device: c.device, Seq: c.seq, State: st}})
		}
	}
	final := []api.DeviceState{api.DeviceSucceeded, api.DeviceSucceeded, api.DeviceSucceeded, api.DeviceFailed, api.DeviceRejected}
	if s.rng.IntN(8) > 0 {
		s.up = append(s.up, uplink{device: c.device, rep: &Report{Device: c.device, Seq: c.seq, State: final[s.rng.IntN(len(final))]}})
	}
}

// deliverUp hands a random device message to the rollout, as the
// service's intake does (fleet/intake.go), and checks what Apply promises.
func (s *sim) deliverUp(dup bool) error {
	if len(s.up) == 0 {
		return nil
	}
	i := s.rng.IntN(len(s.up))
	u := s.up[i]
	if !dup {
		s.up = slices.Delete(s.up, i, i+1)
	}
	before := s.snapshot()
	var applied bool
	switch {
	case u.rep != nil:
		rep := *u.rep
		if highest := u.highest; highest > 0 {
			// The service moves its counter past the device's highest
			// sequence, then asks for the command again.
			s.counter[u.device] = max(s.counter[u.device], highest)
			rep.Resend = highest >= rep.Seq && s.counter[u.device] >= highest
		}
		applied = s.r.Apply(rep, s.now)
		s.logf("report %s seq %d %s resend=%v: %v", rep.Device, rep.Seq, rep.State, rep.Resend, applied)
		d, was := s.r.Devices[u.device], before.Devices[u.device]
		if applied && rep.Seq != was.Seq {
			return fmt.Errorf("a report of seq %d applied to %s, whose command is seq %d", rep.Seq, u.device, was.Seq)
		}
		if applied && d.State.Finished() && was.State.Finished() && was.State != api.DeviceTimedOut {
			return fmt.Errorf("a report changed %s's finished attempt (%s → %s)", u.device, was.State, d.State)
		}
		if applied && rep.State == api.DeviceSucceeded && was.State == api.DeviceTimedOut {
			s.late[u.device] = true
		}
		if d.Resend && !was.Resend && (d.Attempts != was.Attempts || d.State.Finished()) {
			return fmt.Errorf("a superseded refusal counted as a failure of %s (%s, attempts %d → %d)", u.device, d.State, was.Attempts, d.Attempts)
		}
	case u.shadow != nil:
		applied = s.r.ApplyShadow(u.device, u.shadow, s.now)
		s.logf("shadow report %s seq %d %d/%d windows: %v", u.device, u.shadow.Seq, u.shadow.Agree, u.shadow.Windows, applied)
	case u.telem != nil:
		applied = s.r.ApplyTelemetry(u.device, u.telem, s.now)
		s.logf("telemetry %s %d windows: %v", u.device, u.telem.Confidence.Histogram[9], applied)
	}
	if !applied && !reflect.DeepEqual(before, s.snapshot()) {
		return fmt.Errorf("a message to %s was not applied but changed the rollout", u.device)
	}
	return nil
}

// deviceReports makes a random device that runs (or shadows) the bundle
// report on its windows: a shadow report of its command, or telemetry
// with the bundle's confidence; good figures or, from a device that drew
// a bad model, bad ones; from one that drew a model near the limits,
// figures within chance of them, which leave the gates undecided until
// the windows or the time decide.
func (s *sim) deviceReports() {
	var running []string
	for _, id := range s.ids {
		if s.highest[id] > 0 {
			running = append(running, id)
		}
	}
	if len(running) == 0 {
		return
	}
	id := running[s.rng.IntN(len(running))]
	seq := s.highest[id]
	n := uint64(10 + s.rng.IntN(30))
	good := !s.bad[id]
	if s.r.Shadow != nil {
		s.windows[id] += n
		w := s.windows[id]
		agree := w
		switch {
		case !good:
			agree = w / 2
		case s.near[id]:
			agree = w * 82 / 100 // MinAgreement 0.8
		}
		rep := shadowReport(s.r, Notification{Seq: seq}, w, agree)
		rep.LowMargin = 0
		s.up = append(s.up, uplink{device: id, shadow: rep})
		return
	}
	c := &wire.ConfidenceReport{Histogram: make([]uint64, wire.ConfidenceBins)}
	c.Histogram[9] = n
	switch {
	case !good:
		c.Unknown = n
	case s.near[id]:
		c.Unknown = n * 46 / 100 // against no active model: FirstUnknownLimit, 50%
	}
	s.up = append(s.up, uplink{device: id, telem: &wire.Telemetry{Device: id, Model: &wire.ModelRef{Bundle: hashB}, Confidence: c}})
}

// failover is a leader change: the next leader reads the rollout the last
// one persisted. It must decide exactly as the old one would have: both
// are stepped with the same clock and counters and must agree.
func (s *sim) failover() error {
	raw, err := json.Marshal(s.r)
	if err != nil {
		return err
	}
	var next Rollout
	if err := json.Unmarshal(raw, &next); err != nil {
		return err
	}
	at := s.now.Add(time.Duration(s.rng.IntN(90)) * time.Second)
	counter := func(c map[string]uint64) func(string) uint64 {
		return func(id string) uint64 { c[id]++; return c[id] }
	}
	a, b := s.r.Step(at, counter(cloneMap(s.counter))), next.Step(at, counter(cloneMap(s.counter)))
	ja, _ := json.Marshal(s.r)
	jb, _ := json.Marshal(&next)
	if !reflect.DeepEqual(a, b) || string(ja) != string(jb) {
		return fmt.Errorf("the next leader decided otherwise than the last would have: %v, %v\n%s\n%s", b, a, jb, ja)
	}
	// Those steps were a probe: the run goes on from the persisted state.
	next = Rollout{}
	if err := json.Unmarshal(raw, &next); err != nil {
		return err
	}
	s.r = &next
	s.logf("failover: the next leader resumes the persisted rollout")
	return nil
}

func cloneMap(m map[string]uint64) map[string]uint64 {
	out := make(map[string]uint64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// snapshot is a deep copy of the rollout's persisted state, of what its
// methods change in place (a JSON round trip would be exact too, but
// takes most of the test's time).
func (s *sim) snapshot() api.Rollout {
	out := s.r.Rollout
	out.Order = slices.Clone(out.Order)
	out.Devices = make(map[string]*api.DeviceProgress, len(s.r.Devices))
	for id, d := range s.r.Devices {
		c := *d
		if d.Verify != nil {
			v := *d.Verify
			c.Verify = &v
		}
		out.Devices[id] = &c
	}
	if a := out.Approval; a != nil {
		c := *a
		out.Approval = &c
	}
	return out
}

// check verifies the invariants that hold between any two actions.
func (s *sim) check() error {
	r := s.r
	if len(r.Order) != len(s.original) || !slices.Equal(r.Order, s.original) || len(r.Devices) != len(r.Order) {
		return fmt.Errorf("the devices changed: order %v, %d devices", r.Order, len(r.Devices))
	}
	successes := 0
	for _, id := range r.Order {
		d := r.Devices[id]
		if d == nil {
			return fmt.Errorf("%s in Order has no progress", id)
		}
		if d.State == api.DeviceSucceeded {
			successes++
		}
		if d.Attempts > 1+s.maxRetries { // a promotion starts counting afresh
			return fmt.Errorf("%s made %d attempts, retries allow %d", id, d.Attempts, 1+s.maxRetries)
		}
		if d.Resend && d.State != api.DeviceNotified {
			return fmt.Errorf("%s waits to be sent again but is %s", id, d.State)
		}
		if d.Resends > maxResends {
			return fmt.Errorf("%s sent again %d times, at most %d", id, d.Resends, maxResends)
		}
		// A success after the device timed out is recorded without the
		// gate (doc.go: the known exception).
		if d.State == api.DeviceSucceeded && d.Stage == "" && r.Gated(id) && !s.late[id] && (d.Verify == nil || d.Verify.Windows < r.Gate.MinWindows) {
			return fmt.Errorf("canary %s succeeded without the confidence gate's %d windows (verify %+v)", id, r.Gate.MinWindows, d.Verify)
		}
		if d.Stage == api.StageShadow && (d.State == api.DeviceSucceeded) {
			return fmt.Errorf("%s succeeded in shadow mode", id)
		}
	}
	if successes != r.Successes {
		return fmt.Errorf("Successes %d, %d devices succeeded", r.Successes, successes)
	}
	if r.State.Done() == r.Finished.IsZero() {
		return fmt.Errorf("state %s, finished %v", r.State, r.Finished)
	}
	if a := r.Approval; a.Pending() {
		notified := 0
		for _, id := range r.Order {
			d := r.Devices[id]
			if d.State != api.DevicePending {
				notified++
			}
			if a.Promotion && d.Stage == api.StagePromote {
				return fmt.Errorf("%s promoted before the approval", id)
			}
		}
		if notified > a.After {
			return fmt.Errorf("%d devices notified before the approval, at most %d", notified, a.After)
		}
	}
	return nil
}

// calm stops the faults: the operators let the rollout go on, every
// message arrives, the devices answer; the rollout must then end.
func (s *sim) calm() error {
	s.logf("calm")
	if s.r.State == api.RolloutPaused {
		if err := s.r.Resume(s.now); err != nil {
			return err
		}
	}
	if s.r.Approval.Pending() && !s.r.State.Done() {
		if err := s.r.Approve("bob", false, s.now); err != nil {
			return err
		}
	}
	for round := range 200 {
		if s.r.State.Done() {
			return nil
		}
		d := time.Minute
		if round%3 == 2 {
			d = s.r.Timeout + time.Second
		}
		if err := s.step(d); err != nil {
			return err
		}
		for len(s.down) > 0 {
			s.deliverDown(false)
		}
		s.deviceReports()
		for len(s.up) > 0 {
			if err := s.deliverUp(false); err != nil {
				return err
			}
		}
		if err := s.check(); err != nil {
			return err
		}
	}
	return fmt.Errorf("the rollout is still %s after the faults stopped", s.r.State)
}
