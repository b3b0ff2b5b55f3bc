package console

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet/access"
	"github.com/trit-iot/trit/fleet/web"
	"github.com/trit-iot/trit/store"
)

// wantConsoleRoles is the console's route-by-role table (docs/FLEET.md,
// "Roles"), by hand: "public" routes answer without a session. The
// metrics role and machine credentials cannot sign in at all.
var wantConsoleRoles = map[string][]access.Role{
	"GET /console/{$}":                 readers,
	"GET /console/login":               nil, // public
	"POST /console/login":              nil, // public
	"POST /console/logout":             readers,
	"GET /console/devices":             readers,
	"GET /console/devices/{id}":        readers,
	"GET /console/rollouts":            readers,
	"GET /console/new-rollout":         {access.RoleOperator, access.RoleResponder, access.RoleAdmin},
	"POST /console/rollouts":           {access.RoleOperator, access.RoleResponder, access.RoleAdmin},
	"GET /console/rollouts/{id}":       readers,
	"POST /console/rollouts/{id}/{op}": {access.RoleOperator, access.RoleResponder, access.RoleAdmin},
	"GET /console/bundles":             readers,
	"GET /console/labels":              {access.RoleAdmin},
	"POST /console/labels":             {access.RoleAdmin},
	"GET /console/audit":               {access.RoleAdmin},
	"GET /console/static/{name}":       nil, // public
	"/console/":                        nil, // public
}

var readers = []access.Role{access.RoleViewer, access.RoleReleaseManager, access.RoleOperator, access.RoleResponder, access.RoleAdmin}

// loginAs signs the client in with tok; it reports the sign-in's status.
func (c *client) loginAs(tok string) int {
	c.f.t.Helper()
	c.get("/console/login")
	return c.post("/console/login", url.Values{"csrf": {c.csrf}, "token": {tok}}).code
}

// TestConsoleRouteByRole walks every console route with a session of
// every role that can sign in: 403 exactly where the table says, every 403
// audited as refused; the metrics role and machine credentials cannot sign
// in. A route missing from the table fails.
func TestConsoleRouteByRole(t *testing.T) {
	f := newFixture(t)
	ops := &access.Operators{DB: f.db, Now: f.clk.now}
	clients := map[access.Role]*client{}
	for _, r := range access.Roles {
		n, err := ops.Add(api.OperatorRequest{Name: "as-" + string(r), Role: string(r)}, "test")
		if err != nil {
			t.Fatal(err)
		}
		c := f.client()
		code := c.loginAs(n.Token)
		if r == access.RoleMetrics {
			if code != http.StatusForbidden {
				t.Errorf("the metrics role signs in to the console: %d", code)
			}
			continue
		}
		if code != http.StatusSeeOther {
			t.Fatalf("%s cannot sign in: %d", r, code)
		}
		clients[r] = c
	}
	m, err := ops.Add(api.OperatorRequest{Name: "scraper", Role: "admin", Machine: true}, "test")
	if err != nil {
		t.Fatal(err)
	}
	if code := f.client().loginAs(m.Token); code != http.StatusForbidden {
		t.Errorf("a machine credential signs in to the console: %d", code)
	}
	refused := 0
	for _, pattern := range f.console.patterns {
		want, ok := wantConsoleRoles[pattern]
		if !ok {
			t.Errorf("console route %q is not in this test's table", pattern)
			continue
		}
		rule, _ := web.RouteRule(pattern)
		method, path, found := strings.Cut(pattern, " ")
		if !found {
			method, path = "GET", "/console/no-such-page"
		}
		path = strings.NewReplacer("{$}", "", "{id}", "nothing-here", "{op}", "pause", "{name}", "console.css").Replace(path)
		for role, c := range clients {
			if pattern == "POST /console/logout" || pattern == "POST /console/login" {
				continue // would end or replace the session; covered by TestLogin
			}
			var r response
			if method == "POST" {
				r = c.post(path, url.Values{"csrf": {c.csrf}})
			} else {
				r = c.get(path)
			}
			allowed := rule.Perm == access.PermPublic || slices.Contains(want, role)
			switch {
			case allowed && r.code == http.StatusForbidden:
				t.Errorf("%s as %s: 403, want allowed", pattern, role)
			case !allowed && r.code != http.StatusForbidden:
				t.Errorf("%s as %s: %d, want 403", pattern, role, r.code)
			case !allowed:
				refused++
			}
		}
	}
	for pattern := range wantConsoleRoles {
		if !slices.Contains(f.console.patterns, pattern) {
			t.Errorf("table entry %q: the console registers no such route", pattern)
		}
	}
	f.console.auth.Audit().Flush() // refusals are written once their minute ends
	recs, err := auditOf(f.db, store.AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range recs {
		if r.Outcome == store.AuditRefused {
			n += int(max(r.Count, 1))
		}
	}
	if refused == 0 || n != refused {
		t.Errorf("%d console requests refused, %d refusals audited", refused, n)
	}
}

// The console shows who is signed in and hides what the role cannot use;
// disabling the operator ends its session at its next request.
func TestConsoleShowsRoleAndHidesControls(t *testing.T) {
	f := newFixture(t)
	hash := f.bundle("vib", 1, nil)
	f.device("gw-1", nil, nil)
	if _, err := f.svc.CreateRollout(api.RolloutRequest{ID: "r1", Bundle: hash, Devices: []string{"gw-1"}}); err != nil {
		t.Fatal(err)
	}
	ops := &access.Operators{DB: f.db, Now: f.clk.now}
	viewer, _ := ops.Add(api.OperatorRequest{Name: "vera", Role: "viewer"}, "test")
	oper, _ := ops.Add(api.OperatorRequest{Name: "otto", Role: "operator"}, "test")
	cv, co := f.client(), f.client()
	cv.loginAs(viewer.Token)
	co.loginAs(oper.Token)
	rv, ro := cv.get("/console/rollouts/r1"), co.get("/console/rollouts/r1")
	if !strings.Contains(rv.body, "Signed in as <strong>vera</strong> (viewer)") || !strings.Contains(ro.body, "Signed in as <strong>otto</strong> (operator)") {
		t.Fatalf("who is signed in is not shown:\n%.2000s", rv.body)
	}
	if strings.Contains(rv.body, "/console/rollouts/r1/pause") || !strings.Contains(ro.body, "/console/rollouts/r1/pause") {
		t.Errorf("pause control: shown to the viewer %v, to the operator %v", strings.Contains(rv.body, "/r1/pause"), strings.Contains(ro.body, "/r1/pause"))
	}
	if r := cv.get("/console/rollouts"); strings.Contains(r.body, "New rollout") {
		t.Error("the viewer is offered a new rollout")
	}
	if r := co.post("/console/rollouts/r1/pause", url.Values{"csrf": {co.csrf}, "reason": {"checking"}}); r.code != http.StatusSeeOther {
		t.Fatalf("operator's pause: %d", r.code)
	}
	recs, _ := auditOf(f.db, store.AuditQuery{Object: "rollout/r1"})
	if len(recs) != 1 || recs[0].Who != "otto" || recs[0].Action != "rollout.pause" || recs[0].Outcome != store.AuditOK || !strings.Contains(recs[0].Detail, "checking") {
		t.Fatalf("the pause's audit record: %+v", recs)
	}
	if r := co.get("/console/rollouts/r1"); !strings.Contains(r.body, "Who did what") || !strings.Contains(r.body, "rollout.pause") {
		t.Error("the rollout page does not show who paused it")
	}
	admin := f.client().login()
	if r := admin.get("/console/audit?object=rollout%2Fr1"); r.code != 200 || !strings.Contains(r.body, "rollout.pause") || !strings.Contains(r.body, "otto") {
		t.Errorf("the audit page does not show otto's pause: %d", r.code)
	}
	if r := admin.get("/console/audit?operator=nobody"); r.code != 200 || strings.Contains(r.body, "rollout.pause") {
		t.Errorf("the audit page's operator filter: %d", r.code)
	}
	if _, err := ops.SetDisabled("otto", true); err != nil {
		t.Fatal(err)
	}
	if r := co.get("/console/rollouts/r1"); r.code != http.StatusSeeOther || !strings.HasPrefix(r.header.Get("Location"), "/console/login") {
		t.Fatalf("a disabled operator's session still works: %d", r.code)
	}
}

// auditOf reads the audit trail of db.
func auditOf(db store.Database, q store.AuditQuery) (rs []store.AuditRecord, err error) {
	err = db.View(func(tx store.Tx) error { rs, err = store.Audit(tx, q); return err })
	return rs, err
}
