package fleet

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/wire"
)

// desired returns the raw commands published since the last call, by
// device.
func (f *fixture) desired(t *testing.T) map[string][][]byte {
	t.Helper()
	out := map[string][][]byte{}
	for _, m := range f.pub.take("/desired") {
		tp, err := wire.ParseTopic(m.topic)
		if err != nil {
			t.Fatal(err)
		}
		if !m.retained {
			t.Errorf("command on %s not retained", m.topic)
		}
		out[tp.Device] = append(out[tp.Device], m.payload)
	}
	return out
}

// After every (re)connection (Resync) the fleet publishes again the
// desired command of each device whose job is unfinished — the same
// command, byte for byte — and nothing for devices that finished or whose
// latest command is another one. A broker that lost its retained messages
// (Mosquitto killed between autosaves, or the embedded broker restarted
// with trit-fleet) so has the command again before the device returns.
func TestResyncReassertsDesiredCommands(t *testing.T) {
	f := newFixture(t)
	for _, id := range []string{"done", "away", "moved"} {
		f.online(t, id, nil)
	}
	v1, v2 := f.addBundle(t, 1), f.addBundle(t, 2)
	if _, err := f.svc.CreateRollout(api.RolloutRequest{ID: "r1", Bundle: v1, Devices: []string{"done", "away", "moved"}}); err != nil {
		t.Fatal(err)
	}
	f.svc.Tick()
	first := f.desired(t)
	if len(first) != 3 {
		t.Fatalf("commands for %d devices, want 3", len(first))
	}
	// "done" finishes; "moved" gets a later command from another rollout.
	for _, c := range f.verify(t, first["done"]) {
		f.report(t, c, wire.JobSucceeded)
	}
	f.clk.t = f.clk.t.Add(time.Second)
	if _, err := f.svc.CreateRollout(api.RolloutRequest{ID: "r2", Bundle: v2, Devices: []string{"moved"}}); err != nil {
		t.Fatal(err)
	}
	f.svc.Tick()
	later := f.desired(t)
	if len(later["moved"]) != 1 {
		t.Fatalf("rollout r2 sent %v", later)
	}

	f.clk.t = f.clk.t.Add(5 * time.Minute) // within the rollouts' timeout
	f.svc.Resync()
	f.svc.Tick()
	got := f.desired(t)
	if len(got) != 2 || len(got["away"]) != 1 || len(got["moved"]) != 1 {
		t.Fatalf("after Resync commands for %v, want one each for away and moved", keys(got))
	}
	if !bytes.Equal(got["away"][0], first["away"][0]) {
		t.Errorf("re-sent command differs from the first:\n%s\n%s", got["away"][0], first["away"][0])
	}
	if !bytes.Equal(got["moved"][0], later["moved"][0]) {
		t.Errorf("moved: re-sent %s, want its latest command %s", got["moved"][0], later["moved"][0])
	}
	// Nothing more until the next (re)connection or period.
	f.svc.Tick()
	if more := f.desired(t); len(more) != 0 {
		t.Fatalf("a second tick re-sent %v", keys(more))
	}
}

// verify decodes and verifies raw commands as a device would.
func (f *fixture) verify(t *testing.T, raws [][]byte) []*wire.Command {
	t.Helper()
	var out []*wire.Command
	for _, raw := range raws {
		c, err := wire.DecodeCommand(raw)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Verify(f.cmdKeys, wire.Target{Fleet: "f", Device: c.Device}, f.clk.t); err != nil {
			t.Fatalf("command for %s: %v", c.Device, err)
		}
		out = append(out, c)
	}
	return out
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// Every period the fleet re-sends the command of each online device whose
// job is unfinished and older than a period — a command whose publish
// failed (the broker down at that tick), or one lost while the device was
// away — and nothing to offline devices, whose copies would only wait in
// their broker sessions. A device that returns gets its command within
// one period; one that finished gets nothing more.
func TestReconcileEveryPeriod(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.Reconcile = time.Minute })
	f.online(t, "up", nil)
	f.online(t, "down", nil)
	hash := f.addBundle(t, 1)
	if _, err := f.svc.CreateRollout(api.RolloutRequest{ID: "r", Bundle: hash, Devices: []string{"up", "down"}, Timeout: time.Hour}); err != nil {
		t.Fatal(err)
	}
	f.pub.mu.Lock()
	f.pub.fail = errors.New("mqtt: not connected")
	f.pub.mu.Unlock()
	f.svc.Tick() // notifies both; neither command reaches the broker
	f.pub.mu.Lock()
	f.pub.fail = nil
	f.pub.mu.Unlock()
	f.state(t, &wire.State{Device: "down", Session: 1, Online: false})

	step := func(d time.Duration, want ...string) []*wire.Command {
		t.Helper()
		f.clk.t = f.clk.t.Add(d)
		f.svc.Tick()
		got := f.desired(t)
		if len(got) != len(want) {
			t.Fatalf("at +%v: commands for %v, want %v", f.clk.t.Sub(t0), keys(got), want)
		}
		var out []*wire.Command
		for _, id := range want {
			if len(got[id]) != 1 {
				t.Fatalf("at +%v: %d commands for %s, want 1", f.clk.t.Sub(t0), len(got[id]), id)
			}
			out = append(out, f.verify(t, got[id])...)
		}
		return out
	}
	step(59 * time.Second) // not a period yet
	up := step(time.Second, "up")
	if up[0].Rollout != "r" || up[0].Seq != 1 || up[0].IssuedAt != t0.Unix() {
		t.Fatalf("re-sent %+v, want r/1 issued at the notification", up[0])
	}
	f.clk.t = f.clk.t.Add(30 * time.Second)
	f.state(t, &wire.State{Device: "down", Session: 2, Online: true}) // back
	step(0)
	step(30*time.Second, "down", "up")
	f.report(t, up[0], wire.JobSucceeded)
	step(time.Minute, "down")
}

// A pass handles a bounded number of devices per tick and goes on where it
// stopped at the next, so re-asserting a large fleet never stalls the
// service loop for long; every device is covered once.
func TestReconcilePassIsSpreadOverTicks(t *testing.T) {
	f := newFixture(t)
	f.svc.recon.budget = 2
	ids := []string{"gw-1", "gw-2", "gw-3", "gw-4", "gw-5"}
	for _, id := range ids {
		f.online(t, id, nil)
	}
	hash := f.addBundle(t, 1)
	if _, err := f.svc.CreateRollout(api.RolloutRequest{ID: "r", Bundle: hash, Devices: ids}); err != nil {
		t.Fatal(err)
	}
	f.svc.Tick()
	if got := f.desired(t); len(got) != len(ids) {
		t.Fatalf("first tick: commands for %v", keys(got))
	}
	f.clk.t = f.clk.t.Add(time.Second)
	f.svc.Resync()
	var seen []string
	for _, want := range []int{2, 2, 1, 0} {
		f.svc.Tick()
		got := f.desired(t)
		if len(got) != want {
			t.Fatalf("tick %d of the pass: commands for %v, want %d", len(seen)/2+1, keys(got), want)
		}
		for _, id := range ids {
			if got[id] != nil {
				seen = append(seen, id)
			}
		}
	}
	if strings.Join(seen, ",") != strings.Join(ids, ",") {
		t.Fatalf("the pass covered %v, want each of %v once, in order", seen, ids)
	}
}
