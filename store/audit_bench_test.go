package store

import (
	"crypto/ed25519"
	"fmt"
	"testing"
	"time"
)

// benchAuditKey signs the benchmarks' trails, as the fleet's command key
// does.
var benchAuditKey = ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))

// benchAuditDB returns a store holding n audit records (NoSync: the setup
// is not what is measured).
func benchAuditDB(b *testing.B, n int) *DB {
	db := openTest(b, &Options{NoSync: true})
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < n; i += 1000 {
		err := db.Update(func(tx Tx) error {
			for j := i; j < min(n, i+1000); j++ {
				r := AuditRecord{Time: t0.Add(time.Duration(j) * time.Second), Who: fmt.Sprintf("op%d", j%20), Role: "operator",
					Remote: "192.0.2.7", Agent: "tritctl/0.5.0", Action: "rollout.pause", Object: fmt.Sprintf("rollout/r%d", j%500),
					Outcome: AuditOK, Status: 200, Detail: "canary looks slow"}
				if _, err := AppendAudit(tx, r, AuditLimits{MaxRecords: n, Key: benchAuditKey}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	return db
}

// BenchmarkAuditQuery is one object's history (a rollout page's "Who did
// what") out of the default bound of 100,000 records: a scan of the whole
// trail.
func BenchmarkAuditQuery(b *testing.B) {
	db := benchAuditDB(b, DefaultAuditMaxRecords)
	b.ResetTimer()
	for b.Loop() {
		var rs []AuditRecord
		err := db.View(func(tx Tx) error {
			var err error
			rs, err = Audit(tx, AuditQuery{Object: "rollout/r7", Limit: 50})
			return err
		})
		if err != nil || len(rs) != 50 {
			b.Fatalf("%d records, %v", len(rs), err)
		}
	}
}

// BenchmarkAuditAppend is one audited change on a trail of 10,000
// records, without fsync: the transaction's own cost, the record's hash
// and the head's Ed25519 signature included.
func BenchmarkAuditAppend(b *testing.B) {
	db := benchAuditDB(b, 10000)
	t0 := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	b.ResetTimer()
	i := 0
	for b.Loop() {
		i++
		err := db.Update(func(tx Tx) error {
			_, err := AppendAudit(tx, AuditRecord{Time: t0.Add(time.Duration(i) * time.Second), Who: "otto", Action: "rollout.pause",
				Object: "rollout/r1", Outcome: AuditOK}, AuditLimits{MaxRecords: 10000, Key: benchAuditKey})
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerifyAudit checks the hash chain of a trail of 100,000
// records (the default alarm bound): what trit-fleet does at every start
// and every audit.verify_every.
func BenchmarkVerifyAudit(b *testing.B) {
	db := benchAuditDB(b, DefaultAuditMaxRecords)
	keys := []ed25519.PublicKey{benchAuditKey.Public().(ed25519.PublicKey)}
	b.ResetTimer()
	for b.Loop() {
		var rep *AuditReport
		err := db.View(func(tx Tx) (err error) { rep, err = VerifyAudit(tx, keys, nil, time.Time{}); return err })
		if err != nil || !rep.OK() || rep.Records != DefaultAuditMaxRecords {
			b.Fatalf("%v %s", err, rep.Summary())
		}
	}
}
