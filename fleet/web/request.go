package web

import (
	"context"
	"net"
	"net/http"
	"strings"

	"github.com/trit-iot/trit/fleet/access"
	"github.com/trit-iot/trit/store"
)

// What the API and the console read of a request for fleet/access, which
// takes plain values: the bearer token, the source address, and the
// audit record a route's wrapper writes (access.Audit.Record).

// Bearer returns r's bearer token.
func Bearer(r *http.Request) string {
	tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return tok
}

// AuditNote lets a route's handler say what it acted on and why, for the
// record the route's wrapper writes (the API's and the console's).
type AuditNote struct {
	Object, Detail string
	// Action, when not "", is recorded instead of the route's (an
	// emergency rollback).
	Action string
	// Status, when not 0, is the outcome to record instead of the
	// response's (a console action that failed answers with a redirect;
	// a response that failed after it began has answered 200).
	Status int
}

type auditNoteKey struct{}

// NoteAudit sets the object (when not "") and detail of the request's
// audit record, if it has one (WithAuditNote).
func NoteAudit(r *http.Request, object, detail string) {
	if n, ok := r.Context().Value(auditNoteKey{}).(*AuditNote); ok {
		if object != "" {
			n.Object = object
		}
		n.Detail = detail
	}
}

// NoteAuditAction sets the action of the request's audit record.
func NoteAuditAction(r *http.Request, action string) {
	if n, ok := r.Context().Value(auditNoteKey{}).(*AuditNote); ok {
		n.Action = action
	}
}

// NoteAuditFailure records that r's action failed with status, for why.
func NoteAuditFailure(r *http.Request, status int, why string) {
	if n, ok := r.Context().Value(auditNoteKey{}).(*AuditNote); ok {
		n.Status = status
		if n.Detail == "" {
			n.Detail = why
		} else {
			n.Detail += "; " + why
		}
	}
}

// WithAuditNote returns r with a note for its handler to fill.
func WithAuditNote(r *http.Request) (*http.Request, *AuditNote) {
	n := &AuditNote{}
	return r.WithContext(context.WithValue(r.Context(), auditNoteKey{}, n)), n
}

// remoteHost is r's source address without the port.
func remoteHost(r *http.Request) string {
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return host
	}
	return r.RemoteAddr
}

// RequestRecord is the audit record of p's request r under rule, with its
// outcome from the response status; action, when "", is the rule's
// (ruleAction); object is rule's kind and the route's {id} or {name}
// unless the handler noted another.
func RequestRecord(r *http.Request, p access.Principal, rule access.Rule, action string, status int, detail string) store.AuditRecord {
	if action == "" {
		action = ruleAction(r, rule)
	}
	if action == "" { // a read, refused
		action = "read " + r.Method + " " + r.URL.Path
	}
	var object string
	if rule.Object != "" {
		id := r.PathValue("id")
		if id == "" {
			id = r.PathValue("name")
		}
		object = rule.Object + "/" + id
	}
	outcome := store.AuditOK
	switch {
	case status == http.StatusForbidden:
		outcome = store.AuditRefused
	case status >= 300:
		outcome = store.AuditFailed
	}
	return store.AuditRecord{Who: p.Name, Role: string(p.Role), Remote: remoteHost(r), Agent: r.UserAgent(),
		Action: action, Object: object, Outcome: outcome, Status: status, Detail: detail}
}

// StatusWriter remembers the status a handler answered, for the audit
// trail (the API's and the console's).
type StatusWriter struct {
	http.ResponseWriter
	Status int
}

func (w *StatusWriter) WriteHeader(code int) {
	if w.Status == 0 {
		w.Status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the connection (the API's
// long routes lift its deadlines).
func (w *StatusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *StatusWriter) Write(b []byte) (int, error) {
	if w.Status == 0 {
		w.Status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}
