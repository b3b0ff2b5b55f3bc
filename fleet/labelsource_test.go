package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet/fault"
	"github.com/trit-iot/trit/fleet/fleettest"
	"github.com/trit-iot/trit/store"
	"github.com/trit-iot/trit/wire"
)

// TestStoreLabelled: a device's labelled windows are stored labelled by
// its source, a window with a class the model does not have is refused
// and acknowledged, a window stored unlabelled before gets the label, one
// labelled by a person keeps it, and the acknowledgement point moves to
// the newest; an answer given twice stores nothing twice.
func TestStoreLabelled(t *testing.T) {
	f := newFixture(t)
	hash := f.addBundle(t, 1)
	s := f.svc
	// A person labelled window 3000 (pulled as a sample) before.
	pulled := sampleSet(hash, 3000, 2) // windows 3000 and 4000, unlabelled
	if _, _, err := s.StoreWindows("gw-1", pulled); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Label(api.LabelRequest{Labels: []api.Label{lbl("gw-1/0000000003000", "normal")}}, "alice"); err != nil {
		t.Fatal(err)
	}
	set := &wire.LabelSet{Source: "door", Models: []wire.ModelRef{{ID: "vib", Release: 1, Bundle: hash}}, Features: []string{"a", "b", "c", "d"}}
	for i, label := range []string{"fault", "normal", "fault", "normal", "sideways"} {
		set.Windows = append(set.Windows, wire.LabelledWindow{Time: int64(1000 * (i + 1)), X: []float32{float32(i), 0, 0, 0}, Class: "normal", Margin: 0.4, Label: label})
	}
	n, err := s.StoreLabelled("gw-1", set)
	if err != nil {
		t.Fatal(err)
	}
	// 1000, 2000 new; 3000 a person's already; 4000 labelled now; 5000 refused.
	if n != 3 {
		t.Fatalf("%d windows labelled, want 3", n)
	}
	if ack, _ := s.LabelAck("gw-1"); ack != 5000 {
		t.Fatalf("acknowledgement point %d, want 5000", ack)
	}
	yes := true
	l, _ := s.Windows(api.WindowQuery{Labelled: &yes})
	if l.Total != 4 {
		t.Fatalf("%d labelled windows, want 4", l.Total)
	}
	byID := map[string]api.FieldWindow{}
	for _, w := range l.Windows {
		byID[w.ID] = w
	}
	if w := byID["gw-1/0000000003000"]; w.Label != "normal" || w.LabelledBy != "alice" {
		t.Fatalf("a person's label replaced: %+v", w)
	}
	if w := byID["gw-1/0000000004000"]; w.Label != "normal" || w.Via != api.LabelGateway || w.LabelledBy != "gateway:gw-1/door" || w.Reason != wire.SampleLowMargin {
		t.Fatalf("pulled window labelled by the source: %+v", w)
	}
	if w := byID["gw-1/0000000001000"]; w.Label != "fault" || w.Model != "vib" || w.Bundle != hash || w.Reason != "label source" {
		t.Fatalf("new window: %+v", w)
	}
	if _, ok := byID["gw-1/0000000005000"]; ok {
		t.Fatal("a window with a class the model does not have was stored labelled")
	}
	// The same answer again (the device did not see the ack yet): nothing new.
	if n, err = s.StoreLabelled("gw-1", set); err != nil || n != 0 {
		t.Fatalf("again: %d, %v", n, err)
	}
	stored, labelled, _ := s.WindowCounts()
	if stored != 4 || labelled != 4 {
		t.Fatalf("counts %d stored, %d labelled; want 4, 4", stored, labelled)
	}
}

// TestStoreLabelledDamagedRecords: one stored window of a label source's
// answer that does not decode made the whole answer fail, every time the
// fleet asked, so none of the device's labelled windows was ever stored
// and its ring overflowed; so did a damaged count document or
// acknowledgement point. Now the damaged window is skipped, kept as it is
// and named in the log with the device's label, the others are stored and
// acknowledged, the count is recounted from the windows and the point
// written again.
func TestStoreLabelledDamagedRecords(t *testing.T) {
	logs := &fleettest.LockedBuffer{}
	f := newFixture(t, func(o *Options) { o.Logger = slog.New(slog.NewTextHandler(logs, nil)) })
	hash := f.addBundle(t, 1)
	s := f.svc
	if _, _, err := s.StoreWindows("gw-1", sampleSet(hash, 3000, 2)); err != nil { // windows 3000 and 4000, unlabelled
		t.Fatal(err)
	}
	breakTime(t, f.db, store.FleetWindows, windowKey("gw-1/0000000003000"), "time", false)
	var before json.RawMessage
	f.db.Get(store.FleetWindows, windowKey("gw-1/0000000003000"), &before)
	if err := f.db.Put(store.FleetWindows, windowCountKey, json.RawMessage(`{"stored":"2","labelled":0}`)); err != nil {
		t.Fatal(err)
	}
	if err := f.db.Put(store.FleetWindows, labelAckPrefix+"gw-1", json.RawMessage(`"900"`)); err != nil {
		t.Fatal(err)
	}
	if st, lb, err := s.WindowCounts(); err != nil || st != 2 || lb != 0 {
		t.Errorf("counts with the count document damaged: %d, %d, %v; want 2, 0 recounted", st, lb, err)
	}
	if ack, err := s.LabelAck("gw-1"); !errors.Is(err, fault.ErrDamaged) || ack != 0 || !strings.Contains(err.Error(), "fleet_windows record source/gw-1") {
		t.Errorf("LabelAck damaged: %d, %v; want 0 and ErrDamaged naming it", ack, err)
	}
	set := &wire.LabelSet{Source: "door", Models: []wire.ModelRef{{ID: "vib", Release: 1, Bundle: hash}}, Features: []string{"a", "b", "c", "d"}}
	for i, label := range []string{"fault", "normal", "fault", "normal", "fault"} {
		set.Windows = append(set.Windows, wire.LabelledWindow{Time: int64(1000 * (i + 1)), X: []float32{float32(i), 0, 0, 0}, Class: "normal", Margin: 0.4, Label: label})
	}

	// Asked with the damaged point: from the start, as if none.
	done := make(chan error, 1)
	go func() { _, err := s.PullLabels(context.Background(), "gw-1"); done <- err }()
	var req wire.Request
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if ms := f.pub.take("/requests"); len(ms) > 0 {
			if err := json.Unmarshal(ms[0].payload, &req); err != nil {
				t.Fatal(err)
			}
			break
		}
		select {
		case err := <-done:
			t.Fatalf("PullLabels returned before asking: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("no labels request published")
		}
	}
	if req.Kind != wire.RequestLabels || req.After != 0 {
		t.Fatalf("request %+v; want labels after 0 (the damaged point taken as none)", req)
	}
	if !s.reqs.deliver("gw-1", &wire.Response{V: 1, Device: "gw-1", ID: req.ID, Kind: string(wire.RequestLabels), Labels: set}) {
		t.Fatal("response not delivered")
	}
	if err := <-done; err != nil {
		t.Fatalf("PullLabels: %v; want the damaged window skipped, the others stored", err)
	}
	// 1000, 2000, 5000 new; 4000 labelled now; 3000 damaged, kept, acknowledged.
	if ack, err := s.LabelAck("gw-1"); err != nil || ack != 5000 {
		t.Errorf("acknowledgement point %d, %v; want 5000 written again", ack, err)
	}
	yes := true
	l, err := s.Windows(api.WindowQuery{Labelled: &yes})
	if err != nil || l.Total != 4 || len(l.Damaged) != 1 || l.Damaged[0].Key != windowKey("gw-1/0000000003000") {
		t.Fatalf("labelled windows %+v, %v; want 4, window 3000 damaged", l, err)
	}
	var after json.RawMessage
	if f.db.Get(store.FleetWindows, windowKey("gw-1/0000000003000"), &after); string(after) != string(before) {
		t.Errorf("damaged window overwritten: %s, want %s", after, before)
	}
	if st, lb, err := s.WindowCounts(); err != nil || st != 5 || lb != 4 {
		t.Errorf("counts %d stored, %d labelled, %v; want 5, 4 (the damaged window stored, its label unknown)", st, lb, err)
	}
	var c windowCounts
	if ok, err := f.db.Get(store.FleetWindows, windowCountKey, &c); !ok || err != nil || c != (windowCounts{5, 4}) {
		t.Errorf("count document %+v, %v, %v; want it written again", c, ok, err)
	}
	for _, want := range []string{
		`windows skipped: their stored record does not decode (it is kept)`, `windows=1 labels="gw-1/0000000003000=fault"`,
		`the acknowledgement point does not decode`, `the count document does not decode; recounted`,
	} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs.String())
		}
	}
}

// TestDamagedWindowCountRecounted: a count document that does not decode
// (or holds no count) stopped every storing and labelling of windows for
// good, since each reads it first. Now it is recounted from the windows
// present, a damaged window counted as stored and unlabelled, and written
// again with the change; the bound keeps holding.
func TestDamagedWindowCountRecounted(t *testing.T) {
	defer func(b int) { windowBound = b }(windowBound)
	windowBound = 7
	f := newFixture(t)
	hash := f.addBundle(t, 1)
	s := f.svc
	id := func(i int) string { return api.WindowID("gw-1", 1_700_000_000_000+int64(i)*1000) }
	if _, _, err := s.StoreWindows("gw-1", sampleSet(hash, 1_700_000_000_000, 4)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Label(api.LabelRequest{Labels: []api.Label{lbl(id(3), "fault")}}, "alice"); err != nil {
		t.Fatal(err)
	}
	breakTime(t, f.db, store.FleetWindows, windowKey(id(0)), "time", false)
	damage := func(doc string) {
		t.Helper()
		if err := f.db.Put(store.FleetWindows, windowCountKey, json.RawMessage(doc)); err != nil {
			t.Fatal(err)
		}
	}
	written := func(what string, want windowCounts) {
		t.Helper()
		var c windowCounts
		if ok, err := f.db.Get(store.FleetWindows, windowCountKey, &c); !ok || err != nil || c != want {
			t.Errorf("%s: count document %+v, %v, %v; want %+v written again", what, c, ok, err, want)
		}
	}
	damage(`{"stored":"4","labelled":1}`)
	if _, err := s.Label(api.LabelRequest{Labels: []api.Label{lbl(id(2), "normal")}}, "alice"); err != nil {
		t.Fatalf("Label with a damaged count: %v", err)
	}
	written("labelled", windowCounts{Stored: 4, Labelled: 2})
	for i, doc := range []string{`"count"`, `{"stored":-1,"labelled":0}`, `{"stored":1,"labelled":2}`} {
		damage(doc)
		if added, _, err := s.StoreWindows("gw-3", sampleSet(hash, 1_750_000_000_000+int64(i)*1000, 1)); err != nil || added != 1 {
			t.Fatalf("count %s: StoreWindows: %d added, %v; want 1", doc, added, err)
		}
		written(doc, windowCounts{Stored: 5 + i, Labelled: 2})
	}
	// 4 more past the bound of 7, recounted as 7 stored: the unlabelled
	// good windows (1 and gw-3's three) go, the damaged one (0) stays.
	damage(`{"stored":true}`)
	added, skipped, err := s.StoreWindows("gw-2", sampleSet(hash, 1_800_000_000_000, 4))
	if err != nil {
		t.Fatalf("StoreWindows with a damaged count: %v", err)
	}
	st, lb, err := s.WindowCounts()
	l, _ := s.Windows(api.WindowQuery{})
	if err != nil || st != 7 || lb != 2 || added != 4 || skipped != 0 || l.Total != 6 || len(l.Damaged) != 1 {
		t.Errorf("past the bound: %d added, %d skipped, counts %d, %d, %v, %d listed + %d damaged; want 4 added, 7 stored (6 + 1 damaged), 2 labelled",
			added, skipped, st, lb, err, l.Total, len(l.Damaged))
	}
}
