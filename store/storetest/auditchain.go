package storetest

import (
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/trit-iot/trit/store"
)

// testAuditChain: the audit trail's hash chain reports, naming the first
// broken record, every edit and deletion of a record made behind the
// fleet's back — the first, a middle one, the newest; a record added past
// the head; the newest deleted and the head rewritten to match; a record
// changed and every record after it re-chained — and, with a checkpoint
// kept elsewhere, a trail cut back by someone holding the key (or an older
// copy of the database).
func testAuditChain(t *testing.T, db store.Database) {
	key := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
	pub := key.Public().(ed25519.PublicKey)
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	lim := store.AuditLimits{Key: key}
	app := func(i int) {
		t.Helper()
		rec := store.AuditRecord{Time: t0.Add(time.Duration(i) * time.Minute), Who: "otto", Role: "operator", Action: "rollout.create",
			Object: fmt.Sprintf("rollout/r%d", i), Outcome: store.AuditOK, Status: 200, Detail: "bundle 5f76dfea77f5; targets 3 devices"}
		if err := db.Update(func(tx store.Tx) error { _, err := store.AppendAudit(tx, rec, lim); return err }); err != nil {
			t.Fatal(err)
		}
	}
	verify := func(given ...store.AuditHead) *store.AuditReport {
		t.Helper()
		var rep *store.AuditReport
		if err := db.View(func(tx store.Tx) (err error) {
			rep, err = store.VerifyAudit(tx, []ed25519.PublicKey{pub}, given, t0)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return rep
	}
	raw := func(seq uint64) map[string]any {
		t.Helper()
		var m map[string]any
		if ok, err := db.Get(store.FleetAudit, store.AuditKey(seq), &m); err != nil || !ok {
			t.Fatalf("record %d: %v %v", seq, ok, err)
		}
		return m
	}
	put := func(seq uint64, m map[string]any) {
		t.Helper()
		if err := db.Put(store.FleetAudit, store.AuditKey(seq), m); err != nil {
			t.Fatal(err)
		}
	}
	edit := func(seq uint64, field, v string) { m := raw(seq); m[field] = v; put(seq, m) }
	del := func(seq uint64) {
		t.Helper()
		if err := db.Delete(store.FleetAudit, store.AuditKey(seq)); err != nil {
			t.Fatal(err)
		}
	}
	head := func() store.AuditHead {
		var h store.AuditHead
		if _, err := db.Get(store.FleetAuditMeta, "bounds", &h); err != nil {
			t.Fatal(err)
		}
		return h
	}
	record := func(seq uint64) store.AuditRecord {
		var r store.AuditRecord
		if _, err := db.Get(store.FleetAudit, store.AuditKey(seq), &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	reset := func() {
		t.Helper()
		for _, c := range []store.Collection{store.FleetAudit, store.FleetAuditMeta} {
			var keys []string
			db.ForEach(c, func(k string, _ []byte) error { keys = append(keys, k); return nil })
			for _, k := range keys {
				db.Delete(c, k)
			}
		}
		for i := 1; i <= 5; i++ {
			app(i)
		}
		if err := db.Update(func(tx store.Tx) error {
			_, _, err := store.AuditCheckpoint(tx, key, t0.Add(5*time.Minute))
			return err
		}); err != nil {
			t.Fatal(err)
		}
		for i := 6; i <= 10; i++ {
			app(i)
		}
		if rep := verify(); !rep.OK() || rep.Records != 10 || rep.Checkpoints != 1 {
			t.Fatalf("intact trail: %s %+v", rep.Summary(), rep)
		}
	}
	cases := []struct {
		name   string
		tamper func()
		broken uint64
		says   string
	}{
		{"edit the first record", func() { edit(1, "who", "olga") }, 1, "record 1 was changed"},
		{"edit a middle record", func() { edit(3, "who", "olga") }, 3, "record 3 was changed"},
		{"edit a record's link", func() { edit(4, "prev", strings.Repeat("0", 64)) }, 3, "record 3 was changed"},
		{"edit the newest record", func() { edit(10, "detail", "bundle 000000000000") }, 10, "record 10 was changed"},
		{"delete the first record", func() { del(1) }, 1, "records 1..1 are missing"},
		{"delete a middle record", func() { del(4) }, 4, "records 4..4 are missing"},
		{"delete the newest record", func() { del(10) }, 10, "records 10..10 are missing"},
		{"add a record past the head", func() { m := raw(10); m["seq"] = 11; put(11, m) }, 11, "past the trail's last record"},
		{"delete the newest and rewrite the head", func() {
			del(10)
			h := head()
			r9 := record(9)
			h.Next, h.Last = 10, store.AuditHash(&r9)
			db.Put(store.FleetAuditMeta, "bounds", h)
		}, 6, "signature does not verify"},
		{"change a record and re-chain the rest", func() {
			r := record(3)
			r.Who = "olga"
			db.Put(store.FleetAudit, store.AuditKey(3), r)
			prev := store.AuditHash(&r)
			for seq := uint64(4); seq <= 10; seq++ {
				r := record(seq)
				r.Prev = prev
				db.Put(store.FleetAudit, store.AuditKey(seq), r)
				prev = store.AuditHash(&r)
			}
			h := head()
			h.Last = prev
			db.Put(store.FleetAuditMeta, "bounds", h)
		}, 5, "record 5 does not match the checkpoint"},
	}
	for _, c := range cases {
		reset()
		c.tamper()
		rep := verify()
		if rep.OK() || rep.Broken != c.broken || !strings.Contains(strings.Join(rep.Problems, "; "), c.says) {
			t.Errorf("%s: broken %d, want %d saying %q: %s\n%v", c.name, rep.Broken, c.broken, c.says, rep.Summary(), rep.Problems)
		}
	}

	// Someone with the key cuts the trail back (or an older copy of the
	// database is put in place): the database alone cannot tell, a
	// checkpoint kept elsewhere can.
	reset()
	kept := head()
	del(9)
	del(10)
	if err := db.Update(func(tx store.Tx) error {
		h := head()
		r8 := record(8)
		h.Next, h.Last = 9, store.AuditHash(&r8)
		b, _ := json.Marshal(h) // re-signed below by a checkpoint
		var hh store.AuditHead
		json.Unmarshal(b, &hh)
		if err := tx.Put(store.FleetAuditMeta, "bounds", hh); err != nil {
			return err
		}
		_, _, err := store.AuditCheckpoint(tx, key, t0.Add(time.Hour))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if rep := verify(); !rep.OK() {
		t.Fatalf("a trail cut back and re-signed with the key: %s", rep.Summary())
	}
	if rep := verify(kept); rep.OK() || rep.Broken != 9 || !strings.Contains(rep.Problems[0], "records 9..10 were deleted") {
		t.Errorf("against the kept checkpoint: broken %d: %v", rep.Broken, rep.Problems)
	}

	// A key that is not the fleet's.
	reset()
	other := ed25519.NewKeyFromSeed([]byte(strings.Repeat("x", ed25519.SeedSize)))
	var rep *store.AuditReport
	db.View(func(tx store.Tx) (err error) {
		rep, err = store.VerifyAudit(tx, []ed25519.PublicKey{other.Public().(ed25519.PublicKey)}, nil, t0)
		return err
	})
	if rep.OK() || !strings.Contains(rep.Problems[0], "does not verify") {
		t.Errorf("checked against another key: %v", rep.Problems)
	}
}
