package web

import (
	"strings"
	"testing"
)

// Every rule names a permission, and an action that two routes record —
// the API's and the console's way to do one thing — needs the same
// permission on both, so the two transports cannot disagree on who may
// do it.
func TestRouteRulesAgree(t *testing.T) {
	perm := map[string]string{} // action → the first pattern recording it
	for _, pattern := range RoutePatterns() {
		rule, err := RouteRule(pattern)
		if err != nil {
			t.Fatal(err)
		}
		if rule.Perm == "" {
			t.Errorf("%s: no permission", pattern)
		}
		if rule.Object != "" && !strings.Contains(pattern, "{id}") && !strings.Contains(pattern, "{name}") {
			t.Errorf("%s: object kind %q but no {id} or {name} to name it", pattern, rule.Object)
		}
		if rule.Action == "" {
			continue
		}
		if first, ok := perm[rule.Action]; ok {
			if other, _ := RouteRule(first); other.Perm != rule.Perm {
				t.Errorf("action %s needs %s on %s but %s on %s", rule.Action, rule.Perm, pattern, other.Perm, first)
			}
			continue
		}
		perm[rule.Action] = pattern
	}
	if _, err := RouteRule("GET /v1/nothing-here"); err == nil {
		t.Error("a route without a rule has one")
	}
}
