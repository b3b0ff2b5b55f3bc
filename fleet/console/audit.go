package console

import (
	"net/http"
	"slices"
	"strings"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet/access"
	"github.com/trit-iot/trit/store"
)

// The audit page (admin) and the "who did what" of rollout and device
// pages.

// auditPageLimit bounds the entries the audit page shows, historyLimit
// those of a rollout or device page.
const (
	auditPageLimit = 500
	historyLimit   = 50
)

type auditData struct {
	Operator, Object, Action string
	Limit                    int
	Entries                  []api.AuditEntry
}

// auditPage shows the newest entries of the trail, filtered by operator,
// object and action.
func (c *Console) auditPage(w http.ResponseWriter, r *http.Request, s sessionView) {
	q := r.URL.Query()
	clipQ := func(k string, n int) string {
		v := strings.TrimSpace(q.Get(k))
		if len(v) > n {
			v = v[:n]
		}
		return v
	}
	d := &auditData{Operator: clipQ("operator", 64), Object: clipQ("object", 200), Action: clipQ("action", 64), Limit: auditPageLimit}
	es, err := c.auth.Audit().Entries(store.AuditQuery{Who: d.Operator, Object: d.Object, Action: d.Action, Limit: auditPageLimit})
	if err != nil {
		c.fail(w, r, err)
		return
	}
	slices.Reverse(es)
	d.Entries = es
	c.render(w, r, http.StatusOK, "audit", &view{Title: "Audit trail", Nav: "audit", CSRF: s.csrf, Flash: s.flash, Data: d})
}

// history returns the newest entries about object ("rollout/r1"), newest
// first; an error is logged and shows nothing.
func (c *Console) history(object string) []api.AuditEntry {
	es, err := c.auth.Audit().Entries(store.AuditQuery{Object: object, Limit: historyLimit})
	if err != nil {
		c.log.Error("console: reading the audit trail failed", "object", object, "err", err)
		return nil
	}
	slices.Reverse(es)
	return es
}

// can reports whether the session's role holds p.
func can(s sessionView, p access.Perm) bool { return s.p.Role.Can(p) }
