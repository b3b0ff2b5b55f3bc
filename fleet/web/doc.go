// Package web is the HTTP edge the fleet's API (fleet/server) and its web
// console (fleet/console) share: which route needs which rule (routes.go:
// the permission and the audited action, fleet/access's values), and what
// both read of a request for fleet/access, which knows no net/http
// (request.go: the bearer token, the audit record of a request with the
// handler's note, the status a handler answered).
//
// Each transport keeps its own guard — the API's bearer token
// (fleet/server/api.go, guarded), the console's session and CSRF token
// (fleet/console/session.go, authed and action) — over this one table.
package web
