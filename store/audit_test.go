package store

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func auditAt(t0 time.Time, i int, who, action, object string) AuditRecord {
	return AuditRecord{Time: t0.Add(time.Duration(i) * time.Minute), Who: who, Role: "operator", Action: action, Object: object, Outcome: AuditOK, Status: 200}
}

func appendAudit(db *DB, r AuditRecord, lim AuditLimits) (seq uint64, err error) {
	err = db.Update(func(tx Tx) error { seq, err = AppendAudit(tx, r, lim); return err })
	return seq, err
}

func audit(db *DB, q AuditQuery) (rs []AuditRecord, err error) {
	err = db.View(func(tx Tx) error { rs, err = Audit(tx, q); return err })
	return rs, err
}

func TestAuditAppendQueryAndBound(t *testing.T) {
	db := openTest(t, nil)
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	lim := AuditLimits{MaxRecords: 5, MaxAge: 5 * time.Minute}
	for i := range 8 {
		who := []string{"alice", "bob"}[i%2]
		seq, err := appendAudit(db, auditAt(t0, i, who, "rollout.pause", fmt.Sprintf("rollout/r%d", i)), lim)
		if err != nil || seq != uint64(i+1) {
			t.Fatalf("append %d: seq %d, %v", i, seq, err)
		}
	}
	all, err := audit(db, AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	// Records 1 and 2 are more than 5 minutes older than record 8; 3 is
	// exactly at the retention and stays. MaxRecords deletes nothing.
	if len(all) != 6 || all[0].Seq != 3 || all[5].Seq != 8 {
		t.Fatalf("kept %d records from seq %d; want 3..8: %+v", len(all), all[0].Seq, all)
	}
	bob, _ := audit(db, AuditQuery{Who: "bob"})
	if len(bob) != 3 || bob[0].Seq != 4 || bob[2].Seq != 8 {
		t.Fatalf("bob's: %+v", bob)
	}
	obj, _ := audit(db, AuditQuery{Object: "rollout/r5"})
	if len(obj) != 1 || obj[0].Seq != 6 {
		t.Fatalf("object rollout/r5: %+v", obj)
	}
	if none, _ := audit(db, AuditQuery{Object: "rollout/r"}); len(none) != 0 {
		t.Fatalf("object prefix must end at a '/': %+v", none)
	}
	kind, _ := audit(db, AuditQuery{Object: "rollout", Action: "rollout", Limit: 2})
	if len(kind) != 2 || kind[0].Seq != 7 || kind[1].Seq != 8 {
		t.Fatalf("newest 2 rollouts: %+v", kind)
	}
	since, _ := audit(db, AuditQuery{Since: t0.Add(6 * time.Minute)})
	if len(since) != 2 || since[0].Seq != 7 {
		t.Fatalf("since minute 6: %+v", since)
	}
	// Age: a record two hours later leaves only itself.
	lim.MaxAge = time.Hour
	if _, err := appendAudit(db, auditAt(t0, 120, "carol", "backup", ""), lim); err != nil {
		t.Fatal(err)
	}
	if all, _ := audit(db, AuditQuery{}); len(all) != 1 || all[0].Who != "carol" || all[0].Seq != 9 {
		t.Fatalf("after the age bound: %+v", all)
	}
	if err := db.Check(); err != nil {
		t.Fatal(err)
	}
}

func TestAuditRefusesIncompleteRecords(t *testing.T) {
	db := openTest(t, nil)
	good := auditAt(time.Now(), 0, "alice", "device.reset", "device/gw-1")
	for name, change := range map[string]func(*AuditRecord){
		"no time":     func(r *AuditRecord) { r.Time = time.Time{} },
		"no who":      func(r *AuditRecord) { r.Who = "" },
		"no action":   func(r *AuditRecord) { r.Action = "" },
		"bad outcome": func(r *AuditRecord) { r.Outcome = "maybe" },
		"long detail": func(r *AuditRecord) { r.Detail = string(make([]byte, MaxAuditField+1)) },
	} {
		r := good
		change(&r)
		if _, err := appendAudit(db, r, AuditLimits{}); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	if all, _ := audit(db, AuditQuery{}); len(all) != 0 {
		t.Fatalf("refused records were stored: %+v", all)
	}
}

// A database of schema 1 (the release before operators) is migrated at
// Open: its data stays and the new buckets work.
func TestSchema1UpgradesToOperators(t *testing.T) {
	path := t.TempDir() + "/fleet.db"
	db, err := open(path, nil, migrations[:1])
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Put(FleetDevices, "gw-1", map[string]string{"id": "gw-1"}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	db, err = Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if v, _ := db.Schema(); v != uint64(len(migrations)) {
		t.Fatalf("schema %d", v)
	}
	var d map[string]string
	if ok, err := db.Get(FleetDevices, "gw-1", &d); !ok || err != nil {
		t.Fatalf("device after upgrade: %v %v", ok, err)
	}
	if err := addOp(t, db, testOperator("alice", "admin", "s")); err != nil {
		t.Fatal(err)
	}
	if _, err := appendAudit(db, auditAt(time.Now(), 0, "alice", "operator.add", "operator/alice"), AuditLimits{}); err != nil {
		t.Fatal(err)
	}
	if err := db.Check(); err != nil {
		t.Fatal(err)
	}
}

// Filters on text that JSON escapes (<, &, non-ASCII) still find their
// records: the pre-filter compares escaped text with escaped text.
func TestAuditQueryEscapedText(t *testing.T) {
	db := openTest(t, nil)
	r := auditAt(time.Now(), 0, "o<&>ü", "rollout.pause", "rollout/a<b&c>")
	if _, err := appendAudit(db, r, AuditLimits{}); err != nil {
		t.Fatal(err)
	}
	for _, q := range []AuditQuery{{Who: "o<&>ü"}, {Object: "rollout/a<b&c>"}, {Object: "rollout"}, {Action: "rollout"}} {
		if got, err := audit(db, q); err != nil || len(got) != 1 {
			t.Errorf("%+v: %d records, %v", q, len(got), err)
		}
	}
	if got, _ := audit(db, AuditQuery{Who: "o<&>"}); len(got) != 0 {
		t.Errorf("a prefix of the operator's name matches: %+v", got)
	}
}

// An export verifies offline with the fleet's public key; an export whose
// record was changed on the way names that record.
func TestAuditExportVerifies(t *testing.T) {
	db := openTest(t, nil)
	key := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
	pub := key.Public().(ed25519.PublicKey)
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for i := range 6 {
		if _, err := appendAudit(db, auditAt(t0, i, "alice", "rollout.pause", fmt.Sprintf("rollout/r%d", i)), AuditLimits{Key: key}); err != nil {
			t.Fatal(err)
		}
		if i == 2 {
			if err := db.Update(func(tx Tx) error { _, _, err := AuditCheckpoint(tx, key, t0.Add(3*time.Minute)); return err }); err != nil {
				t.Fatal(err)
			}
		}
	}
	var buf bytes.Buffer
	if err := db.View(func(tx Tx) error { return ExportAudit(tx, &buf) }); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(buf.String(), "\n"); lines != 1+1+6 {
		t.Fatalf("export of %d lines, want head, a checkpoint and 6 records:\n%s", lines, buf.String())
	}
	rep, err := VerifyAuditExport(bytes.NewReader(buf.Bytes()), []ed25519.PublicKey{pub}, nil, t0)
	if err != nil || !rep.OK() || rep.Records != 6 || rep.Checkpoints != 1 {
		t.Fatalf("the export: %v %s", err, rep.Summary())
	}
	changed := strings.Replace(buf.String(), `"object":"rollout/r3"`, `"object":"rollout/r9"`, 1)
	rep, err = VerifyAuditExport(strings.NewReader(changed), []ed25519.PublicKey{pub}, nil, t0)
	if err != nil || rep.OK() || rep.Broken != 4 {
		t.Fatalf("an export with record 4 changed: %v broken %d: %s", err, rep.Broken, rep.Summary())
	}
	for name, bad := range map[string]string{
		"no head":      strings.SplitN(buf.String(), "\n", 2)[1],
		"two heads":    strings.SplitN(buf.String(), "\n", 2)[0] + "\n" + buf.String(),
		"unknown line": buf.String() + `{"other":1}` + "\n",
		"not JSON":     buf.String() + "x\n",
	} {
		if _, err := VerifyAuditExport(strings.NewReader(bad), []ed25519.PublicKey{pub}, nil, t0); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
