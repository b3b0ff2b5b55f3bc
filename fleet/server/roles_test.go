package server

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet/access"
	"github.com/trit-iot/trit/fleet/web"
	"github.com/trit-iot/trit/store"
)

var (
	all     = access.Roles
	readers = []access.Role{access.RoleViewer, access.RoleReleaseManager, access.RoleOperator, access.RoleResponder, access.RoleAdmin}
)

// requestFor makes a request that the pattern matches, with path values
// that are well-formed but name nothing that exists (so an allowed change
// is a harmless 404 or 400).
func requestFor(pattern string) (method, path string) {
	method, path, ok := strings.Cut(pattern, " ")
	if !ok {
		method, path = "GET", "/no-such-route"
	}
	path = strings.NewReplacer("{id}", "nothing-here", "{name}", "nobody").Replace(path)
	if strings.HasSuffix(path, "/samples") {
		path += "?wait=1ms"
	}
	return method, path
}

// TestRouteByRole walks every route the API registers with every role (and
// the api.token_file's credential): each answer is 403 exactly when the
// table says the role may not, and every 403 is in the audit trail as
// refused. A registered route missing from wantAPIRoles fails, as does an
// entry of wantAPIRoles or an API rule of routeRules that no route uses.
func TestRouteByRole(t *testing.T) {
	f := newFixture(t)
	auth, err := access.NewAuth(f.db, testToken, nil, f.svc.Audit(), f.svc.Logger(), f.clk.now)
	if err != nil {
		t.Fatal(err)
	}
	h, patterns, err := apiMux(f.svc, auth)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	tokens := map[string]string{access.TokenFileOperator: testToken}
	roleOf := map[string]access.Role{access.TokenFileOperator: access.RoleAdmin}
	ops := &access.Operators{DB: f.db, Now: f.clk.now}
	for _, r := range access.Roles {
		n, err := ops.Add(api.OperatorRequest{Name: "as-" + string(r), Role: string(r)}, "test")
		if err != nil {
			t.Fatal(err)
		}
		tokens[n.Operator.Name], roleOf[n.Operator.Name] = n.Token, r
	}
	refused := 0
	for _, pattern := range patterns {
		want, ok := wantAPIRoles[pattern]
		if !ok {
			t.Errorf("route %q is registered but not in this test's table: say who may use it", pattern)
			continue
		}
		method, path := requestFor(pattern)
		for name, tok := range tokens {
			var body []byte
			if method == "POST" {
				body = []byte("{}")
			}
			code, out := call(t, srv, method, path, tok, body)
			allowed := slices.Contains(want, roleOf[name])
			switch {
			case code == http.StatusUnauthorized || code == http.StatusTooManyRequests:
				t.Errorf("%s as %s: %d %s", pattern, name, code, out)
			case allowed && code == http.StatusForbidden:
				t.Errorf("%s as %s (%s): 403, want allowed: %s", pattern, name, roleOf[name], out)
			case !allowed && code != http.StatusForbidden:
				t.Errorf("%s as %s (%s): %d, want 403", pattern, name, roleOf[name], code)
			case !allowed:
				refused++
			}
		}
	}
	for pattern := range wantAPIRoles {
		if !slices.Contains(patterns, pattern) {
			t.Errorf("table entry %q: the API registers no such route", pattern)
		}
	}
	for _, pattern := range web.RoutePatterns() {
		if !strings.Contains(pattern, "/console/") && !slices.Contains(patterns, pattern) {
			t.Errorf("routeRules has %q, which the API does not register", pattern)
		}
	}
	f.svc.Audit().Flush() // refusals are written once their minute ends
	recs, err := auditOf(f.db, store.AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range recs {
		if r.Outcome == store.AuditRefused {
			n += int(max(r.Count, 1))
			if r.Status != http.StatusForbidden || r.Who == "" || r.Role == "" || r.Remote == "" {
				t.Errorf("refusal record lacks who/role/where: %+v", r)
			}
		}
	}
	if refused == 0 || n != refused {
		t.Errorf("%d requests refused, %d refusals in the audit trail", refused, n)
	}
}

// A route without a rule stops the handler from being built.
func TestRouteWithoutRuleIsAnError(t *testing.T) {
	f := newFixture(t)
	defer func(saved func(string) (access.Rule, error)) { routeRule = saved }(routeRule)
	routeRule = func(pattern string) (access.Rule, error) {
		if pattern == "GET /v1/rollouts/{id}" {
			return access.Rule{}, fmt.Errorf("fleet: route %q has no role rule (fleet/web/routes.go routeRules)", pattern)
		}
		return web.RouteRule(pattern)
	}
	if _, err := Handler(f.svc, testToken); err == nil || !strings.Contains(err.Error(), "GET /v1/rollouts/{id}") {
		t.Fatalf("Handler with a route lacking a rule: %v", err)
	}
}

// wantAPIRoles is the API's route-by-role table as the docs state it
// (docs/FLEET.md, "Roles"), written out by hand so that a change to
// rolePerms or routeRules that changes who may do what fails here. "all"
// is every role; the api.token_file's credential is an admin.
var wantAPIRoles = map[string][]access.Role{
	"/":                                 all,
	"GET /v1/whoami":                    all,
	"GET /v1/devices":                   readers,
	"GET /v1/devices/{id}":              readers,
	"GET /v1/devices/{id}/health":       readers,
	"GET /v1/health":                    readers,
	"GET /v1/devices/{id}/samples":      {access.RoleAdmin},
	"GET /v1/windows":                   {access.RoleAdmin},
	"GET /v1/policies":                  readers,
	"POST /v1/labels":                   {access.RoleAdmin},
	"POST /v1/plan":                     {access.RoleOperator, access.RoleResponder, access.RoleReleaseManager, access.RoleAdmin},
	"DELETE /v1/devices/{id}":           {access.RoleOperator, access.RoleResponder, access.RoleAdmin},
	"POST /v1/devices/{id}/reset":       {access.RoleOperator, access.RoleResponder, access.RoleAdmin},
	"GET /v1/bundles":                   readers,
	"POST /v1/bundles":                  {access.RoleReleaseManager, access.RoleAdmin},
	"GET /v1/rollouts":                  readers,
	"POST /v1/rollouts":                 {access.RoleOperator, access.RoleResponder, access.RoleAdmin},
	"GET /v1/rollouts/{id}":             readers,
	"POST /v1/rollouts/{id}/pause":      {access.RoleOperator, access.RoleResponder, access.RoleAdmin},
	"POST /v1/rollouts/{id}/resume":     {access.RoleOperator, access.RoleResponder, access.RoleAdmin},
	"POST /v1/rollouts/{id}/abort":      {access.RoleOperator, access.RoleResponder, access.RoleAdmin},
	"POST /v1/rollouts/{id}/rollback":   {access.RoleOperator, access.RoleResponder, access.RoleAdmin},
	"POST /v1/rollouts/{id}/approve":    {access.RoleOperator, access.RoleResponder, access.RoleAdmin},
	"POST /v1/train":                    {access.RoleAdmin},
	"GET /v1/train":                     readers,
	"GET /v1/train/{id}":                readers,
	"GET /v1/train/{id}/bundle":         readers,
	"POST /v1/train/{id}/cancel":        {access.RoleAdmin},
	"GET /v1/backup":                    {access.RoleAdmin},
	"GET /metrics":                      all,
	"GET /v1/audit":                     {access.RoleAdmin},
	"GET /v1/audit/verify":              {access.RoleAdmin},
	"GET /v1/audit/export":              {access.RoleAdmin},
	"GET /v1/operators":                 {access.RoleAdmin},
	"POST /v1/operators":                {access.RoleAdmin},
	"POST /v1/operators/{name}/disable": {access.RoleAdmin},
	"POST /v1/operators/{name}/enable":  {access.RoleAdmin},
	"POST /v1/operators/{name}/rotate":  {access.RoleAdmin},
	"DELETE /v1/operators/{name}":       {access.RoleAdmin},
}
