package fleet

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/store"
)

// The audit trail: every change to the fleet made through the API or the
// console (the actions of routeRules), every request refused for its role
// (403), operator changes made with `trit-fleet operators` and
// configuration reloads are recorded in the store (store.AppendAudit) with
// who, when, from where, what and the outcome. Failing to record is logged
// and does not fail the change: the trail must not become a way to stop
// the fleet (a full disk is the store's reserve's business).

// Audit records and reads the trail.
type Audit struct {
	db  Store
	lim store.AuditLimits
	log *slog.Logger
	now func() time.Time
}

// NewAudit returns the trail of db, bounded by lim.
func NewAudit(db Store, lim store.AuditLimits, log *slog.Logger, now func() time.Time) *Audit {
	if log == nil {
		log = slog.Default()
	}
	if now == nil {
		now = time.Now
	}
	return &Audit{db: db, lim: lim, log: log, now: now}
}

// Record appends rec, its time now if not set, its fields clipped to the
// store's bound.
func (a *Audit) Record(rec store.AuditRecord) {
	if rec.Time.IsZero() {
		rec.Time = a.now()
	}
	for _, f := range []*string{&rec.Who, &rec.Role, &rec.Remote, &rec.Agent, &rec.Action, &rec.Object, &rec.Detail} {
		*f = clipAudit(*f)
	}
	err := a.db.Update(func(tx store.Tx) error {
		_, err := store.AppendAudit(tx, rec, a.lim)
		return err
	})
	if err != nil {
		a.log.Error("audit: recording failed", "who", rec.Who, "action", rec.Action, "object", rec.Object, "outcome", rec.Outcome, "err", err)
	}
}

// clipAudit shortens s to store.MaxAuditField bytes at a UTF-8 boundary.
func clipAudit(s string) string {
	if len(s) <= store.MaxAuditField {
		return s
	}
	n := store.MaxAuditField - len("…")
	for n > 0 && s[n]&0xc0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}

// Entries returns the records q selects, oldest first.
func (a *Audit) Entries(q store.AuditQuery) ([]api.AuditEntry, error) {
	var recs []store.AuditRecord
	err := a.db.View(func(tx store.Tx) error {
		var err error
		recs, err = store.Audit(tx, q)
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make([]api.AuditEntry, len(recs))
	for i, r := range recs {
		out[i] = api.AuditEntry(r)
	}
	return out, nil
}

// AuditNote lets a route's handler say what it acted on and why, for the
// record the route's wrapper writes (the API's and the console's).
type AuditNote struct {
	Object, Detail string
	// Action, when not "", is recorded instead of the route's (an
	// emergency rollback).
	Action string
	// Status, when not 0, is the outcome to record instead of the
	// response's (a console action that failed answers with a redirect).
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
// outcome from the response status; object is rule's kind and the route's
// {id} or {name} unless the handler noted another.
func RequestRecord(r *http.Request, p Principal, rule Rule, action string, status int, detail string) store.AuditRecord {
	if action == "" {
		action = rule.Action
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

// Audit returns the service's audit trail.
func (s *Service) Audit() *Audit { return s.audit }

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
