package web

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trit-iot/trit/fleet/access"
	"github.com/trit-iot/trit/store"
)

// TestGuard runs one route, the console's rollout buttons, behind a Guard
// as each edge configures it: no principal answers without the handler or
// a record; a role without the permission is audited as refused (the
// operation's action, Via's detail) before Refuse answers with
// access.Refused's words; an allowed request reaches Admit with the
// server's writer and then the handler, whose note (action, object,
// detail) and answer make the record — a 303 counts as done only with
// FormRedirects, and a noted failure's status counts on both edges, a
// response already begun (200 on the wire) included.
func TestGuard(t *testing.T) {
	db, err := store.Open(filepath.Join(t.TempDir(), "fleet.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	trail := access.NewAudit(db, store.AuditLimits{}, slog.New(slog.NewTextHandler(io.Discard, nil)), func() time.Time { return now })
	const pattern = "POST /console/rollouts/{id}/{op}"
	rule, err := RouteRule(pattern)
	if err != nil {
		t.Fatal(err)
	}
	who := map[string]access.Principal{"vic": {Name: "vic", Role: access.RoleViewer}, "otto": {Name: "otto", Role: access.RoleOperator}}

	var steps []string
	serve := func(g *Guard[access.Principal], h func(http.ResponseWriter, *http.Request, access.Principal), name, path string) int {
		t.Helper()
		steps = nil
		g.Rule, g.Record = rule, trail.Record
		g.Authenticate = func(w http.ResponseWriter, r *http.Request) (access.Principal, bool) {
			p, ok := who[name]
			if !ok {
				w.WriteHeader(http.StatusUnauthorized)
			}
			return p, ok
		}
		g.Principal = func(p access.Principal) access.Principal { return p }
		g.Refuse = func(w http.ResponseWriter, r *http.Request, p access.Principal, why string) {
			steps = append(steps, "refuse: "+why)
			w.WriteHeader(http.StatusForbidden)
		}
		g.Admit = func(w http.ResponseWriter, r *http.Request, p access.Principal) *http.Request {
			if _, wrapped := w.(*StatusWriter); wrapped {
				t.Error("Admit is given the guard's writer, not the server's")
			}
			steps = append(steps, "admit "+p.Name)
			return r
		}
		mux := http.NewServeMux()
		mux.HandleFunc(pattern, g.Handler(func(w http.ResponseWriter, r *http.Request, p access.Principal) {
			steps = append(steps, "handler "+p.Name)
			h(w, r, p)
		}))
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("POST", path, nil)
		req.RemoteAddr = "192.0.2.7:4000"
		mux.ServeHTTP(rec, req)
		return rec.Code
	}
	var seen uint64 // the last record returned
	records := func() []string {
		t.Helper()
		trail.Flush()
		var recs []store.AuditRecord
		if err := db.View(func(tx store.Tx) (err error) {
			recs, err = store.Audit(tx, store.AuditQuery{})
			return err
		}); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range recs {
			if r.Seq > seen {
				seen = r.Seq
				out = append(out, strings.Join([]string{r.Who, r.Action, r.Object, r.Outcome, http.StatusText(r.Status), r.Detail}, " | "))
			}
		}
		return out
	}
	check := func(what string, got []string, want ...string) {
		t.Helper()
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s:\n%s\nwant\n%s", what, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	redirect := func(w http.ResponseWriter, r *http.Request, _ access.Principal) {
		http.Redirect(w, r, "/console/rollouts/r1", http.StatusSeeOther)
	}

	if code := serve(&Guard[access.Principal]{}, redirect, "nobody", "/console/rollouts/r1/abort"); code != http.StatusUnauthorized {
		t.Errorf("no principal: %d", code)
	}
	check("no principal: steps", steps)
	check("no principal: records", records())

	if code := serve(&Guard[access.Principal]{Via: "web console"}, redirect, "vic", "/console/rollouts/r1/abort"); code != http.StatusForbidden {
		t.Errorf("a viewer: %d", code)
	}
	check("a viewer: steps", steps, "refuse: "+access.Refused(who["vic"], rule))
	check("a viewer: records", records(), "vic | rollout.abort | rollout/r1 | refused | Forbidden | web console")

	// The console's way: a redirect is done, a noted failure has its status.
	form := &Guard[access.Principal]{Via: "web console", FormRedirects: true}
	serve(form, redirect, "otto", "/console/rollouts/r1/pause")
	check("otto pauses: steps", steps, "admit otto", "handler otto")
	serve(form, func(w http.ResponseWriter, r *http.Request, p access.Principal) {
		NoteAudit(r, "rollout/r1-back", "new rollout r1-back")
		NoteAuditAction(r, "rollout.emergency-rollback")
		NoteAuditFailure(r, http.StatusForbidden, "not a responder")
		redirect(w, r, p)
	}, "otto", "/console/rollouts/r1/rollback")
	check("the console's records", records(),
		"otto | rollout.pause | rollout/r1 | ok | OK | web console",
		"otto | rollout.emergency-rollback | rollout/r1-back | refused | Forbidden | new rollout r1-back; not a responder")

	// The API's way: the status answered, no detail unless noted; a
	// failure noted after the answer began (GET /v1/backup's copy failing
	// on its first write, or half-way) is recorded as the failure, not as
	// the 200 already sent.
	plain := &Guard[access.Principal]{}
	serve(plain, redirect, "otto", "/console/rollouts/r1/resume")
	serve(plain, func(w http.ResponseWriter, r *http.Request, _ access.Principal) {
		w.WriteHeader(http.StatusConflict)
	}, "otto", "/console/rollouts/r1/abort")
	serve(plain, func(w http.ResponseWriter, r *http.Request, _ access.Principal) {
		w.Write([]byte("the first bytes"))
		NoteAuditFailure(r, http.StatusInternalServerError, "broken pipe")
	}, "otto", "/console/rollouts/r1/pause")
	check("the API's records", records(),
		"otto | rollout.resume | rollout/r1 | failed | See Other | ",
		"otto | rollout.abort | rollout/r1 | failed | Conflict | ",
		"otto | rollout.pause | rollout/r1 | failed | Internal Server Error | broken pipe")
}
