package fleet

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/trit-iot/trit/store"
)

// A viewer's 100,000 refused requests in one minute are one record with
// their count, and remove no earlier record, with the bound on records
// far below them (issue 38: 1,200 refusals used to leave none of a
// 1,000-record trail). Refusals from two sources, or in two minutes, are
// apart; the waiting record is shown before it is written.
func TestRefusalsCannotEraseTheTrail(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.Audit = store.AuditLimits{MaxRecords: 1000} })
	a := f.svc.Audit()
	for i := range 5 {
		a.Record(store.AuditRecord{Who: "otto", Role: "operator", Remote: "10.0.0.2", Action: "rollout.create", Object: fmt.Sprintf("rollout/r%d", i), Outcome: store.AuditOK, Status: 200})
	}
	start := f.clk.t.Truncate(time.Minute)
	for i := range 100000 {
		f.clk.t = start.Add(time.Duration(i) * 500 * time.Microsecond) // 50 s
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
	f.clk.t = start.Add(time.Minute)
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
	f := newFixture(t)
	a := f.svc.Audit()
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

// The service's trail is signed with its command key: it verifies, a
// change made behind its back is an alarm naming the record, and a trail
// cut back while it runs is caught against the highest head it saw.
func TestAuditChainChecked(t *testing.T) {
	f := newFixture(t)
	a := f.svc.Audit()
	for i := range 4 {
		a.Record(store.AuditRecord{Who: "otto", Action: "rollout.pause", Object: fmt.Sprintf("rollout/r%d", i), Outcome: store.AuditOK})
	}
	if err := a.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	if rep, err := a.Verify(); err != nil || !rep.OK() || rep.Checkpoints != 1 || len(f.svc.Alarms()) != 0 {
		t.Fatalf("intact: %v %s, alarms %+v", err, rep.Summary(), f.svc.Alarms())
	}
	var r store.AuditRecord
	f.db.Get(store.FleetAudit, store.AuditKey(2), &r)
	r.Who = "olga"
	f.db.Put(store.FleetAudit, store.AuditKey(2), r)
	rep, err := a.Verify()
	if err != nil || rep.OK() || rep.Broken != 2 {
		t.Fatalf("record 2 changed: %v broken %d: %s", err, rep.Broken, rep.Summary())
	}
	al := f.svc.Alarms()
	if len(al) != 1 || al[0].Name != "audit-chain" || !strings.Contains(al[0].Text, "first broken record 2") {
		t.Fatalf("alarms: %+v", al)
	}
	f.db.Put(store.FleetAudit, store.AuditKey(2), store.AuditRecord{}) // put back below
	r.Who = "otto"
	f.db.Put(store.FleetAudit, store.AuditKey(2), r)
	if rep, _ := a.Verify(); !rep.OK() || len(f.svc.Alarms()) != 0 {
		t.Fatalf("put back: %s, alarms %+v", rep.Summary(), f.svc.Alarms())
	}
	// Cut back to record 3 and the head rewritten and re-signed as the
	// fleet would (someone with the key, or an older copy of the file).
	if err := f.db.Update(func(tx store.Tx) error {
		if err := tx.Delete(store.FleetAudit, store.AuditKey(4)); err != nil {
			return err
		}
		var h store.AuditHead
		tx.Get(store.FleetAuditMeta, "bounds", &h)
		var r3 store.AuditRecord
		tx.Get(store.FleetAudit, store.AuditKey(3), &r3)
		h.Next, h.Last = 4, store.AuditHash(&r3)
		if err := tx.Put(store.FleetAuditMeta, "bounds", h); err != nil {
			return err
		}
		for _, k := range []string{"checkpoint/" + store.AuditKey(5)} {
			tx.Delete(store.FleetAuditMeta, k)
		}
		_, _, err := store.AuditCheckpoint(tx, f.svc.cmdKey, f.clk.t)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if rep, _ := a.Verify(); rep.OK() || !strings.Contains(strings.Join(rep.Problems, ";"), "went back while trit-fleet ran") {
		t.Fatalf("a trail cut back while running: %s", rep.Summary())
	}
}
