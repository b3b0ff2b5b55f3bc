package server

import (
	"net/http"
	"strings"
	"testing"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet"
	"github.com/trit-iot/trit/fleet/access"
	"github.com/trit-iot/trit/store"
)

// Over the API with the two-person rule on: a machine account (ci) with
// a role that may approve is refused (issue 38: ci approved a person's
// rollout), as is the creator; a person approves. An emergency rollback
// by an operator is a 403, audited; by a responder it goes out at once,
// audited as rollout.emergency-rollback.
func TestApprovalOverTheAPI(t *testing.T) {
	f := newFixture(t, func(o *fleet.Options) { o.TwoPerson = true })
	srv := apiServer(t, f)
	ops := &access.Operators{DB: f.db, Now: f.clk.now}
	tok := map[string]string{}
	for _, o := range []api.OperatorRequest{{Name: "otto", Role: "operator"}, {Name: "olga", Role: "operator"},
		{Name: "ci", Role: "admin", Machine: true}, {Name: "rita", Role: "responder"}} {
		n, err := ops.Add(o, "test")
		if err != nil {
			t.Fatal(err)
		}
		tok[o.Name] = n.Token
	}
	old := f.addBundle(t, 1)
	f.running(t, "gw-1", old)
	hash := f.addBundle(t, 2)
	if code, out := call(t, srv, "POST", "/v1/rollouts", tok["otto"], []byte(`{"id":"r2","bundle":"`+hash+`","devices":["gw-1"]}`)); code != http.StatusOK {
		t.Fatalf("create: %d %s", code, out)
	}
	// In this order: the audit below lists them so (not a map: its order
	// changes from run to run).
	for _, tc := range []struct{ who, want string }{{"ci", "machine account"}, {"otto", "another operator"}} {
		if code, out := call(t, srv, "POST", "/v1/rollouts/r2/approve", tok[tc.who], []byte("{}")); code != http.StatusBadRequest || !strings.Contains(string(out), tc.want) {
			t.Fatalf("%s approves: %d %s", tc.who, code, out)
		}
	}
	if code, out := call(t, srv, "POST", "/v1/rollouts/r2/approve", tok["olga"], []byte("{}")); code != http.StatusOK || !strings.Contains(string(out), `"approved_by": "olga"`) {
		t.Fatalf("olga approves: %d %s", code, out)
	}
	if code, out := call(t, srv, "POST", "/v1/rollouts/r2/rollback", tok["otto"], []byte(`{"id":"r2-now","emergency":true}`)); code != http.StatusForbidden || !strings.Contains(string(out), "responder") {
		t.Fatalf("otto's emergency rollback: %d %s", code, out)
	}
	code, out := call(t, srv, "POST", "/v1/rollouts/r2/rollback", tok["rita"], []byte(`{"id":"r2-now","emergency":true}`))
	if code != http.StatusOK || !strings.Contains(string(out), `"emergency": true`) {
		t.Fatalf("rita's emergency rollback: %d %s", code, out)
	}
	f.svc.Audit().Flush()
	recs, err := auditOf(f.db, store.AuditQuery{Action: "rollout"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range recs {
		got = append(got, r.Who+" "+r.Action+" "+r.Outcome)
	}
	// (The refusal is written when its minute ends: after rita's.)
	want := "otto rollout.create ok|ci rollout.approve failed|otto rollout.approve failed|olga rollout.approve ok|rita rollout.emergency-rollback ok|otto rollout.emergency-rollback refused"
	if strings.Join(got, "|") != want {
		t.Fatalf("audit:\n%s\nwant\n%s", strings.Join(got, "|"), want)
	}
	if last := recs[len(recs)-2]; !strings.Contains(last.Detail, "approval none: emergency rollback by rita") || !strings.Contains(last.Detail, "created by rita") {
		t.Fatalf("the emergency rollback's record: %s", last.Detail)
	}
}
