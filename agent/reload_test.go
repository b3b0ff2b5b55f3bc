package agent

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/trit-iot/trit/wire"
)

// syncBuffer is a log sink safe for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestReload runs an agent from a configuration file and sends it SIGHUP
// (through Options.Reload, as trit-agent run does) after each edit: new
// labels, log level, telemetry interval, sensors and trusted keys take
// effect; an invalid file, or sensors the running model cannot use, are
// refused and the running configuration kept.
func TestReload(t *testing.T) {
	k := newKeys(t)
	dir := t.TempDir()
	replay := writeReplay(t, dir)
	path := filepath.Join(dir, "agent.toml")
	write := func(labels, level, interval, sensor, cmdKey string) {
		t.Helper()
		text := fmt.Sprintf(`device_id = %q
fleet = %q
state_dir = %q
labels = { site = %q }
log_level = %q
release_keys = [%q]
command_keys = [%q]
[mqtt]
broker = "tcp://fake:1883"
reconnect_min = "100ms"
reconnect_max = "1s"
[install]
health_cycles = 3
health_timeout = "5s"
[telemetry]
interval = %q
%s
`, testDevice, testFleet, filepath.Join(dir, "state"), labels, level, k.releasePub, cmdKey, interval, sensor)
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	replaySensor := func(rate int) string {
		return fmt.Sprintf("[[sensor]]\nkind = \"replay\"\nname = \"s\"\nfile = %q\nrate = %d.0\nloop = true\n", replay, rate)
	}
	// An hour between reports: no telemetry until a reload shortens it.
	write("north", "info", "1h", replaySensor(50), k.cmdPub)
	cfg, err := LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	lv := new(slog.LevelVar)
	hup := make(chan os.Signal, 1)
	b := newFakeBroker()
	startAgent(t, cfg, &Options{Dialer: b, Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: lv})),
		LogLevel: lv, Reload: hup, LoadConfig: func() (*Config, error) { return LoadConfig(path) }})
	tp, _ := wire.NewTopics(testFleet)

	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s; log:\n%s", what, logs.String())
			}
		}
	}
	lastState := func() *wire.State {
		var st *wire.State
		for _, m := range b.published(wire.KindState) {
			if s, err := wire.DecodeState(m.Payload); err == nil && s.Online {
				st = s
			}
		}
		return st
	}
	reloads := 0
	reload := func() {
		t.Helper()
		reloads++
		hup <- syscall.SIGHUP
		waitFor("the reload's log line", func() bool {
			return strings.Count(logs.String(), "configuration reload") >= reloads
		})
	}
	terminal := func(seq uint64) *wire.Event {
		t.Helper()
		var ev *wire.Event
		waitFor(fmt.Sprintf("a terminal event for seq %d", seq), func() bool {
			for _, m := range b.published(wire.KindEvents) {
				if e, err := wire.DecodeEvent(m.Payload); err == nil && e.Seq == seq && e.State.Terminal() {
					ev = e
					return true
				}
			}
			return false
		})
		return ev
	}
	deploy := func(hash string, seq uint64) {
		c := &wire.Command{Fleet: testFleet, Device: testDevice, Bundle: hash, Rollout: "r", Seq: seq,
			IssuedAt: time.Now().Unix() - 1, ExpiresAt: time.Now().Unix() + 600}
		if err := c.Sign(k.command); err != nil {
			t.Fatal(err)
		}
		p, _ := c.Marshal()
		b.publish(Message{Topic: tp.Desired(testDevice), Payload: p, Retained: true})
	}
	waitFor("the first state", func() bool { return lastState() != nil })
	data := makeBundle(t, bundleOpts{release: 1, signer: k.release})
	b.publish(Message{Topic: tp.Bundle(hashOf(data)), Payload: data, Retained: true})
	deploy(hashOf(data), 1)
	if ev := terminal(1); ev.State != wire.JobSucceeded {
		t.Fatalf("install: %+v", ev)
	}
	if n := len(b.published(wire.KindTelemetry)); n != 0 {
		t.Fatalf("%d telemetry reports with a 1h interval", n)
	}

	// Labels, log level, interval and sensor rate: all applied.
	write("south", "debug", "100ms", replaySensor(100), k.cmdPub)
	reload()
	if !strings.Contains(logs.String(), "configuration reloaded") {
		t.Fatalf("no reload; log:\n%s", logs.String())
	}
	waitFor("the state with the new labels", func() bool { st := lastState(); return st.Labels["site"] == "south" })
	if lv.Level() != slog.LevelDebug {
		t.Errorf("log level %v after reload, want debug", lv.Level())
	}
	// Telemetry now flows, and the model still predicts on the new sensors.
	waitFor("telemetry with predictions after the reload", func() bool {
		for _, m := range b.published(wire.KindTelemetry) {
			if tel, err := wire.DecodeTelemetry(m.Payload); err == nil && tel.Predictions > 0 && tel.Model != nil {
				return true
			}
		}
		return false
	})

	// An invalid file is refused; the running configuration stays.
	if err := os.WriteFile(path, []byte("device_id = \"gw-001\"\nnot_a_key = 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	reload()
	if !strings.Contains(logs.String(), "configuration reload refused") || !strings.Contains(logs.String(), "not_a_key") {
		t.Fatalf("invalid config not refused by name; log:\n%s", logs.String())
	}
	// Sensors the running model cannot use (no x1..x3 channels) are refused.
	write("west", "debug", "100ms", "[[sensor]]\nkind = \"synthetic\"\nname = \"accel\"\nrate = 1000.0\n", k.cmdPub)
	reload()
	if !strings.Contains(logs.String(), "the running model cannot use the new sensors") {
		t.Fatalf("incompatible sensors not refused; log:\n%s", logs.String())
	}
	if st := lastState(); st.Labels["site"] != "south" {
		t.Fatalf("a refused reload changed the labels: %v", st.Labels)
	}

	// Trusted keys: with another command key, commands signed by the old
	// one are refused.
	otherPub := filepath.Join(k.dir, "other.pub")
	write("south", "debug", "100ms", replaySensor(100), otherPub)
	reload()
	data2 := makeBundle(t, bundleOpts{release: 2, signer: k.release})
	b.publish(Message{Topic: tp.Bundle(hashOf(data2)), Payload: data2, Retained: true})
	deploy(hashOf(data2), 2)
	if ev := terminal(2); ev.State != wire.JobRejected || ev.Code != wire.CodeCommandSignature {
		t.Fatalf("a command signed by a key no longer trusted: %+v, want REJECTED %s", ev, wire.CodeCommandSignature)
	}
}
