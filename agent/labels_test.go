package agent

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trit-iot/trit/sensors"
	"github.com/trit-iot/trit/wire"
	"github.com/trit-iot/trit/wire/mqtttest"
)

// TestLabelRing: windows wait until acknowledged, within the bound
// (oldest dropped first, counted), under a table of the models that
// classified them; the label channel's value is mapped to a class; the
// ring survives a store/restore round trip.
func TestLabelRing(t *testing.T) {
	r := benchRunning(&testing.B{}, 1, 64)
	ring := newLabelRing(LabelSourceConfig{Name: "door", Channel: "door", Map: map[string]string{"0": "normal", "1": "fault"}, MaxBytes: 2048})
	in := &input{channels: []string{"x1", "door"}}
	if l := ring.label(in, []float64{0.5, 1}); l != "fault" {
		t.Fatalf("label %q, want fault", l)
	}
	if l := ring.label(in, []float64{0.5, 2}); l != "" {
		t.Fatalf("a value outside the map labelled %q", l)
	}
	if l := ring.label(&input{channels: []string{"x1"}}, []float64{0.5}); l != "" {
		t.Fatalf("no label channel labelled %q", l)
	}
	at := time.UnixMilli(1_750_000_000_000)
	for i := range 200 {
		ring.offer(r, at.Add(time.Duration(i)*time.Millisecond), []float32{float32(i), 0, 0}, "normal", 0.3, "fault")
	}
	set := ring.set()
	data, _ := json.Marshal(set)
	if set.Dropped == 0 || len(data) > 2048+256 || set.Windows[len(set.Windows)-1].X[0] != 199 || set.Source != "door" || len(set.Models) != 1 {
		t.Fatalf("%d windows (%d dropped), %d bytes, last %v", len(set.Windows), set.Dropped, len(data), set.Windows[len(set.Windows)-1].X)
	}
	mid := set.Windows[len(set.Windows)/2].Time
	ring.ack(mid)
	after := ring.set()
	if after.Windows[0].Time != mid+1 || after.Windows[len(after.Windows)-1].X[0] != 199 {
		t.Fatalf("after the ack: first %d (want %d)", after.Windows[0].Time, mid+1)
	}
	stored, ok := ring.encodeIfDirty()
	if !ok {
		t.Fatal("not dirty after an ack")
	}
	back := newLabelRing(ring.cfg)
	if !back.restore(stored) || len(back.set().Windows) != len(after.Windows) {
		t.Fatalf("restore: %d windows, want %d", len(back.set().Windows), len(after.Windows))
	}
	ring.ack(at.Add(time.Hour).UnixMilli())
	if ring.set() != nil {
		t.Fatal("windows left after acknowledging them all")
	}
}

// TestLabelSourceConfig: a missing channel, a pipeline input as the label
// channel, a bad class in the map and a bound past one message are
// refused, naming the key.
func TestLabelSourceConfig(t *testing.T) {
	k := newKeys(t)
	for _, tt := range []struct {
		ls  LabelSourceConfig
		key string
	}{
		{LabelSourceConfig{}, "label_source.channel"},
		{LabelSourceConfig{Channel: "truth", Name: "-x"}, "label_source.name"},
		{LabelSourceConfig{Channel: "truth", Map: map[string]string{"1": ""}}, "label_source.map"},
		{LabelSourceConfig{Channel: "truth", MaxBytes: 1 << 30}, "label_source.max_bytes"},
		{LabelSourceConfig{Channel: "truth", Every: -1}, "label_source.every"},
	} {
		c := testConfig(t, k, "tcp://127.0.0.1:1")
		ls := tt.ls
		c.LabelSource = &ls
		err := c.Validate()
		if ce, ok := err.(*ConfigError); !ok || ce.Key != tt.key {
			t.Errorf("%+v: %v, want an error on %s", tt.ls, err, tt.key)
		}
	}
}

// writeLabelledReplay writes a replay whose truth column is 1 where x1 > 0.
func writeLabelledReplay(t testing.TB, dir string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("x1,x2,x3,truth\n")
	for i := range 200 {
		x := float64(i%20)/10 - 0.95
		truth := 0
		if x > 0 {
			truth = 1
		}
		fmt.Fprintf(&b, "%.4f,%.4f,%.4f,%d\n", x, 0.1, -0.1, truth)
	}
	path := filepath.Join(dir, "labelled.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestLabelSourceRequest: with a label source, the state names it; a
// labels request is answered with the windows labelled from the truth
// channel; a request's After drops the windows up to it; windows not
// acknowledged survive a restart.
func TestLabelSourceRequest(t *testing.T) {
	broker := mqtttest.Start(t)
	k := newKeys(t)
	f := newFleet(t, broker.URL(), k)
	cfg := testConfig(t, k, broker.URL())
	cfg.Sensors = []sensors.Config{{Kind: "replay", Name: "s", File: writeLabelledReplay(t, t.TempDir()), Rate: 100, Loop: true}}
	cfg.LabelSource = &LabelSourceConfig{Name: "truth", Channel: "truth", Map: map[string]string{"0": "normal", "1": "fault"}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	v1 := f.publishBundle(makeBundle(t, bundleOpts{release: 1, signer: k.release}))
	stop := startAgent(t, cfg, nil)
	if ev := f.terminal(f.deploy(v1, "r1", cmdOpts{}), 20*time.Second); ev.State != wire.JobSucceeded {
		t.Fatalf("install v1: %+v", ev)
	}
	n := 0
	ask := func(after int64) *wire.LabelSet {
		t.Helper()
		n++
		id := fmt.Sprintf("l%d", n)
		now := time.Now().Unix()
		r := &wire.Request{Fleet: testFleet, Device: testDevice, ID: id, Kind: wire.RequestLabels, After: after, IssuedAt: now - 1, ExpiresAt: now + 60}
		if err := r.Sign(k.command); err != nil {
			t.Fatal(err)
		}
		b, _ := r.Marshal()
		f.publish(f.topics.Requests(testDevice), b, false)
		var resp *wire.Response
		f.waitFor("the labels response", 10*time.Second, func() bool {
			for _, r := range f.responses {
				if r.ID == id {
					resp = r
					return true
				}
			}
			return false
		})
		if resp.Error != "" {
			t.Fatalf("labels response: %s", resp.Error)
		}
		return resp.Labels
	}
	// Five labelled windows at least (every window of the replay has a
	// truth label): six predictions.
	f.waitPredictions("", 6, func(*wire.Telemetry) bool { return true })
	set := ask(0)
	if set == nil || len(set.Windows) < 5 || set.Source != "truth" || set.Models[0].Bundle != v1 || set.Features[0] != "x1" {
		t.Fatalf("labels %+v", set)
	}
	for _, w := range set.Windows {
		if want := map[bool]string{true: "fault", false: "normal"}[w.X[0] > 0]; w.Label != want {
			t.Fatalf("window x1=%v labelled %q, want %q", w.X[0], w.Label, want)
		}
	}
	f.mu.Lock()
	named := false
	for _, st := range f.states {
		named = named || st.LabelSource == "truth"
	}
	f.mu.Unlock()
	if !named {
		t.Error("no state names the label source")
	}
	acked := set.Windows[len(set.Windows)-1].Time
	// A window after the acknowledged ones: two predictions in reports
	// begun after it.
	f.waitPredictions("after the acknowledged windows", 2, func(tm *wire.Telemetry) bool { return tm.From > acked })
	next := ask(acked)
	if next == nil || len(next.Windows) == 0 || next.Windows[0].Time <= acked {
		t.Fatalf("after acknowledging %d: %+v", acked, next)
	}
	// Stopped and started again: the windows not acknowledged are still there.
	stop()
	last := next.Windows[len(next.Windows)-1].Time
	f.mu.Lock()
	states := len(f.states)
	f.mu.Unlock()
	startAgent(t, cfg, nil)
	// A request is for now (QoS 0, not queued for an offline device): ask
	// once the agent is back.
	f.waitFor("the restarted agent's online state", 10*time.Second, func() bool {
		return len(f.states) > states && f.states[len(f.states)-1].Online
	})
	again := ask(acked)
	if again == nil || again.Windows[0].Time != next.Windows[0].Time || again.Windows[len(again.Windows)-1].Time < last {
		t.Fatalf("after a restart: %d windows from %d, want from %d through at least %d", len(again.Windows), again.Windows[0].Time, next.Windows[0].Time, last)
	}
}
