package console

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/wire"
)

// TestLabelsPage: the page lists a model's windows with their features,
// prediction and margin and a class to choose; the chosen labels are
// applied all or none (a class the model does not have refuses the whole
// page); the model's accuracy on its labelled windows shows.
func TestLabelsPage(t *testing.T) {
	f := newFixture(t)
	hash := f.bundle("vib", 1, nil)
	set := &wire.SampleSet{Model: &wire.ModelRef{ID: "vib", Release: 1, Bundle: hash}, Features: []string{"rms", "peak", "crest"}}
	for i := range 3 {
		set.Samples = append(set.Samples, wire.Sample{Time: 1_777_000_000_000 + int64(i)*1000, X: []float32{float32(i), 2, 3}, Class: "normal", Margin: 0.05, Reason: wire.SampleLowMargin})
	}
	if _, _, err := f.svc.StoreWindows("gw-1", set); err != nil {
		t.Fatal(err)
	}
	c := f.client().login()
	page := c.get("/console/labels")
	for _, want := range []string{"Label windows of vib", "gw-1/1777000002000", "rms=2, peak=2, crest=3", `<option value="fault">fault</option>`, "low-margin", "0.050", "3 unlabelled"} {
		if page.code != http.StatusOK || !strings.Contains(page.body, want) {
			t.Fatalf("labels page (%d) lacks %q:\n%s", page.code, want, page.body)
		}
	}
	// Row 0 is the newest window. One class the model does not have: nothing is labelled.
	form := url.Values{"csrf": {c.csrf}, "model": {"vib"}, "window-0": {"gw-1/1777000002000"}, "label-0": {"fault"},
		"window-1": {"gw-1/1777000001000"}, "label-1": {"sideways"}, "window-2": {"gw-1/1777000000000"}, "label-2": {""}}
	if r := c.post("/console/labels", form); r.code != http.StatusSeeOther {
		t.Fatalf("post: %d", r.code)
	}
	if page = c.get("/console/labels?model=vib"); !strings.Contains(page.body, "Nothing labelled") || !strings.Contains(page.body, `class &#34;sideways&#34; is not one of`) {
		t.Fatalf("refusal not shown:\n%s", page.body)
	}
	if _, labelled, _ := f.svc.WindowCounts(); labelled != 0 {
		t.Fatalf("%d labelled after a refused page", labelled)
	}
	form.Set("label-1", "normal")
	c.post("/console/labels", form)
	page = c.get("/console/labels?model=vib")
	if !strings.Contains(page.body, "2 windows labelled.") || !strings.Contains(page.body, "50.0%</strong> (1 of 2)") || !strings.Contains(page.body, "console 2") {
		t.Fatalf("after labelling:\n%s", page.body)
	}
	yes := true
	l, err := f.svc.Windows(api.WindowQuery{Labelled: &yes})
	if err != nil || l.Total != 2 || l.Windows[1].Via != api.LabelConsole || l.Windows[1].LabelledBy == "" {
		t.Fatalf("labelled windows %+v, %v", l, err)
	}
	// The unlabelled window is the only one offered now.
	if !strings.Contains(page.body, "1 unlabelled") || strings.Contains(page.body, `value="gw-1/1777000002000"`) {
		t.Fatalf("offered windows:\n%s", page.body)
	}
}
