package fleet

import (
	"errors"
	"strings"
	"testing"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet/fault"
	"github.com/trit-iot/trit/store"
	"github.com/trit-iot/trit/wire"
)

// sampleSet is a device's ring of n windows at times base, base+1000, …
// classified by bundle hash (model vib, release 1).
func sampleSet(hash string, base int64, n int) *wire.SampleSet {
	set := &wire.SampleSet{Model: &wire.ModelRef{ID: "vib", Release: 1, Bundle: hash}, Features: []string{"a", "b", "c", "d"}}
	for i := range n {
		set.Samples = append(set.Samples, wire.Sample{Time: base + int64(i)*1000, X: []float32{float32(i), 1, 2, 3},
			Class: "normal", Margin: 0.05, Reason: wire.SampleLowMargin})
	}
	return set
}

func TestWindowsLabel(t *testing.T)           { testWindowsLabel(t, newFixture(t)) }
func TestWindowsLabelOnPostgres(t *testing.T) { testWindowsLabel(t, newFixtureOn(t, openPostgres(t))) }

// testWindowsLabel: pulled windows are stored once; labels are applied
// all or none; an unknown class, a window not stored, a window labelled
// before and one labelled twice in a request are refused, saying which,
// and change nothing.
func testWindowsLabel(t *testing.T, f *fixture) {
	hash := f.addBundle(t, 1)
	s := f.svc
	added, skipped, err := s.StoreWindows("gw-1", sampleSet(hash, 1_700_000_000_000, 5))
	if err != nil || added != 5 || skipped != 0 {
		t.Fatalf("stored %d (%d skipped): %v", added, skipped, err)
	}
	// The same ring again, one window newer: only that one is new.
	if added, _, err = s.StoreWindows("gw-1", sampleSet(hash, 1_700_000_001_000, 5)); err != nil || added != 1 {
		t.Fatalf("stored again: %d new, %v; want 1", added, err)
	}
	id := func(i int) string { return api.WindowID("gw-1", 1_700_000_000_000+int64(i)*1000) }
	if id(0) != "gw-1/1700000000000" {
		t.Fatalf("window ID %s", id(0))
	}
	bad := []struct {
		name   string
		labels []api.Label
		is     error
		says   string
	}{
		{"unknown class", []api.Label{lbl(id(0), "fault"), lbl(id(1), "sideways")}, fault.ErrBadRequest, `class "sideways" is not one of model vib release 1's classes`},
		{"not stored", []api.Label{lbl(id(0), "fault"), lbl("gw-1/1600000000000", "normal")}, fault.ErrNotFound, "window gw-1/1600000000000 (label 2): not stored"},
		{"twice in a request", []api.Label{lbl(id(0), "fault"), lbl(id(0), "normal")}, fault.ErrBadRequest, "labelled twice in this request (labels 1 and 2)"},
		{"malformed ID", []api.Label{lbl("gw-1/17", "fault")}, fault.ErrBadRequest, "13-digit"},
		{"empty class", []api.Label{lbl(id(0), "")}, fault.ErrBadRequest, "label 1"},
	}
	for _, tt := range bad {
		_, err := s.Label(api.LabelRequest{Labels: tt.labels, Via: api.LabelCLI}, "alice")
		if !errors.Is(err, tt.is) || !strings.Contains(err.Error(), tt.says) {
			t.Errorf("%s: %v, want %v saying %q", tt.name, err, tt.is, tt.says)
		}
	}
	if _, labelled, _ := s.WindowCounts(); labelled != 0 {
		t.Fatalf("%d labelled after refused requests, want 0", labelled)
	}
	res, err := s.Label(api.LabelRequest{Labels: []api.Label{lbl(id(0), "fault"), lbl(id(2), "normal")}, Via: api.LabelCLI}, "alice")
	if err != nil || res.Labelled != 2 {
		t.Fatalf("label: %+v, %v", res, err)
	}
	// A window labelled before refuses the whole request.
	_, err = s.Label(api.LabelRequest{Labels: []api.Label{lbl(id(3), "fault"), lbl(id(0), "normal")}}, "bob")
	if !errors.Is(err, ErrLabelled) || !strings.Contains(err.Error(), `labelled "fault" by alice`) {
		t.Fatalf("relabel: %v, want ErrLabelled naming alice's label", err)
	}
	yes := true
	l, err := s.Windows(api.WindowQuery{Model: "vib", Labelled: &yes})
	if err != nil || l.Total != 2 || len(l.Windows) != 2 {
		t.Fatalf("labelled windows: %+v, %v", l, err)
	}
	w := l.Windows[0]
	if w.ID != id(0) || w.Label != "fault" || w.LabelledBy != "alice" || w.Via != api.LabelCLI || w.Device != "gw-1" ||
		w.Model != "vib" || w.Release != 1 || w.Bundle != hash || len(w.X) != 4 || w.X[0] != 0 || w.Predicted != "normal" || w.LabelledAt.IsZero() {
		t.Fatalf("window %+v", w)
	}
	stored, labelled, err := s.WindowCounts()
	if err != nil || stored != 6 || labelled != 2 {
		t.Fatalf("counts %d stored, %d labelled, %v; want 6, 2", stored, labelled, err)
	}
	// Storing the ring again keeps the labels.
	if _, _, err := s.StoreWindows("gw-1", sampleSet(hash, 1_700_000_000_000, 6)); err != nil {
		t.Fatal(err)
	}
	if l, _ := s.Windows(api.WindowQuery{Labelled: &yes}); l.Total != 2 {
		t.Fatalf("%d labelled after storing the ring again, want 2", l.Total)
	}
	// Limit keeps the newest.
	if l, _ := s.Windows(api.WindowQuery{Limit: 2}); len(l.Windows) != 2 || l.Total != 6 || l.Windows[1].ID != id(5) {
		t.Fatalf("limit 2: %+v", l)
	}
}

// TestWindowsBound: past the bound the oldest unlabelled windows go;
// labelled ones stay, and when only they are left, new windows that do not
// fit are not stored.
func TestWindowsBound(t *testing.T) {
	defer func(b int) { windowBound = b }(windowBound)
	windowBound = 4
	f := newFixture(t)
	hash := f.addBundle(t, 1)
	s := f.svc
	if _, _, err := s.StoreWindows("gw-1", sampleSet(hash, 1000_000, 3)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Label(api.LabelRequest{Labels: []api.Label{lbl(api.WindowID("gw-1", 1000_000), "fault")}}, "alice"); err != nil {
		t.Fatal(err)
	}
	// 3 more: two unlabelled old ones go, the labelled oldest stays.
	added, skipped, err := s.StoreWindows("gw-2", sampleSet(hash, 2000_000, 3))
	if err != nil || added != 3 || skipped != 0 {
		t.Fatalf("added %d, skipped %d, %v", added, skipped, err)
	}
	l, _ := s.Windows(api.WindowQuery{})
	if l.Total != 4 || l.Windows[0].ID != "gw-1/0000001000000" || l.Windows[0].Label != "fault" || l.Windows[1].Device != "gw-2" {
		t.Fatalf("after the bound: %d windows, first %+v", l.Total, l.Windows[0])
	}
	// Label the rest: nothing can go, so nothing new is stored.
	var ls []api.Label
	for _, w := range l.Windows[1:] {
		ls = append(ls, api.Label{Window: w.ID, Label: "normal"})
	}
	if _, err := s.Label(api.LabelRequest{Labels: ls}, "alice"); err != nil {
		t.Fatal(err)
	}
	added, skipped, err = s.StoreWindows("gw-3", sampleSet(hash, 3000_000, 2))
	if err != nil || added != 0 || skipped != 2 {
		t.Fatalf("full of labels: added %d, skipped %d, %v; want 0, 2", added, skipped, err)
	}
	if st, lb, _ := s.WindowCounts(); st != 4 || lb != 4 {
		t.Fatalf("counts %d, %d", st, lb)
	}
	var c windowCounts
	if ok, err := f.db.Get(store.FleetWindows, windowCountKey, &c); !ok || err != nil || c.Stored != 4 {
		t.Fatalf("count document %+v %v %v", c, ok, err)
	}
}

func lbl(window, label string) api.Label { return api.Label{Window: window, Label: label} }
