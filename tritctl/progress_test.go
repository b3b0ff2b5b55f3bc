package tritctl

import (
	"bytes"
	"testing"

	"github.com/trit-iot/trit/training"
)

// TestProgressFinishesStages: a stage whose total was an estimate (the
// search stops early) ends at 100%, not at "search: 82/114", as soon as
// the next stage starts or training ends; a count above its total is
// clamped.
func TestProgressFinishesStages(t *testing.T) {
	var buf bytes.Buffer
	p := &progress{e: &env{stderr: &buf}}
	for i := 1; i <= 82; i++ {
		p.report(training.Event{Stage: "search", Done: i, Total: 114})
	}
	p.report(training.Event{Stage: "fit", Done: 1, Total: 2})
	p.report(training.Event{Stage: "fit", Done: 3, Total: 2})
	p.report(training.Event{Stage: "refit", Done: 1, Total: 4})
	p.finish()
	want := "search: 1/114\nsearch: 82/82 (done; 114 estimated at the start)\nfit: 1/2\nfit: 3/3\nrefit: 1/4\nrefit: 1/1 (done; 4 estimated at the start)\n"
	if buf.String() != want {
		t.Errorf("progress lines\n%s\nwant\n%s", buf.String(), want)
	}

	// On a terminal the bar of an ended stage is filled before it is
	// cleared.
	buf.Reset()
	p = &progress{e: &env{stderr: &buf, isTerminal: true}}
	p.report(training.Event{Stage: "search", Done: 82, Total: 114})
	bar := p.bar
	p.report(training.Event{Stage: "fit", Done: 1, Total: 2})
	if s := bar.State(); s.CurrentPercent != 1 {
		t.Errorf("search bar left at %.0f%%", 100*s.CurrentPercent)
	}
	bar = p.bar
	p.finish()
	if s := bar.State(); s.CurrentPercent != 1 {
		t.Errorf("last bar left at %.0f%%", 100*s.CurrentPercent)
	}
}
