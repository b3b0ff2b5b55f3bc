package console

import (
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet/fleettest"
	"github.com/trit-iot/trit/store"
	"github.com/trit-iot/trit/wire"
)

// sectionOf returns the part of page in the section labelled by heading
// id h ("" if there is none).
func sectionOf(page, h string) string {
	i := strings.Index(page, `aria-labelledby="`+h+`"`)
	if i < 0 {
		return ""
	}
	s := page[i:]
	if j := strings.Index(s, "</section>"); j >= 0 {
		s = s[:j]
	}
	return s
}

// TestRolloutPageListsUnknownGate: a rollout's page lists the unknown
// gate among its gates (issue 38: the console's gate list omitted it) —
// a shadow rollout's shadow gates name the unknown-share gate and point
// to the confidence gate, whose section gives its unknown and confidence
// limits; a rollout made with the console's form, which has no gate
// fields, shows the default confidence gate; an uncalibrated bundle's
// rollout says why it has none.
func TestRolloutPageListsUnknownGate(t *testing.T) {
	f := newFixture(t)
	calibrated := func(release uint64) string {
		info, err := f.svc.Registry().Add(fleettest.CalibratedBundle(t, "vib", release, f.release))
		if err != nil {
			t.Fatal(err)
		}
		return info.Hash
	}
	h1, h2 := calibrated(1), calibrated(2)
	for id, site := range map[string]string{"gw-1": "north", "gw-2": "north", "gw-3": "south", "gw-4": "east"} {
		f.deliver(f.svc.Topics().State(id), &wire.State{Device: id, Session: 1, Online: true, Health: "ok", AgentVersion: "0.5.0",
			Labels: map[string]string{"site": site}, Model: &wire.ModelRef{ID: "vib", Release: 1, Bundle: h1, Install: "committed"}})
	}
	if _, err := f.svc.CreateRollout(api.RolloutRequest{ID: "rs", Bundle: h2, Selector: map[string]string{"site": "north"},
		Pace:   api.Pace{Phases: []api.Phase{{Count: 1}, {Percent: 100}}},
		Shadow: &api.ShadowPolicy{MinAgreement: 0.9, MaxUnknownIncrease: 0.05},
		Gate:   &api.ConfidenceGate{MaxUnknownIncrease: 0.04, MaxConfidenceDrop: 0.15, MinWindows: 70}}); err != nil {
		t.Fatal(err)
	}
	f.svc.Tick()
	c := f.client().login()

	page := c.get("/console/rollouts/rs").body
	gates, conf := sectionOf(page, "h-gates"), sectionOf(page, "h-confidence-gate")
	for _, w := range []string{"Shadow gates", "agreement with the active model at least 90%",
		"<li>unknown share at most 5% above the active model", "<li>the confidence gate, below</li>"} {
		if !strings.Contains(gates, w) {
			t.Errorf("rs: the shadow gates do not list %q:\n%s", w, gates)
		}
	}
	for _, w := range []string{`<li id="gate-unknown">unknown share at most 4% above the active model`,
		`<li id="gate-confidence">confidence of the windows answered (not unknown) at most 15% below the active model`} {
		if !strings.Contains(conf, w) {
			t.Errorf("rs: the confidence gate does not list %q:\n%s", w, conf)
		}
	}

	// From the console's form: the default gate (api.DefaultConfidenceGate).
	c.get("/console/new-rollout?bundle=" + h2)
	r := c.post("/console/rollouts", url.Values{"csrf": {c.csrf}, "id": {"from-form"}, "bundle": {h2}, "devices": {"gw-3"}})
	if r.code != http.StatusSeeOther || r.header.Get("Location") != "/console/rollouts/from-form" {
		t.Fatalf("create from the form: %d to %q: %s", r.code, r.header.Get("Location"), r.body)
	}
	page = c.get("/console/rollouts/from-form").body
	conf = sectionOf(page, "h-confidence-gate")
	for _, w := range []string{"reports 50 windows with it before it counts as succeeded",
		`<li id="gate-unknown">unknown share at most 10% above the active model`,
		`<li id="gate-confidence">confidence of the windows answered (not unknown) at most 20% below the active model`} {
		if !strings.Contains(conf, w) {
			t.Errorf("from-form: the confidence gate does not list %q:\n%s", w, conf)
		}
	}
	if sectionOf(page, "h-gates") != "" {
		t.Error("from-form: a rollout without shadow shows shadow gates")
	}

	// An uncalibrated bundle's rollout: no gate, and why.
	plain := f.bundle("plain", 1, nil)
	if _, err := f.svc.CreateRollout(api.RolloutRequest{ID: "rp", Bundle: plain, Devices: []string{"gw-4"}}); err != nil {
		t.Fatal(err)
	}
	conf = sectionOf(c.get("/console/rollouts/rp").body, "h-confidence-gate")
	if strings.Contains(conf, "gate-unknown") || !strings.Contains(conf, "none: the bundle has no calibration") {
		t.Errorf("rp: an uncalibrated bundle's confidence gate:\n%s", conf)
	}
}

// TestConsoleRollbackRecordsCreator: a rollback made with the console's
// button is audited with its creator — the operator signed in — and the
// whole rollback: bundle, devices, rollback flag (issue 38: rollbacks
// made with tritctl rollout rollback or the console recorded no
// creator).
func TestConsoleRollbackRecordsCreator(t *testing.T) {
	f := newFixture(t)
	h1, h2 := populate(f)
	if _, err := f.svc.CreateRollout(api.RolloutRequest{ID: "r2", Bundle: h2, Devices: []string{"gw-1"}}); err != nil {
		t.Fatal(err)
	}
	f.svc.Tick()
	f.deliver(f.svc.Topics().State("gw-1"), &wire.State{Device: "gw-1", Session: 2, Online: true, Health: "ok", AgentVersion: "0.2.0",
		Labels:   map[string]string{"site": "north"},
		Model:    &wire.ModelRef{ID: "vib", Release: 2, Bundle: h2, Install: "committed"},
		Previous: &wire.ModelRef{ID: "vib", Release: 1, Bundle: h1, Install: "committed"}})
	c := f.client().login()
	c.get("/console/rollouts/r2")
	if r := c.post("/console/rollouts/r2/rollback", url.Values{"csrf": {c.csrf}, "id": {"r2-rollback"}}); r.code != http.StatusSeeOther {
		t.Fatalf("rollback: %d %s", r.code, r.body)
	}
	nr, err := f.svc.GetRollout("r2-rollback")
	if err != nil || !nr.Rollback || !reflect.DeepEqual(nr.Order, []string{"gw-1"}) {
		t.Fatalf("rollback rollout %+v, %v", nr, err)
	}
	var recs []store.AuditRecord
	if err := f.db.View(func(tx store.Tx) (err error) {
		recs, err = store.Audit(tx, store.AuditQuery{Action: "rollout.rollback"})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 {
		t.Fatalf("%d rollout.rollback records, want 1: %+v", len(recs), recs)
	}
	rec := recs[0]
	if rec.Who == "" || rec.Outcome != store.AuditOK || nr.CreatedBy != rec.Who {
		t.Fatalf("the rollback's record: by %q, %s; the rollout says created by %q", rec.Who, rec.Outcome, nr.CreatedBy)
	}
	for _, w := range []string{"web console", "new rollout r2-rollback", "bundle " + h1[:12] + " (vib release 1)", "targets 1 devices (gw-1)",
		"rollback yes", "created by " + rec.Who} {
		if !strings.Contains(rec.Detail, w) {
			t.Errorf("the rollback's record has no %q:\n%s", w, rec.Detail)
		}
	}
}
