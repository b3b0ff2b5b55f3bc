package agent

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trit-iot/trit/store"
	"github.com/trit-iot/trit/wire"
)

// rig drives agents through a fake broker, as trit-fleet would: bundles
// and signed commands in, states, events and telemetry out. The broker
// outlives the agents a test starts one after the other.
type rig struct {
	t   *testing.T
	k   *keys
	cfg *Config
	b   *fakeBroker
	tp  wire.Topics
	seq uint64
	// mark is how many messages were published when the current agent
	// started: what it says comes after.
	mark int
}

// newRig makes a rig with keys k (nil: new ones).
func newRig(t *testing.T, k *keys) *rig {
	if k == nil {
		k = newKeys(t)
	}
	tp, _ := wire.NewTopics(testFleet)
	return &rig{t: t, k: k, cfg: testConfig(t, k, "tcp://fake:1883"), b: newFakeBroker(), tp: tp}
}

// start runs an agent logging to logs; the returned stop waits for it.
func (r *rig) start(logs *lockedBuffer) (stop func()) {
	r.b.mu.Lock()
	r.mark = len(r.b.sent)
	r.b.mu.Unlock()
	return startAgent(r.t, r.cfg, &Options{Dialer: r.b, Logger: slog.New(slog.NewTextHandler(logs, nil))})
}

// since returns what the current agent published of kind.
func (r *rig) since(kind wire.Kind) []Message {
	r.b.mu.Lock()
	defer r.b.mu.Unlock()
	var out []Message
	for _, m := range r.b.sent[r.mark:] {
		if t, err := wire.ParseTopic(m.Topic); err == nil && t.Kind == kind {
			out = append(out, m)
		}
	}
	return out
}

func (r *rig) wait(what string, cond func() bool) {
	r.t.Helper()
	for deadline := time.Now().Add(15 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			r.t.Fatalf("timed out waiting for %s; latest state %+v", what, r.state())
		}
	}
}

// state is the current agent's latest online state, nil before one.
func (r *rig) state() *wire.State {
	var st *wire.State
	for _, m := range r.since(wire.KindState) {
		if s, err := wire.DecodeState(m.Payload); err == nil && s.Online {
			st = s
		}
	}
	return st
}

// waitState waits until the current agent's latest state satisfies ok.
func (r *rig) waitState(what string, ok func(*wire.State) bool) *wire.State {
	r.t.Helper()
	var st *wire.State
	r.wait("a state: "+what, func() bool {
		st = r.state()
		return st != nil && ok(st)
	})
	return st
}

// predicted reports whether the current agent's telemetry carries
// predictions by bundle.
//
// Only reports of the current agent's boot count: the outbox keeps what
// an earlier agent had not yet sent, and the current one sends it first.
func (r *rig) predicted(bundle string) bool {
	st := r.state()
	if st == nil {
		return false
	}
	for _, m := range r.since(wire.KindTelemetry) {
		if tm, err := wire.DecodeTelemetry(m.Payload); err == nil && tm.Boot == st.Clock.Boot() &&
			tm.Model != nil && tm.Model.Bundle == bundle && tm.Predictions > 0 {
			return true
		}
	}
	return false
}

// deploy publishes data and a command to install it, and returns the
// command's terminal event.
func (r *rig) deploy(data []byte) *wire.Event {
	r.t.Helper()
	r.wait("the agent's first state", func() bool { return r.state() != nil })
	h := hashOf(data)
	r.b.publish(Message{Topic: r.tp.Bundle(h), Payload: data, Retained: true})
	r.seq++
	seq := r.seq
	c := &wire.Command{Fleet: testFleet, Device: testDevice, Bundle: h, Rollout: fmt.Sprintf("r%d", seq), Seq: seq,
		IssuedAt: time.Now().Unix() - 1, ExpiresAt: time.Now().Unix() + 600}
	if err := c.Sign(r.k.command); err != nil {
		r.t.Fatal(err)
	}
	p, _ := c.Marshal()
	r.b.publish(Message{Topic: r.tp.Desired(testDevice), Payload: p, Retained: true})
	var ev *wire.Event
	r.wait(fmt.Sprintf("the terminal event of seq %d", seq), func() bool {
		for _, m := range r.since(wire.KindEvents) {
			if e, err := wire.DecodeEvent(m.Payload); err == nil && e.Seq == seq && e.State.Terminal() {
				ev = e
				return true
			}
		}
		return false
	})
	return ev
}

// openStore opens the agent's database while no agent runs.
func (r *rig) openStore() *store.DB {
	r.t.Helper()
	if err := os.MkdirAll(r.cfg.StateDir, 0o700); err != nil {
		r.t.Fatal(err)
	}
	db, err := store.Open(r.cfg.DBPath(), nil)
	if err != nil {
		r.t.Fatal(err)
	}
	return db
}

// damageOnDisk flips a bit in the middle of every copy of data in the
// agent's database file (bbolt may keep an old page too), as a rotting
// SD card would: the stored bundle no longer matches its hash.
func damageOnDisk(t *testing.T, cfg *Config, data []byte) {
	t.Helper()
	file, err := os.ReadFile(cfg.DBPath())
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Count(file, data) == 0 {
		t.Fatal("the bundle is not in agent.db")
	}
	for i := bytes.Index(file, data); i >= 0; i = bytes.Index(file, data) {
		file[i+len(data)/2] ^= 1
	}
	if err := os.WriteFile(cfg.DBPath(), file, 0o600); err != nil {
		t.Fatal(err)
	}
}

// logLines returns the log's lines that contain msg.
func logLines(l *lockedBuffer, msg string) []string {
	var out []string
	for _, line := range strings.Split(l.String(), "\n") {
		if strings.Contains(line, msg) {
			out = append(out, line)
		}
	}
	return out
}

// TestDamagedActiveRunsPrevious: release 2, committed over release 1, is
// damaged on disk (a rotting SD card). At start the agent keeps
// classifying with release 1, logs one error naming release 2's bundle
// and what it runs instead, and its state says so: model release 1,
// health degraded, release 2 unloadable and why. Nothing stored changes.
// Delivering release 2 again replaces the damaged copy and runs it.
func TestDamagedActiveRunsPrevious(t *testing.T) {
	r := newRig(t, nil)
	v1data := makeBundle(t, bundleOpts{release: 1, signer: r.k.release})
	v2data := makeBundle(t, bundleOpts{release: 2, signer: r.k.release})
	v1, v2 := hashOf(v1data), hashOf(v2data)
	stop := r.start(&lockedBuffer{})
	for _, data := range [][]byte{v1data, v2data} {
		if ev := r.deploy(data); ev.State != wire.JobSucceeded {
			t.Fatalf("install: %+v", ev)
		}
	}
	// Release 2's last reports stay in the outbox (the broker is down),
	// so the next agent sends them first: they are the previous boot's,
	// not predictions of the next agent.
	r.wait("predictions by release 2", func() bool { return r.predicted(v2) })
	r.b.mu.Lock()
	r.b.down = true
	r.b.mu.Unlock()
	time.Sleep(3 * r.cfg.Telemetry.Interval.Duration)
	stop()
	r.b.mu.Lock()
	r.b.down = false
	r.b.mu.Unlock()
	damageOnDisk(t, r.cfg, v2data)

	logs := &lockedBuffer{}
	stop = r.start(logs)
	st := r.waitState("release 1 runs, release 2 unloadable", func(s *wire.State) bool { return s.Unloadable != nil })
	if st.Model == nil || st.Model.Bundle != v1 || st.Model.Release != 1 || st.Model.Install != string(store.InstallCommitted) ||
		st.Health != "degraded" || st.Previous != nil {
		t.Fatalf("state %+v model %+v previous %+v: want release 1 committed, degraded, nothing else to roll back to", st, st.Model, st.Previous)
	}
	if u := st.Unloadable; u.Bundle != v2 || u.Release != 2 || u.ID != "vib" || !strings.Contains(u.Error, "does not match its hash") {
		t.Fatalf("unloadable %+v: want release 2, content does not match its hash", u)
	}
	r.wait("predictions by release 1", func() bool { return r.predicted(v1) })
	if r.predicted(v2) {
		t.Fatal("the damaged release 2 made predictions")
	}
	lines := logLines(logs, "active model does not load")
	if len(lines) != 1 {
		t.Fatalf("%d lines about the model that does not load, want 1:\n%s", len(lines), logs)
	}
	for _, want := range []string{"level=ERROR", "running the previous model instead", "bundle=" + v2, "release=2", "running_release=1", "running_bundle=" + v1[:12], "does not match its hash"} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("log line lacks %q:\n%s", want, lines[0])
		}
	}
	stop()

	// Nothing stored changed: the slots as they were, the damaged copy kept.
	db := r.openStore()
	active, previous, err := db.Slots()
	if err != nil || active == nil || active.Hash != v2 || active.State != store.InstallCommitted || previous == nil || previous.Hash != v1 {
		t.Fatalf("slots after the fallback: active %+v previous %+v, %v; want release 2 committed over release 1", active, previous, err)
	}
	if _, err := db.Bundle(v2); !errors.Is(err, store.ErrCorrupt) {
		t.Fatalf("stored release 2: %v, want the damaged copy kept (ErrCorrupt)", err)
	}
	db.Close()

	// The same bundle delivered again heals the device.
	stop = r.start(&lockedBuffer{})
	r.waitState("the fallback again", func(s *wire.State) bool { return s.Unloadable != nil })
	if ev := r.deploy(v2data); ev.State != wire.JobSucceeded || ev.Model == nil || ev.Model.Bundle != v2 {
		t.Fatalf("release 2 delivered again: %+v", ev)
	}
	st = r.waitState("release 2 runs", func(s *wire.State) bool { return s.Model != nil && s.Model.Bundle == v2 })
	if st.Health != "ok" || st.Unloadable != nil || st.Previous == nil || st.Previous.Bundle != v1 {
		t.Fatalf("state after the repair %+v: want ok, release 1 as the previous model, nothing unloadable", st)
	}
	r.wait("predictions by release 2", func() bool { return r.predicted(v2) })
	stop()
	db = r.openStore()
	defer db.Close()
	if got, err := db.Bundle(v2); err != nil || !bytes.Equal(got, v2data) {
		t.Fatalf("stored release 2 after the repair: %v", err)
	}
}

// TestUnloadableActive: the committed bundle the store holds does not load
// — cut short, not a bundle at all, signed by a key the device does not
// trust — and the agent runs the previous model if that one loads, else
// none, and says which.
func TestUnloadableActive(t *testing.T) {
	k := newKeys(t)
	good := makeBundle(t, bundleOpts{release: 1, signer: k.release})
	v2 := makeBundle(t, bundleOpts{release: 2, signer: k.release})
	for _, c := range []struct {
		name             string
		active, previous []byte // previous nil: none
		runs             bool   // the previous model runs
		err              string // in the state's error
		log              string
	}{
		{"truncated", v2[:len(v2)/2], good, true, "", "running the previous model instead"},
		{"not a bundle", []byte("these are not the bytes of a bundle"), good, true, "", "running the previous model instead"},
		{"untrusted signature", makeBundle(t, bundleOpts{release: 2, signer: k.other}), good, true, "key", "running the previous model instead"},
		{"no previous", v2[:len(v2)/2], nil, false, "", "there is no previous model: running no model"},
		{"previous damaged too", v2[:len(v2)/2], good[:len(good)-1], false, "", "nor does the previous one: running no model"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, k)
			db := r.openStore()
			if c.previous != nil {
				h, err := db.PutBundle(c.previous)
				if err == nil {
					err = db.Activate(h, store.SlotMeta{ModelID: "vib", Release: 1, State: store.InstallCommitted})
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			h, err := db.PutBundle(c.active)
			if err == nil {
				err = db.Activate(h, store.SlotMeta{ModelID: "vib", Release: 2, State: store.InstallCommitted})
			}
			db.Close()
			if err != nil {
				t.Fatal(err)
			}
			logs := &lockedBuffer{}
			r.start(logs)
			st := r.waitState("release 2 unloadable", func(s *wire.State) bool { return s.Unloadable != nil })
			if u := st.Unloadable; u.Bundle != h || u.Release != 2 || u.Error == "" || !strings.Contains(u.Error, c.err) {
				t.Fatalf("unloadable %+v", u)
			}
			fallback := c.runs
			switch {
			case fallback && (st.Model == nil || st.Model.Bundle != hashOf(good) || st.Health != "degraded"):
				t.Fatalf("state %+v: want release 1 running, degraded", st)
			case !fallback && (st.Model != nil || st.Health != "no-model"):
				t.Fatalf("state %+v: want no model", st)
			case c.previous != nil && !fallback && (st.Previous == nil || st.Previous.Bundle != hashOf(c.previous)):
				t.Fatalf("state %+v: want the stored previous model named", st)
			}
			if fallback {
				r.wait("predictions by release 1", func() bool { return r.predicted(hashOf(good)) })
			}
			lines := logLines(logs, "active model does not load")
			if len(lines) != 1 || !strings.Contains(lines[0], c.log) || !strings.Contains(lines[0], "bundle="+h) || !strings.Contains(lines[0], "release=2") {
				t.Fatalf("log lines %q: want one saying %q", lines, c.log)
			}
		})
	}
}

// TestReloadRunsUnloadableModel: release 2 is signed by a key the
// configuration no longer lists (a rotation gone wrong), so the agent
// starts on release 1; the operator adds the key back and reloads, and
// release 2 runs again without a restart.
func TestReloadRunsUnloadableModel(t *testing.T) {
	k := newKeys(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "agent.toml")
	otherPub := filepath.Join(k.dir, "other.pub")
	write := func(keys ...string) {
		t.Helper()
		text := fmt.Sprintf(`device_id = %q
fleet = %q
state_dir = %q
release_keys = ["%s"]
command_keys = [%q]
[mqtt]
broker = "tcp://fake:1883"
reconnect_min = "100ms"
reconnect_max = "1s"
[telemetry]
interval = "200ms"
[[sensor]]
kind = "replay"
name = "s"
file = %q
rate = 50.0
loop = true
`, testDevice, testFleet, filepath.Join(dir, "state"), strings.Join(keys, `", "`), k.cmdPub, writeReplay(t, dir))
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(k.releasePub)
	cfg, err := LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	r := newRig(t, k)
	r.cfg = cfg
	v1data, v2data := makeBundle(t, bundleOpts{release: 1, signer: k.release}), makeBundle(t, bundleOpts{release: 2, signer: k.other})
	db := r.openStore()
	for i, data := range [][]byte{v1data, v2data} {
		h, err := db.PutBundle(data)
		if err == nil {
			err = db.Activate(h, store.SlotMeta{ModelID: "vib", Release: uint64(i + 1), State: store.InstallCommitted})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	db.Close()

	logs := &lockedBuffer{}
	hup := make(chan os.Signal, 1)
	r.b.mu.Lock()
	r.mark = len(r.b.sent)
	r.b.mu.Unlock()
	startAgent(t, cfg, &Options{Dialer: r.b, Logger: slog.New(slog.NewTextHandler(logs, nil)), Reload: hup,
		LoadConfig: func() (*Config, error) { return LoadConfig(path) }})
	st := r.waitState("release 1 runs", func(s *wire.State) bool { return s.Unloadable != nil })
	if st.Model == nil || st.Model.Bundle != hashOf(v1data) || st.Unloadable.Bundle != hashOf(v2data) {
		t.Fatalf("state %+v: want release 1 running, release 2 unloadable", st)
	}
	write(k.releasePub, otherPub)
	hup <- syscall.SIGHUP
	st = r.waitState("release 2 runs after the reload", func(s *wire.State) bool { return s.Model != nil && s.Model.Bundle == hashOf(v2data) })
	if st.Unloadable != nil || st.Health != "ok" || st.Previous == nil || st.Previous.Bundle != hashOf(v1data) {
		t.Fatalf("state after the reload %+v: want ok, release 1 previous, nothing unloadable", st)
	}
	r.wait("predictions by release 2", func() bool { return r.predicted(hashOf(v2data)) })
	if n := len(logLines(logs, "active model does not load")); n != 1 {
		t.Errorf("%d lines about the model that does not load, want 1:\n%s", n, logs)
	}
}
