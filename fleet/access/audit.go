package access

import (
	"crypto/ed25519"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/store"
)

// The audit trail: every change to the fleet made through the API or the
// console (the actions of the HTTP edge's route table), every request refused for its role
// (403), operator changes made with `trit-fleet operators` and
// configuration reloads are recorded in the store (store.AppendAudit) with
// who, when, from where, what and the outcome, in a hash chain whose head
// the fleet signs at every append (store/auditchain.go; auditcheck.go
// checks it). Failing to record is logged and does not fail the change:
// the trail must not become a way to stop the fleet (a full disk is the
// store's reserve's business).
//
// Refusals are aggregated so that nobody can flood the trail: the
// refusals of one source (an IPv4 address, an IPv6 /64) and operator in
// one minute are one record with their count, written when the minute
// ends (and at Flush), and shown by Entries meanwhile. At most
// maxPendingRefusals such records wait at once; past that, the minute's
// other refusals share one record. Nothing younger than the retention
// (AuditLimits.MaxAge) is ever deleted to make room.

// maxPendingRefusals bounds the aggregated refusal records of one minute
// that wait in memory.
const maxPendingRefusals = 1024

// maxRefusalActions bounds the distinct actions one aggregated record
// counts by name; the rest are counted as "others".
const maxRefusalActions = 8

// Audit records and reads the trail.
type Audit struct {
	db   store.Database
	lim  store.AuditLimits
	log  *slog.Logger
	now  func() time.Time
	keys []ed25519.PublicKey // what the chain is checked against (auditcheck.go)

	mu      sync.Mutex
	pending map[refusalKey]*refusals
	timer   bool // a flush is scheduled
	check   chainCheck
}

// chainCheck is what the checks found, for Alarms (auditcheck.go).
type chainCheck struct {
	latest  *store.AuditReport
	highest store.AuditHead // the highest head seen by this process
}

// refusalKey is what one aggregated refusal record stands for.
type refusalKey struct {
	source, who string
	minute      time.Time
}

// refusals is one aggregated refusal record waiting for its minute to
// end.
type refusals struct {
	rec     store.AuditRecord // the first refusal, Count the total
	actions map[string]uint64
}

// NewAudit returns the trail of db, bounded by lim and signed with
// lim.Key (whose public key it is then checked against).
func NewAudit(db store.Database, lim store.AuditLimits, log *slog.Logger, now func() time.Time) *Audit {
	if log == nil {
		log = slog.Default()
	}
	if now == nil {
		now = time.Now
	}
	a := &Audit{db: db, lim: lim, log: log, now: now, pending: map[refusalKey]*refusals{}}
	if len(lim.Key) == ed25519.PrivateKeySize {
		a.keys = []ed25519.PublicKey{lim.Key.Public().(ed25519.PublicKey)}
	}
	return a
}

// TrustKeys adds public keys the trail may have been signed with before
// (the fleet's earlier command keys, [audit] trusted_keys).
func (a *Audit) TrustKeys(keys ...ed25519.PublicKey) { a.keys = append(a.keys, keys...) }

// Record appends rec, its time now if not set, its fields clipped to the
// store's bound; a refusal is aggregated (above).
func (a *Audit) Record(rec store.AuditRecord) {
	if rec.Time.IsZero() {
		rec.Time = a.now()
	}
	for _, f := range []*string{&rec.Who, &rec.Role, &rec.Remote, &rec.Agent, &rec.Action, &rec.Object, &rec.Detail} {
		*f = clipAudit(*f)
	}
	if rec.Outcome == store.AuditRefused {
		a.refused(rec)
		return
	}
	a.append(rec)
}

// append writes rec now.
func (a *Audit) append(rec store.AuditRecord) {
	err := a.db.Update(func(tx store.Tx) error {
		_, err := store.AppendAudit(tx, rec, a.lim)
		return err
	})
	if err != nil {
		a.log.Error("audit: recording failed", "who", rec.Who, "action", rec.Action, "object", rec.Object, "outcome", rec.Outcome, "err", err)
	}
}

// refused adds rec to its source's, operator's and minute's record.
func (a *Audit) refused(rec store.AuditRecord) {
	k := refusalKey{source: addrKey(rec.Remote), who: rec.Who, minute: rec.Time.UTC().Truncate(time.Minute)}
	a.mu.Lock()
	defer a.mu.Unlock()
	p := a.pending[k]
	if p == nil {
		if len(a.pending) >= maxPendingRefusals {
			k.source, k.who = "(other sources)", "(other operators)"
			p = a.pending[k]
		}
		if p == nil {
			if k.who == "(other operators)" {
				rec.Who, rec.Role, rec.Remote, rec.Agent = k.who, "", k.source, ""
			}
			p = &refusals{rec: rec, actions: map[string]uint64{}}
			a.pending[k] = p
		}
	}
	p.rec.Count++
	act := rec.Action
	if _, ok := p.actions[act]; !ok && len(p.actions) >= maxRefusalActions {
		act = "others"
	}
	p.actions[act]++
	if !a.timer {
		a.timer = true
		time.AfterFunc(time.Minute+time.Second, func() { a.flushBefore(a.now().UTC().Truncate(time.Minute)) })
	}
}

// Flush writes every waiting refusal record now (shutdown, tests).
func (a *Audit) Flush() { a.flushBefore(time.Time{}) }

// flushBefore writes the waiting refusal records of the minutes before
// minute (zero: all), oldest first.
func (a *Audit) flushBefore(minute time.Time) {
	a.mu.Lock()
	var out []*refusals
	for k, p := range a.pending {
		if minute.IsZero() || k.minute.Before(minute) {
			out = append(out, p)
			delete(a.pending, k)
		}
	}
	a.timer = false
	if len(a.pending) > 0 {
		a.timer = true
		time.AfterFunc(time.Minute, func() { a.flushBefore(a.now().UTC().Truncate(time.Minute)) })
	}
	a.mu.Unlock()
	slices.SortFunc(out, func(x, y *refusals) int { return x.rec.Time.Compare(y.rec.Time) })
	for _, p := range out {
		a.append(p.finish())
	}
}

// finish is the record p stands for: its first refusal, counted, with
// the actions refused in the detail when there was more than one.
func (p *refusals) finish() store.AuditRecord {
	rec := p.rec
	if rec.Count > 1 {
		var parts []string
		for _, act := range slices.Sorted(maps.Keys(p.actions)) {
			parts = append(parts, fmt.Sprintf("%s ×%d", act, p.actions[act]))
		}
		rec.Detail = clipAudit(strings.TrimSpace(fmt.Sprintf("refused %d times in this minute: %s. %s", rec.Count, strings.Join(parts, ", "), rec.Detail)))
	}
	return rec
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

// Entries returns the records q selects, oldest first, with the refusal
// records still waiting for their minute to end among them by time
// (their Seq 0).
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
	a.mu.Lock()
	var waiting []store.AuditRecord
	for _, p := range a.pending {
		if r := p.finish(); q.Match(&r) {
			waiting = append(waiting, r)
		}
	}
	a.mu.Unlock()
	if len(waiting) > 0 {
		// In time order among the stored ones.
		recs = append(recs, waiting...)
		slices.SortStableFunc(recs, func(x, y store.AuditRecord) int { return x.Time.Compare(y.Time) })
	}
	if q.Limit > 0 && len(recs) > q.Limit {
		recs = recs[len(recs)-q.Limit:]
	}
	out := make([]api.AuditEntry, len(recs))
	for i, r := range recs {
		out[i] = entry(r)
	}
	return out, nil
}

// entry is r as the API serves it: the one conversion of the store's
// record to api.AuditEntry. A Go conversion, so the compiler refuses a
// field the two do not share; TestAuditEntryIsTheRecord checks their JSON
// names.
func entry(r store.AuditRecord) api.AuditEntry { return api.AuditEntry(r) }
