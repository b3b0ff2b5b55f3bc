package fleet

import (
	"testing"

	"github.com/trit-iot/trit/api"
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
