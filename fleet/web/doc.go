// Package web is the HTTP edge the fleet's API (fleet/server) and its web
// console (fleet/console) share: which route needs which rule (routes.go:
// the permission and the audited action, fleet/access's values), what
// both read of a request for fleet/access, which knows no net/http
// (request.go: the bearer token, the audit record of a request with the
// handler's note, the status a handler answered), and the one guard in
// front of every route of both (guard.go: authenticate → check the role,
// a refusal audited → the handler, its answer captured and audited).
//
// Each transport keeps what differs, as the guard's fields: how it
// authenticates (the API's bearer token, throttled — fleet/server/api.go,
// guarded; the console's session cookie and, for a form, its CSRF token —
// fleet/console/session.go, authed and action), how it answers a refusal
// (a JSON error; a page), what it does to an allowed request, and the
// console's forms answering with a redirect.
package web
