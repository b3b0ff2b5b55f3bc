package store

import (
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/trit-iot/trit/wire"
)

func TestHighestJobSeqSurvivesPruning(t *testing.T) {
	db := openTest(t, nil)
	if seq, err := db.HighestJobSeq(); err != nil || seq != 0 {
		t.Fatalf("empty: HighestJobSeq = %d, %v", seq, err)
	}
	old := time.Now().Add(-48 * time.Hour)
	for _, j := range []Job{
		{RolloutID: "a", Seq: 3, State: wire.JobSucceeded, Time: old},
		{RolloutID: "b", Seq: 7, State: wire.JobRejected, Time: old},
		{RolloutID: "a", Seq: 5, State: wire.JobFailed, Time: old},
	} {
		if err := db.PutJob(j); err != nil {
			t.Fatal(err)
		}
	}
	if seq, err := db.HighestJobSeq(); err != nil || seq != 7 {
		t.Fatalf("HighestJobSeq = %d, %v; want 7", seq, err)
	}
	n, err := db.PruneJobs(time.Now())
	if err != nil || n != 2 {
		t.Fatalf("PruneJobs = %d, %v; want 2 (the newest job is kept)", n, err)
	}
	jobs, err := db.Jobs()
	if err != nil || len(jobs) != 1 || jobs[0].Seq != 7 {
		t.Fatalf("after prune: %+v, %v; want only b/7", jobs, err)
	}
	// A lower sequence written later does not lower it.
	if err := db.PutJob(Job{RolloutID: "c", Seq: 2, State: wire.JobQueued}); err != nil {
		t.Fatal(err)
	}
	if seq, err := db.HighestJobSeq(); err != nil || seq != 7 {
		t.Fatalf("HighestJobSeq = %d, %v; want 7", seq, err)
	}
	db = reopen(t, db, nil)
	if seq, err := db.HighestJobSeq(); err != nil || seq != 7 {
		t.Fatalf("after reopen: HighestJobSeq = %d, %v; want 7", seq, err)
	}
	if err := db.Check(); err != nil {
		t.Fatal(err)
	}
}

// TestHighestJobSeqLegacy: a database written before the counter existed
// falls back to the jobs, and pruning stores the counter first.
func TestHighestJobSeqLegacy(t *testing.T) {
	db := openTest(t, nil)
	old := time.Now().Add(-48 * time.Hour)
	for _, seq := range []uint64{4, 9} {
		if err := db.PutJob(Job{RolloutID: "r", Seq: seq, State: wire.JobSucceeded, Time: old}); err != nil {
			t.Fatal(err)
		}
	}
	err := db.bolt.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketDevice).Delete(keyHighestJobSeq) })
	if err != nil {
		t.Fatal(err)
	}
	if seq, err := db.HighestJobSeq(); err != nil || seq != 9 {
		t.Fatalf("legacy: HighestJobSeq = %d, %v; want 9 (scanned)", seq, err)
	}
	if n, err := db.PruneJobs(time.Now()); err != nil || n != 1 {
		t.Fatalf("PruneJobs = %d, %v; want 1", n, err)
	}
	err = db.bolt.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bucketDevice).Get(keyHighestJobSeq); v == nil {
			t.Error("PruneJobs did not store the counter before deleting jobs")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seq, err := db.HighestJobSeq(); err != nil || seq != 9 {
		t.Fatalf("after prune: HighestJobSeq = %d, %v; want 9", seq, err)
	}
}
