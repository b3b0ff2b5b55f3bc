package fleet

import (
	"crypto/ed25519"
	"errors"
	"io"
	"log/slog"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet/fault"
	"github.com/trit-iot/trit/fleet/fleettest"
	"github.com/trit-iot/trit/fleet/inventory"
	"github.com/trit-iot/trit/fleet/rollout"
	"github.com/trit-iot/trit/inference/bundle"
	"github.com/trit-iot/trit/store"
	"github.com/trit-iot/trit/wire"
)

// recorder is a fake Publisher that keeps what was published.
type recorder struct {
	mu   sync.Mutex
	msgs []published
	fail error
}

type published struct {
	topic    string
	retained bool
	payload  []byte
}

// t0 is the tests' start of time.
var t0 = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

func (r *recorder) Publish(topic string, _ byte, retained bool, payload []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail != nil {
		return r.fail
	}
	r.msgs = append(r.msgs, published{topic, retained, append([]byte(nil), payload...)})
	return nil
}

// take returns and forgets the messages published on topics containing sub.
func (r *recorder) take(sub string) []published {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out, keep []published
	for _, m := range r.msgs {
		if strings.Contains(m.topic, sub) {
			out = append(out, m)
		} else {
			keep = append(keep, m)
		}
	}
	r.msgs = keep
	return out
}

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

type fixture struct {
	svc     *Service
	pub     *recorder
	clk     *clock
	db      store.Database
	release ed25519.PrivateKey
	cmdKeys *wire.KeySet
}

func newFixture(t testing.TB, tweak ...func(*Options)) *fixture {
	t.Helper()
	return newFixtureOn(t, fleettest.OpenStore(t), tweak...)
}

// newFixtureOn is newFixture on the given store.
func newFixtureOn(t testing.TB, db store.Database, tweak ...func(*Options)) *fixture {
	t.Helper()
	release, cmd := fleettest.Key(1), fleettest.Key(2)
	ks, err := bundle.NewKeySet(release.Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	cmdKeys, err := wire.NewKeySet(cmd.Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{pub: &recorder{}, clk: &clock{t0}, db: db, release: release, cmdKeys: cmdKeys}
	reg := NewRegistry(f.db, ks, 0, f.clk.now)
	opt := &Options{Now: f.clk.now, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for _, tw := range tweak {
		tw(opt)
	}
	f.svc, err = NewService(f.db, reg, "f", f.pub, cmd, opt)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) addBundle(t *testing.T, release uint64) string {
	t.Helper()
	info, err := f.svc.Registry().Add(fleettest.SignedBundle(t, "vib", release, f.release))
	if err != nil {
		t.Fatal(err)
	}
	return info.Hash
}

// publish signs raw with the fixture's release key and adds it to the
// registry, as an operator publishing a release does; it returns the
// registry's record and the signed bundle.
func (f *fixture) publish(t *testing.T, raw []byte) (*api.BundleInfo, []byte) {
	t.Helper()
	signed, err := bundle.Sign(raw, f.release)
	if err != nil {
		t.Fatal(err)
	}
	info, err := f.svc.Registry().Add(signed)
	if err != nil {
		t.Fatal(err)
	}
	return info, signed
}

func (f *fixture) online(t *testing.T, id string, labels map[string]string) {
	t.Helper()
	f.state(t, &wire.State{Device: id, Session: 1, Online: true, Labels: labels, Health: "ok"})
}

// running reports device id online, running bundle hash of model vib.
func (f *fixture) running(t *testing.T, id, hash string) {
	t.Helper()
	f.state(t, &wire.State{Device: id, Session: 1, Online: true, Health: "ok", Model: &wire.ModelRef{ID: "vib", Release: 1, Bundle: hash, Install: "committed"}})
}

// state delivers a device state and handles it.
func (f *fixture) state(t *testing.T, st *wire.State) {
	t.Helper()
	raw, err := st.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	f.svc.Deliver(f.svc.Topics().State(st.Device), raw)
	f.svc.Drain()
}

// commands returns the deployment commands published since the last call,
// verified as a device would verify them.
func (f *fixture) commands(t *testing.T) []*wire.Command {
	t.Helper()
	var out []*wire.Command
	for _, m := range f.pub.take("/desired") {
		if !m.retained {
			t.Errorf("command on %s not retained", m.topic)
		}
		tp, err := wire.ParseTopic(m.topic)
		if err != nil {
			t.Fatal(err)
		}
		c, err := wire.VerifyCommand(m.payload, f.cmdKeys, wire.Target{Fleet: "f", Device: tp.Device}, f.clk.t)
		if err != nil {
			t.Fatalf("command for %s does not verify: %v", tp.Device, err)
		}
		out = append(out, c)
	}
	return out
}

func (f *fixture) report(t *testing.T, c *wire.Command, state wire.JobState) {
	t.Helper()
	ev := &wire.Event{Device: c.Device, Rollout: c.Rollout, Seq: c.Seq, State: state, Bundle: c.Bundle, Time: f.clk.t.UnixMilli()}
	if state == wire.JobFailed {
		ev.Code, ev.Reason = wire.CodeSelfTest, "self-test gave class 1, want 0"
	}
	raw, err := ev.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	f.svc.Deliver(f.svc.Topics().Events(c.Device), raw)
	f.svc.Drain()
	acks := f.pub.take(c.Device + "/acks")
	if len(acks) != 1 {
		t.Fatalf("%d acks for %s's event, want 1", len(acks), c.Device)
	}
	a, err := wire.DecodeAck(acks[0].payload)
	if err != nil || a.IDs[0] != ev.ID {
		t.Fatalf("ack %v, %v; want %s", a, err, ev.ID)
	}
}

func TestServiceRolloutEndToEnd(t *testing.T) { testServiceRolloutEndToEnd(t, newFixture(t)) }

func testServiceRolloutEndToEnd(t *testing.T, f *fixture) {
	for _, id := range []string{"gw-1", "gw-2", "gw-3", "gw-4"} {
		f.online(t, id, map[string]string{"site": map[bool]string{true: "north", false: "south"}[id != "gw-4"]})
	}
	hash := f.addBundle(t, 1)
	r, err := f.svc.CreateRollout(api.RolloutRequest{ID: "r1", Bundle: hash, Selector: map[string]string{"site": "north"},
		Pace: api.Pace{Phases: []api.Phase{{Count: 1}, {Percent: 100}}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Order) != 3 {
		t.Fatalf("selector picked %v", r.Order)
	}
	if b := f.pub.take("/bundles/"); len(b) != 1 || !b[0].retained || !strings.HasSuffix(b[0].topic, hash) {
		t.Fatalf("bundle publications %v", b)
	}
	f.svc.Tick()
	canary := f.commands(t)
	if len(canary) != 1 || canary[0].Bundle != hash || canary[0].Rollout != "r1" {
		t.Fatalf("canary commands %+v", canary)
	}
	f.report(t, canary[0], wire.JobDownloading)
	f.svc.Tick()
	if more := f.commands(t); len(more) != 0 {
		t.Fatalf("phase 2 started before the canary finished: %d commands", len(more))
	}
	f.report(t, canary[0], wire.JobSucceeded)
	f.report(t, canary[0], wire.JobSucceeded) // a re-sent event is acknowledged again, counted once
	f.clk.t = f.clk.t.Add(time.Second)
	f.svc.Tick()
	rest := f.commands(t)
	if len(rest) != 2 {
		t.Fatalf("phase 2 sent %d commands, want 2", len(rest))
	}
	for _, c := range rest {
		f.report(t, c, wire.JobSucceeded)
	}
	f.svc.Tick()
	r, err = f.svc.GetRollout("r1")
	if err != nil || r.State != api.RolloutCompleted || r.Successes != 3 {
		t.Fatalf("rollout %v: %+v", err, r)
	}
	d, err := inventory.DeviceByID(f.db, canary[0].Device)
	if err != nil || d.LastJob == nil || d.LastJob.State != wire.JobSucceeded || d.LastSeq != canary[0].Seq {
		t.Fatalf("device record %v %+v", err, d)
	}
}

func TestServiceCanaryAbortAndRollback(t *testing.T) {
	testServiceCanaryAbortAndRollback(t, newFixture(t))
}

func testServiceCanaryAbortAndRollback(t *testing.T, f *fixture) {
	v1, v2 := f.addBundle(t, 1), f.addBundle(t, 2)
	var ids []string
	for i := range 10 {
		id := "gw-" + string(rune('a'+i))
		ids = append(ids, id)
		f.running(t, id, v1)
	}
	if _, err := f.svc.CreateRollout(api.RolloutRequest{ID: "bad", Bundle: v2, Devices: ids,
		Pace:  api.Pace{Phases: []api.Phase{{Count: 2}, {Percent: 100}}},
		Abort: api.AbortPolicy{On: api.FailureAny, ThresholdPercent: 0, MinExecuted: 1}}); err != nil {
		t.Fatal(err)
	}
	f.svc.Tick()
	canary := f.commands(t)
	if len(canary) != 2 {
		t.Fatalf("canary of %d", len(canary))
	}
	f.report(t, canary[0], wire.JobFailed)
	f.svc.Tick()
	if got := f.commands(t); len(got) != 0 {
		t.Fatalf("%d commands after the abort criterion was met", len(got))
	}
	r, _ := f.svc.GetRollout("bad")
	if r.State != api.RolloutAborted || !strings.Contains(r.Reason, "abort criterion") {
		t.Fatalf("rollout %s (%s)", r.State, r.Reason)
	}

	rb, err := f.svc.Rollback("bad", "bad-rollback")
	if err != nil {
		t.Fatal(err)
	}
	if rb.Bundle != v1 || !rb.Rollback || len(rb.Order) != 10 {
		t.Fatalf("rollback rollout %+v", rb)
	}
	f.svc.Tick()
	cmds := f.commands(t)
	if len(cmds) != 2 || !cmds[0].Rollback {
		t.Fatalf("rollback commands %+v", cmds)
	}
	// Sequence numbers keep growing per device across rollouts.
	for _, c := range cmds {
		for _, old := range canary {
			if c.Device == old.Device && c.Seq <= old.Seq {
				t.Fatalf("%s: rollback seq %d not above %d", c.Device, c.Seq, old.Seq)
			}
		}
	}
}

func TestServiceDropsBadMessages(t *testing.T) {
	f := newFixture(t)
	f.online(t, "gw-1", nil)
	for _, m := range []struct{ topic, payload string }{
		{f.svc.Topics().State("gw-1"), `{"v":1,"device":"gw-2","session":9,"online":true}`}, // another device's state
		{f.svc.Topics().State("gw-1"), `not json`},
		{f.svc.Topics().Events("gw-1"), `{"v":1}`},
		{f.svc.Topics().Telemetry("gw-1"), strings.Repeat("x", wire.MaxTelemetrySize+1)},
		{"trit/v1/other/devices/gw-1/state", `{"v":1,"device":"gw-1","session":9,"online":false}`},
	} {
		f.svc.Deliver(m.topic, []byte(m.payload))
	}
	f.svc.Drain()
	d, err := inventory.DeviceByID(f.db, "gw-1")
	if err != nil || d.Session != 1 || !d.Online {
		t.Fatalf("a bad message changed the record: %v %+v", err, d)
	}
	if _, err := inventory.DeviceByID(f.db, "gw-2"); !errors.Is(err, fault.ErrNotFound) {
		t.Fatalf("gw-2 was created from gw-1's topic: %v", err)
	}
	if n := f.svc.metrics.invalid.Load(); n != 4 {
		t.Fatalf("%d messages counted invalid, want 4", n)
	}
	if acks := f.pub.take("/acks"); len(acks) != 0 {
		t.Fatalf("invalid event acknowledged: %v", acks)
	}
}

func TestServiceStaleWillIgnored(t *testing.T) {
	f := newFixture(t)
	deliver := func(s *wire.State) {
		raw, _ := s.Marshal()
		f.svc.Deliver(f.svc.Topics().State("gw-1"), raw)
		f.svc.Drain()
	}
	deliver(&wire.State{Device: "gw-1", Session: 2, Online: true})
	deliver(&wire.State{Device: "gw-1", Session: 1}) // the will of an older session
	if d, _ := inventory.DeviceByID(f.db, "gw-1"); !d.Online || d.Session != 2 {
		t.Fatalf("stale will applied: %+v", d)
	}
	// Within a session the device republishes its state (after an install).
	deliver(&wire.State{Device: "gw-1", Session: 2, Online: true, Health: "ok", Model: &wire.ModelRef{ID: "vib", Release: 3, Bundle: strings.Repeat("ab", 32)}})
	if d, _ := inventory.DeviceByID(f.db, "gw-1"); d.Health != "ok" || d.Model == nil || d.Model.Release != 3 {
		t.Fatalf("same-session update not applied: %+v", d)
	}
	deliver(&wire.State{Device: "gw-1", Session: 2})
	if d, _ := inventory.DeviceByID(f.db, "gw-1"); d.Online || d.Model == nil {
		t.Fatal("current session's will not applied, or it erased the details")
	}
	deliver(&wire.State{Device: "gw-1", Session: 2, Online: true})
	if d, _ := inventory.DeviceByID(f.db, "gw-1"); d.Online {
		t.Fatal("an online state after the session's will was applied")
	}
}

// A new Service on the same store (a restarted trit-fleet) resumes a
// rollout where it was.
func TestServiceResumesAfterRestart(t *testing.T) { testServiceResumesAfterRestart(t, newFixture(t)) }

func testServiceResumesAfterRestart(t *testing.T, f *fixture) {
	for _, id := range []string{"gw-1", "gw-2"} {
		f.online(t, id, nil)
	}
	hash := f.addBundle(t, 1)
	if _, err := f.svc.CreateRollout(api.RolloutRequest{ID: "r", Bundle: hash, Devices: []string{"gw-1", "gw-2"},
		Pace: api.Pace{Phases: []api.Phase{{Count: 1}, {Count: 2}}}}); err != nil {
		t.Fatal(err)
	}
	f.svc.Tick()
	first := f.commands(t)
	f.report(t, first[0], wire.JobSucceeded)

	cmd := fleettest.Key(2)
	restarted, err := NewService(f.db, f.svc.Registry(), "f", f.pub, cmd, &Options{Now: f.clk.now, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	f.svc = restarted
	f.svc.Tick()
	second := f.commands(t)
	if len(second) != 1 || second[0].Device == first[0].Device {
		t.Fatalf("after restart: %+v", second)
	}
	f.report(t, second[0], wire.JobSucceeded)
	f.svc.Tick()
	if r, _ := f.svc.GetRollout("r"); r.State != api.RolloutCompleted {
		t.Fatalf("rollout %s after restart", r.State)
	}
}

// A gateway whose database was reset (the documented recovery for a
// damaged agent.db) comes back with a new instance and sessions from 1: the
// fleet takes its new life, and the late Last Will of its former life does
// not mark it offline.
func TestInventoryDeviceNewLife(t *testing.T) {
	f := newFixture(t)
	v1 := f.addBundle(t, 1)
	f.state(t, &wire.State{Device: "gw-1", Instance: "00000000000000a1", Session: 40, Online: true, Health: "ok",
		Model: &wire.ModelRef{ID: "vib", Release: 1, Bundle: v1}})
	f.state(t, &wire.State{Device: "gw-1", Instance: "00000000000000a1", Session: 40}) // it goes down
	// The database is reset: a new instance, session 1, no model.
	f.state(t, &wire.State{Device: "gw-1", Instance: "00000000000000b2", Session: 1, Online: true, Health: "no-model"})
	d, err := inventory.DeviceByID(f.db, "gw-1")
	if err != nil || !d.Online || d.Session != 1 || d.Instance != "00000000000000b2" || d.Model != nil || d.Health != "no-model" {
		t.Fatalf("after the reset: %v %+v", err, d)
	}
	// A will of the former life arriving late is ignored.
	f.state(t, &wire.State{Device: "gw-1", Instance: "00000000000000a1", Session: 41})
	if d, _ := inventory.DeviceByID(f.db, "gw-1"); !d.Online || d.Instance != "00000000000000b2" {
		t.Fatalf("a will of the former instance applied: %+v", d)
	}
	// Within the new life, the usual rule: the session's own will applies.
	f.state(t, &wire.State{Device: "gw-1", Instance: "00000000000000b2", Session: 1})
	if d, _ := inventory.DeviceByID(f.db, "gw-1"); d.Online {
		t.Fatal("the new life's will was not applied")
	}
}

// A forged state with the largest session pins a fake model: the real
// device's states are ignored until an operator resets the record (then
// the next state is taken) or forgets the device (then it reappears from
// its next state).
func TestInventoryPoisonedSessionResetAndForget(t *testing.T) {
	f := newFixture(t)
	real := &wire.State{Device: "gw-1", Instance: "00000000000000a1", Session: 3, Online: true, Health: "ok", Labels: map[string]string{"site": "north"}}
	f.state(t, real)
	fake := &wire.ModelRef{ID: "evil", Release: 99, Bundle: strings.Repeat("e", 64)}
	f.state(t, &wire.State{Device: "gw-1", Instance: "00000000000000a1", Session: math.MaxUint64, Online: true, Model: fake, Labels: map[string]string{"site": "south"}})
	real.Session = 4
	f.state(t, real)
	if d, _ := inventory.DeviceByID(f.db, "gw-1"); d.Model == nil || d.Model.ID != "evil" {
		t.Fatalf("expected the record pinned by the forged state: %+v", d)
	}
	d, err := inventory.ResetDevice(f.db, "gw-1")
	if err != nil || d.Online || d.Session != 0 {
		t.Fatalf("reset: %v %+v", err, d)
	}
	real.Session = 5
	f.state(t, real)
	if d, _ := inventory.DeviceByID(f.db, "gw-1"); d.Model != nil || d.Session != 5 || d.Labels["site"] != "north" || !d.Online {
		t.Fatalf("after reset, the real state was not taken: %+v", d)
	}

	if err := inventory.ForgetDevice(f.db, "gw-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := inventory.DeviceByID(f.db, "gw-1"); !errors.Is(err, fault.ErrNotFound) {
		t.Fatalf("forgotten device still there: %v", err)
	}
	if err := inventory.ForgetDevice(f.db, "gw-1"); !errors.Is(err, fault.ErrNotFound) {
		t.Fatalf("forgetting twice: %v", err)
	}
	real.Session, real.HighestSeq = 6, 12
	f.state(t, real)
	if d, err := inventory.DeviceByID(f.db, "gw-1"); err != nil || d.Session != 6 || d.LastSeq != 12 {
		t.Fatalf("the forgotten device did not come back from its state: %v %+v", err, d)
	}
}

// The fleet's command counter for a device below the device's own (its
// database restored from an old backup): the device refuses the command as
// superseded and says its highest sequence; the fleet moves past it and
// sends the command again, and the rollout succeeds. The device's state
// reporting its highest sequence moves the counter before any command.
func TestSequenceCatchesUpWithTheDevice(t *testing.T) {
	f := newFixture(t)
	f.online(t, "gw-1", nil) // an agent that does not report highest_seq yet
	hash := f.addBundle(t, 1)
	if _, err := f.svc.CreateRollout(api.RolloutRequest{ID: "r", Bundle: hash, Devices: []string{"gw-1"},
		Abort: api.AbortPolicy{On: api.FailureAny, ThresholdPercent: 0, MinExecuted: 1}}); err != nil {
		t.Fatal(err)
	}
	f.svc.Tick()
	c := f.commands(t)[0]
	if c.Seq != 1 {
		t.Fatalf("first command seq %d", c.Seq)
	}
	ev := &wire.Event{Device: "gw-1", Rollout: "r", Seq: c.Seq, State: wire.JobRejected, Code: wire.CodeSuperseded,
		Reason: "sequence 1 is below 40, already received", HighestSeq: 40, Bundle: hash, Time: f.clk.t.UnixMilli()}
	raw, _ := ev.Marshal()
	f.svc.Deliver(f.svc.Topics().Events("gw-1"), raw)
	f.svc.Drain()
	if acks := f.pub.take("gw-1/acks"); len(acks) != 1 {
		t.Fatalf("%d acks of the superseded event", len(acks))
	}
	f.clk.t = f.clk.t.Add(time.Second)
	f.svc.Tick()
	again := f.commands(t)
	if len(again) != 1 || again[0].Seq != 41 {
		t.Fatalf("after the superseded refusal: %+v, want one command with seq 41", again)
	}
	f.report(t, again[0], wire.JobSucceeded)
	f.svc.Tick()
	r, _ := f.svc.GetRollout("r")
	if r.State != api.RolloutCompleted || r.Devices["gw-1"].Attempts != 1 {
		t.Fatalf("rollout %s (%s), device %+v", r.State, r.Reason, r.Devices["gw-1"])
	}
	if n := f.svc.metrics.rejected.Load(); n != 0 {
		t.Fatalf("the superseded refusal counted as %d rejection(s)", n)
	}

	// A state reporting a higher sequence moves the counter; an
	// implausible jump does not.
	f.state(t, &wire.State{Device: "gw-1", Session: 2, Online: true, HighestSeq: 500})
	if d, _ := inventory.DeviceByID(f.db, "gw-1"); d.LastSeq != 500 {
		t.Fatalf("counter %d after a state with highest_seq 500", d.LastSeq)
	}
	f.state(t, &wire.State{Device: "gw-1", Session: 3, Online: true, HighestSeq: math.MaxUint64})
	if d, _ := inventory.DeviceByID(f.db, "gw-1"); d.LastSeq != 500 {
		t.Fatalf("counter %d after a state with highest_seq 2^64-1", d.LastSeq)
	}
}

// Prediction totals reported by devices saturate instead of wrapping.
func TestTelemetryTotalsSaturate(t *testing.T) {
	f := newFixture(t)
	for i, n := range []uint64{math.MaxUint64 - 5, 10, 3} {
		tm := &wire.Telemetry{Device: "gw-1", Session: 1, Seq: uint64(i + 1), From: 1, To: 2, Predictions: n}
		raw, _ := tm.Marshal()
		f.svc.Deliver(f.svc.Topics().Telemetry("gw-1"), raw)
		f.svc.Drain()
	}
	if d, _ := inventory.DeviceByID(f.db, "gw-1"); d.Predictions != math.MaxUint64 {
		t.Fatalf("predictions %d, want saturated at %d", d.Predictions, uint64(math.MaxUint64))
	}
}

// A device re-sends an event until the fleet acknowledges it, so an
// earlier step can arrive after the job's end: the record's latest job
// never goes back.
func TestLastJobNeverGoesBack(t *testing.T) {
	f := newFixture(t)
	f.online(t, "gw-1", nil)
	old := f.rolloutOne(t, "old", "gw-1", 1)
	r := f.rolloutOne(t, "r", "gw-1", 2)
	send := func(c *wire.Command, state wire.JobState) {
		f.deliverEvent(t, &wire.Event{Device: "gw-1", Rollout: c.Rollout, Seq: c.Seq, State: state})
	}
	send(r, wire.JobInstalling)
	send(r, wire.JobFailed)
	send(r, wire.JobInstalling)  // re-sent, late
	send(old, wire.JobSucceeded) // an earlier command's, late
	if d, _ := inventory.DeviceByID(f.db, "gw-1"); d.LastJob == nil || d.LastJob.State != wire.JobFailed || d.LastJob.Seq != r.Seq {
		t.Fatalf("last job %+v, want r/%d FAILED", d.LastJob, r.Seq)
	}
	next := f.rolloutOne(t, "next", "gw-1", 3)
	send(next, wire.JobQueued)
	if d, _ := inventory.DeviceByID(f.db, "gw-1"); d.LastJob.Rollout != "next" {
		t.Fatalf("a newer job did not replace the last: %+v", d.LastJob)
	}
}

// A selector that matches no device was refused as only "no target
// devices"; the refusal now names the selector and where the labels are.
func TestCreateRolloutSelectorMatchesNothing(t *testing.T) {
	f := newFixture(t)
	f.online(t, "gw-1", map[string]string{"site": "north"})
	hash := f.addBundle(t, 1)
	_, err := f.svc.CreateRollout(api.RolloutRequest{ID: "r1", Bundle: hash, Selector: map[string]string{"site": "nowhere"}})
	want := "no target devices: selector site=nowhere matches no device in the inventory ('tritctl devices list' shows their labels)"
	if !errors.Is(err, rollout.ErrInvalid) || !strings.Contains(err.Error(), want) {
		t.Fatalf("CreateRollout = %v, want ErrInvalid saying %q", err, want)
	}
}
