package fleet

import (
	"fmt"
	"strings"
	"testing"

	"github.com/trit-iot/trit/store"
)

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
