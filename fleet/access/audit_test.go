package access

import (
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/store"
)

// auditFixture is a trail over a new bbolt store, signed with a fixed key,
// on a clock the test sets.
type auditFixture struct {
	db    *store.DB
	audit *Audit
	now   time.Time
}

func newAuditFixture(t *testing.T, lim store.AuditLimits) *auditFixture {
	t.Helper()
	db, err := store.Open(filepath.Join(t.TempDir(), "fleet.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if lim.Key == nil {
		lim.Key = ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
	}
	f := &auditFixture{db: db, now: time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)}
	f.audit = NewAudit(db, lim, slog.New(slog.NewTextHandler(io.Discard, nil)), func() time.Time { return f.now })
	return f
}

// A viewer's 100,000 refused requests in one minute are one record with
// their count, and remove no earlier record, with the bound on records
// far below them (issue 38: 1,200 refusals used to leave none of a
// 1,000-record trail). Refusals from two sources, or in two minutes, are
// apart; the waiting record is shown before it is written.
func TestRefusalsCannotEraseTheTrail(t *testing.T) {
	f := newAuditFixture(t, store.AuditLimits{MaxRecords: 1000})
	a := f.audit
	for i := range 5 {
		a.Record(store.AuditRecord{Who: "otto", Role: "operator", Remote: "10.0.0.2", Action: "rollout.create", Object: fmt.Sprintf("rollout/r%d", i), Outcome: store.AuditOK, Status: 200})
	}
	start := f.now.Truncate(time.Minute)
	for i := range 100000 {
		f.now = start.Add(time.Duration(i) * 500 * time.Microsecond) // 50 s
		action := "rollout.abort"
		if i%2 == 1 {
			action = "read GET /v1/audit"
		}
		a.Record(store.AuditRecord{Who: "vera", Role: "viewer", Remote: "10.0.0.9", Action: action, Object: "rollout/r1", Outcome: store.AuditRefused, Status: 403})
	}
	es, err := a.Entries(store.AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 6 || es[5].Seq != 0 || es[5].Count != 100000 {
		t.Fatalf("before the minute ends: %d entries, the last %+v; want 5 and the waiting refusal record", len(es), es[len(es)-1])
	}
	a.Record(store.AuditRecord{Who: "vera", Role: "viewer", Remote: "10.0.0.10", Action: "rollout.abort", Outcome: store.AuditRefused, Status: 403})
	f.now = start.Add(time.Minute)
	a.Record(store.AuditRecord{Who: "vera", Role: "viewer", Remote: "10.0.0.9", Action: "rollout.abort", Outcome: store.AuditRefused, Status: 403})
	a.Flush()
	var recs []store.AuditRecord
	f.db.View(func(tx store.Tx) (err error) { recs, err = store.Audit(tx, store.AuditQuery{}); return err })
	if len(recs) != 8 {
		t.Fatalf("%d records, want 5 changes and 3 refusal records (two sources, two minutes)", len(recs))
	}
	for i := range 5 {
		if recs[i].Object != fmt.Sprintf("rollout/r%d", i) || recs[i].Seq != uint64(i+1) {
			t.Fatalf("record %d: %+v: an earlier record was removed", i, recs[i])
		}
	}
	agg := recs[5]
	if agg.Count != 100000 || agg.Who != "vera" || agg.Remote != "10.0.0.9" || !strings.Contains(agg.Detail, "rollout.abort ×50000") || !strings.Contains(agg.Detail, "read GET /v1/audit ×50000") {
		t.Fatalf("the minute's record: %+v", agg)
	}
	if recs[6].Remote != "10.0.0.10" || recs[6].Count != 1 || recs[7].Count != 1 {
		t.Fatalf("the other source's and the next minute's: %+v %+v", recs[6], recs[7])
	}
	rep, err := a.Verify()
	if err != nil || !rep.OK() {
		t.Fatalf("the chain after it all: %v %s", err, rep.Summary())
	}
}

// Refusals from more sources than maxPendingRefusals in one minute share
// one record past the bound.
func TestRefusalRecordsBounded(t *testing.T) {
	f := newAuditFixture(t, store.AuditLimits{})
	a := f.audit
	for i := range maxPendingRefusals + 500 {
		a.Record(store.AuditRecord{Who: "vera", Role: "viewer", Remote: fmt.Sprintf("10.%d.%d.1", i/256, i%256), Action: "rollout.abort", Outcome: store.AuditRefused, Status: 403})
	}
	a.Flush()
	var n, other uint64
	var recs []store.AuditRecord
	f.db.View(func(tx store.Tx) (err error) { recs, err = store.Audit(tx, store.AuditQuery{}); return err })
	for _, r := range recs {
		n += r.Count
		if r.Remote == "(other sources)" {
			other = r.Count
		}
	}
	if len(recs) != maxPendingRefusals+1 || n != maxPendingRefusals+500 || other != 500 {
		t.Fatalf("%d records counting %d refusals, %d of them shared", len(recs), n, other)
	}
}

// TestAuditEntryIsTheRecord: the API's audit entry is the store's record
// under the same JSON names, field for field (entry converts one to the
// other, which the compiler allows only while their fields' names and
// types agree; their tags it does not see), so /v1/audit and the trail's
// export name every field alike. A record with every field set encodes
// to the same JSON either way.
func TestAuditEntryIsTheRecord(t *testing.T) {
	rt, et := reflect.TypeFor[store.AuditRecord](), reflect.TypeFor[api.AuditEntry]()
	if rt.NumField() != et.NumField() {
		t.Fatalf("store.AuditRecord has %d fields, api.AuditEntry %d", rt.NumField(), et.NumField())
	}
	for i := range rt.NumField() {
		rf, ef := rt.Field(i), et.Field(i)
		if rf.Name != ef.Name || rf.Type != ef.Type || rf.Tag.Get("json") != ef.Tag.Get("json") {
			t.Errorf("field %d: store.AuditRecord %s %s `json:%q`, api.AuditEntry %s %s `json:%q`",
				i, rf.Name, rf.Type, rf.Tag.Get("json"), ef.Name, ef.Type, ef.Tag.Get("json"))
		}
	}
	r := store.AuditRecord{Seq: 7, Time: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC), Who: "otto", Role: "operator",
		Remote: "192.0.2.7", Agent: "tritctl", Action: "rollout.abort", Object: "rollout/r1", Outcome: store.AuditFailed,
		Status: 409, Detail: "already finished", Count: 3, Prev: strings.Repeat("ab", 32)}
	rv := reflect.ValueOf(r)
	for i := range rv.NumField() {
		if rv.Field(i).IsZero() {
			t.Fatalf("the test's record leaves %s unset", rt.Field(i).Name)
		}
	}
	want, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(entry(r))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("the API's entry:\n%s\nthe store's record:\n%s", got, want)
	}
}
