package web

import (
	"cmp"
	"net/http"

	"github.com/trit-iot/trit/fleet/access"
	"github.com/trit-iot/trit/store"
)

// Guard is the check in front of one route, the API's and the console's:
//
//  1. who made the request — the edge's Authenticate (the API's bearer
//     token, throttled; the console's session cookie and, for a form, its
//     CSRF token), which answers the request itself when it finds no one;
//  2. whether that principal's role holds the route's permission — when
//     it does not, the refusal is audited (RequestRecord, 403) and then
//     answered by the edge's Refuse (the API's JSON error, the console's
//     page), with access.Refused's words;
//  3. for a route whose rule records an action, the handler's answer
//     captured (StatusWriter) and its audit record written with the
//     handler's note (WithAuditNote: object, detail, action, and a
//     failure's status, which the record has whatever was answered: a
//     backup that fails after its first byte answered 200).
//
// S is what Authenticate learns of a request (the API's access.Principal,
// the console's session); the handler is given it. What differs between
// the edges is a field here, not a branch: how they authenticate, how they
// refuse, what they do to an allowed request (Admit), the detail of a
// record without one (Via), and whether a form answers with a redirect
// (FormRedirects).
type Guard[S any] struct {
	// Rule is the route's (RouteRule).
	Rule access.Rule
	// Record writes an audit record (access.Audit.Record).
	Record func(store.AuditRecord)
	// Authenticate finds who made r. When it cannot (no credential, a
	// wrong or throttled one, an ended session, a missing CSRF token, the
	// store did not answer) it answers w itself and returns false.
	Authenticate func(w http.ResponseWriter, r *http.Request) (S, bool)
	// Principal is who s is, for the role check and the audit record.
	Principal func(s S) access.Principal
	// Refuse answers a request whose role lacks the rule's permission,
	// which the guard has audited; why is access.Refused's sentence.
	Refuse func(w http.ResponseWriter, r *http.Request, s S, why string)
	// Admit, when not nil, is what the edge does to an allowed request
	// before its handler, with w as the server gave it (the API lifts a
	// long route's deadlines, bounds the body and puts the principal in
	// the context); it returns the request the handler is given.
	Admit func(w http.ResponseWriter, r *http.Request, s S) *http.Request
	// Via, when not "", is the detail of a record whose handler noted
	// none, refusals included (the console's "web console").
	Via string
	// FormRedirects says the edge answers its forms with a redirect to the
	// next page (the console: Post/Redirect/Get): a 303 See Other is
	// recorded as done (200). Either way a failure the handler noted
	// (NoteAuditFailure) is recorded with the status it noted, else the
	// record has the status the handler answered.
	FormRedirects bool
}

// Handler returns h behind g.
func (g *Guard[S]) Handler(h func(http.ResponseWriter, *http.Request, S)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s, ok := g.Authenticate(w, r)
		if !ok {
			return
		}
		p := g.Principal(s)
		if !p.Role.Can(g.Rule.Perm) {
			g.Record(RequestRecord(r, p, g.Rule, "", http.StatusForbidden, g.Via))
			g.Refuse(w, r, s, access.Refused(p, g.Rule))
			return
		}
		if g.Admit != nil {
			r = g.Admit(w, r, s)
		}
		if g.Rule.Action == "" {
			h(w, r, s)
			return
		}
		r, note := WithAuditNote(r)
		sw := &StatusWriter{ResponseWriter: w}
		h(sw, r, s)
		status := cmp.Or(sw.Status, http.StatusOK)
		if g.FormRedirects && status == http.StatusSeeOther { // done, and shown on the next page
			status = http.StatusOK
		}
		// A failure the handler noted is the outcome, whatever it could
		// still answer: a response already begun has its 200 on the wire.
		status = cmp.Or(note.Status, status)
		rec := RequestRecord(r, p, g.Rule, note.Action, status, cmp.Or(note.Detail, g.Via))
		if note.Object != "" {
			rec.Object = note.Object
		}
		g.Record(rec)
	}
}
