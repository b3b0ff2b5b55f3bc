package console

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet"
	"github.com/trit-iot/trit/fleet/access"
	"github.com/trit-iot/trit/store"
	"github.com/trit-iot/trit/wire"
)

// TestConsoleEmergencyRollbackAudited: with the two-person rule on, an
// emergency rollback made with the console's Emergency box by a
// responder is audited under its own action, rollout.emergency-rollback,
// as the API's is (docs/FLEET.md, "Emergency rollback"), and an
// operator's, refused, is too (issue 38: the console recorded both as
// rollout.rollback, the route's action, ignoring the handler's).
func TestConsoleEmergencyRollbackAudited(t *testing.T) {
	f := newFixtureWith(t, func(o *fleet.Options) { o.TwoPerson = true })
	h1, h2 := populate(f)
	if _, err := f.svc.CreateRollout(api.RolloutRequest{ID: "r2", Bundle: h2, Devices: []string{"gw-1"}}); err != nil {
		t.Fatal(err)
	}
	f.deliver(f.svc.Topics().State("gw-1"), &wire.State{Device: "gw-1", Session: 2, Online: true, Health: "ok", AgentVersion: "0.2.0",
		Labels:   map[string]string{"site": "north"},
		Model:    &wire.ModelRef{ID: "vib", Release: 2, Bundle: h2, Install: "committed"},
		Previous: &wire.ModelRef{ID: "vib", Release: 1, Bundle: h1, Install: "committed"}})
	ops := &access.Operators{DB: f.db, Now: f.clk.now}
	signedIn := map[string]*client{}
	for _, o := range []api.OperatorRequest{{Name: "otto", Role: "operator"}, {Name: "rita", Role: "responder"}} {
		n, err := ops.Add(o, "test")
		if err != nil {
			t.Fatal(err)
		}
		c := f.client()
		if code := c.loginAs(n.Token); code != http.StatusSeeOther {
			t.Fatalf("%s signs in: %d", o.Name, code)
		}
		c.get("/console/rollouts/r2")
		signedIn[o.Name] = c
	}

	otto := signedIn["otto"]
	if r := otto.post("/console/rollouts/r2/rollback", url.Values{"csrf": {otto.csrf}, "id": {"r2-otto"}, "emergency": {"on"}}); r.code != http.StatusSeeOther {
		t.Fatalf("otto's emergency rollback: %d %s", r.code, r.body)
	}
	if _, err := f.svc.GetRollout("r2-otto"); err == nil {
		t.Fatal("otto's emergency rollback was made")
	}
	rita := signedIn["rita"]
	if r := rita.post("/console/rollouts/r2/rollback", url.Values{"csrf": {rita.csrf}, "id": {"r2-now"}, "emergency": {"on"}}); r.code != http.StatusSeeOther ||
		r.header.Get("Location") != "/console/rollouts/r2-now" {
		t.Fatalf("rita's emergency rollback: %d to %q: %s", r.code, r.header.Get("Location"), r.body)
	}
	nr, err := f.svc.GetRollout("r2-now")
	if err != nil || !nr.Rollback || !nr.Approval.Emergency {
		t.Fatalf("rita's emergency rollback: %+v, %v", nr, err)
	}

	f.svc.Audit().Flush()
	var recs []store.AuditRecord
	if err := f.db.View(func(tx store.Tx) (err error) {
		recs, err = store.Audit(tx, store.AuditQuery{Action: "rollout"})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range recs {
		got = append(got, r.Who+" "+r.Action+" "+r.Outcome)
	}
	// (The refusal is written when its minute ends: after rita's.)
	want := "rita rollout.emergency-rollback ok|otto rollout.emergency-rollback refused"
	if strings.Join(got, "|") != want {
		t.Fatalf("audit:\n%s\nwant\n%s", strings.Join(got, "|"), want)
	}
	for _, w := range []string{"web console", "new rollout r2-now", "approval none: emergency rollback by rita", "created by rita"} {
		if !strings.Contains(recs[0].Detail, w) {
			t.Errorf("the emergency rollback's record has no %q:\n%s", w, recs[0].Detail)
		}
	}
}
