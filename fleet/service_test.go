package fleet

import (
	"crypto/ed25519"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

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
	db      *store.DB
	release ed25519.PrivateKey
	cmdKeys *wire.KeySet
}

func newFixture(t *testing.T, tweak ...func(*Options)) *fixture {
	t.Helper()
	release, cmd := testKey(1), testKey(2)
	ks, err := bundle.NewKeySet(release.Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	cmdKeys, err := wire.NewKeySet(cmd.Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{pub: &recorder{}, clk: &clock{t0}, db: openStore(t), release: release, cmdKeys: cmdKeys}
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
	info, err := f.svc.Registry().Add(signedBundle(t, "vib", release, f.release))
	if err != nil {
		t.Fatal(err)
	}
	return info.Hash
}

func (f *fixture) online(t *testing.T, id string, labels map[string]string) {
	t.Helper()
	st := &wire.State{Device: id, Session: 1, Online: true, Labels: labels, Health: "ok"}
	raw, err := st.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	f.svc.Deliver(f.svc.Topics().State(id), raw)
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

func TestServiceRolloutEndToEnd(t *testing.T) {
	f := newFixture(t)
	for _, id := range []string{"gw-1", "gw-2", "gw-3", "gw-4"} {
		f.online(t, id, map[string]string{"site": map[bool]string{true: "north", false: "south"}[id != "gw-4"]})
	}
	hash := f.addBundle(t, 1)
	r, err := f.svc.CreateRollout(RolloutRequest{ID: "r1", Bundle: hash, Selector: map[string]string{"site": "north"},
		Pace: Pace{Phases: []Phase{{Count: 1}, {Percent: 100}}}})
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
	if err != nil || r.State != RolloutCompleted || r.Successes != 3 {
		t.Fatalf("rollout %v: %+v", err, r)
	}
	d, err := DeviceByID(f.db, canary[0].Device)
	if err != nil || d.LastJob == nil || d.LastJob.State != wire.JobSucceeded || d.LastSeq != canary[0].Seq {
		t.Fatalf("device record %v %+v", err, d)
	}
}

func TestServiceCanaryAbortAndRollback(t *testing.T) {
	f := newFixture(t)
	var ids []string
	for i := range 10 {
		id := "gw-" + string(rune('a'+i))
		ids = append(ids, id)
		f.online(t, id, nil)
	}
	v1, v2 := f.addBundle(t, 1), f.addBundle(t, 2)
	if _, err := f.svc.CreateRollout(RolloutRequest{ID: "bad", Bundle: v2, Devices: ids,
		Pace:  Pace{Phases: []Phase{{Count: 2}, {Percent: 100}}},
		Abort: AbortPolicy{On: FailureAny, ThresholdPercent: 0, MinExecuted: 1}}); err != nil {
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
	if r.State != RolloutAborted || !strings.Contains(r.Reason, "abort criterion") {
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
	d, err := DeviceByID(f.db, "gw-1")
	if err != nil || d.Session != 1 || !d.Online {
		t.Fatalf("a bad message changed the record: %v %+v", err, d)
	}
	if _, err := DeviceByID(f.db, "gw-2"); !errors.Is(err, ErrNotFound) {
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
	if d, _ := DeviceByID(f.db, "gw-1"); !d.Online || d.Session != 2 {
		t.Fatalf("stale will applied: %+v", d)
	}
	// Within a session the device republishes its state (after an install).
	deliver(&wire.State{Device: "gw-1", Session: 2, Online: true, Health: "ok", Model: &wire.ModelRef{ID: "vib", Release: 3, Bundle: strings.Repeat("ab", 32)}})
	if d, _ := DeviceByID(f.db, "gw-1"); d.Health != "ok" || d.Model == nil || d.Model.Release != 3 {
		t.Fatalf("same-session update not applied: %+v", d)
	}
	deliver(&wire.State{Device: "gw-1", Session: 2})
	if d, _ := DeviceByID(f.db, "gw-1"); d.Online || d.Model == nil {
		t.Fatal("current session's will not applied, or it erased the details")
	}
	deliver(&wire.State{Device: "gw-1", Session: 2, Online: true})
	if d, _ := DeviceByID(f.db, "gw-1"); d.Online {
		t.Fatal("an online state after the session's will was applied")
	}
}

// A new Service on the same store (a restarted trit-fleet) resumes a
// rollout where it was.
func TestServiceResumesAfterRestart(t *testing.T) {
	f := newFixture(t)
	for _, id := range []string{"gw-1", "gw-2"} {
		f.online(t, id, nil)
	}
	hash := f.addBundle(t, 1)
	if _, err := f.svc.CreateRollout(RolloutRequest{ID: "r", Bundle: hash, Devices: []string{"gw-1", "gw-2"},
		Pace: Pace{Phases: []Phase{{Count: 1}, {Count: 2}}}}); err != nil {
		t.Fatal(err)
	}
	f.svc.Tick()
	first := f.commands(t)
	f.report(t, first[0], wire.JobSucceeded)

	cmd := testKey(2)
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
	if r, _ := f.svc.GetRollout("r"); r.State != RolloutCompleted {
		t.Fatalf("rollout %s after restart", r.State)
	}
}

func TestServiceControl(t *testing.T) {
	f := newFixture(t)
	f.online(t, "gw-1", nil)
	hash := f.addBundle(t, 1)
	if _, err := f.svc.CreateRollout(RolloutRequest{ID: "r", Bundle: hash, Devices: []string{"gw-1"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.CreateRollout(RolloutRequest{ID: "r", Bundle: hash, Devices: []string{"gw-1"}}); !errors.Is(err, ErrRollout) {
		t.Fatalf("duplicate rollout ID: %v", err)
	}
	if _, err := f.svc.Control("r", "pause", "maintenance"); err != nil {
		t.Fatal(err)
	}
	f.svc.Tick()
	if c := f.commands(t); len(c) != 0 {
		t.Fatalf("paused rollout sent %d commands", len(c))
	}
	if _, err := f.svc.Control("r", "resume", ""); err != nil {
		t.Fatal(err)
	}
	f.svc.Tick()
	if c := f.commands(t); len(c) != 1 {
		t.Fatalf("resumed rollout sent %d commands", len(c))
	}
	if _, err := f.svc.Control("r", "explode", ""); !errors.Is(err, ErrRollout) {
		t.Fatalf("unknown operation: %v", err)
	}
	if _, err := f.svc.Control("nope", "pause", ""); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown rollout: %v", err)
	}
	if _, err := f.svc.CreateRollout(RolloutRequest{ID: "x", Bundle: strings.Repeat("0", 64), Devices: []string{"gw-1"}}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown bundle: %v", err)
	}
}

// Resync republishes the bundles of rollouts that are not done, and only
// those: a broker that lost its retained messages gets them back.
func TestServiceResync(t *testing.T) {
	f := newFixture(t)
	f.online(t, "gw-1", nil)
	v1, v2 := f.addBundle(t, 1), f.addBundle(t, 2)
	for id, h := range map[string]string{"old": v1, "new": v2} {
		if _, err := f.svc.CreateRollout(RolloutRequest{ID: id, Bundle: h, Devices: []string{"gw-1"}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.svc.Control("old", "abort", "superseded"); err != nil {
		t.Fatal(err)
	}
	f.pub.take("/bundles/")
	f.svc.Resync()
	got := f.pub.take("/bundles/")
	if len(got) != 1 || !strings.HasSuffix(got[0].topic, v2) || !got[0].retained {
		t.Fatalf("resync published %v, want only %s retained", got, v2[:12])
	}
}
