package store

import (
	"errors"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/trit-iot/trit/wire"
)

func TestJobs(t *testing.T) {
	db := openTest(t, nil)
	if _, err := db.Job("r1", 1); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing job: %v, want ErrNotFound", err)
	}
	at := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, st := range []wire.JobState{wire.JobQueued, wire.JobDownloading, wire.JobInstalling} {
		if err := db.PutJob(Job{RolloutID: "r1", Seq: 1, State: st, Reason: "step " + string(st), Time: at}); err != nil {
			t.Fatal(err)
		}
		j, err := db.Job("r1", 1)
		if err != nil || j.State != st || j.Reason != "step "+string(st) || !j.Time.Equal(at) || j.RolloutID != "r1" || j.Seq != 1 {
			t.Fatalf("Job = %+v, %v", j, err)
		}
	}
	if err := db.PutJob(Job{RolloutID: "r1", Seq: 1, State: wire.JobSucceeded, Reason: "ok", Time: at}); err != nil {
		t.Fatal(err)
	}
	// Terminal is final: the same state again is a no-op, another is refused.
	if err := db.PutJob(Job{RolloutID: "r1", Seq: 1, State: wire.JobSucceeded, Reason: "dup"}); err != nil {
		t.Fatalf("repeat terminal state: %v", err)
	}
	if j, _ := db.Job("r1", 1); j.Reason != "ok" || !j.Time.Equal(at) {
		t.Errorf("repeat terminal state rewrote the record: %+v", j)
	}
	for _, st := range []wire.JobState{wire.JobQueued, wire.JobFailed} {
		if err := db.PutJob(Job{RolloutID: "r1", Seq: 1, State: st}); !errors.Is(err, ErrJobFinished) {
			t.Errorf("after SUCCEEDED, PutJob(%s) = %v, want ErrJobFinished", st, err)
		}
	}
	// Different seq and rollout are different jobs; a rollout that is a
	// prefix of another must not collide.
	for _, j := range []Job{{RolloutID: "r1", Seq: 2, State: wire.JobRejected}, {RolloutID: "r", Seq: 1, State: wire.JobQueued}, {RolloutID: "r10", Seq: 0, State: wire.JobFailed}} {
		if err := db.PutJob(j); err != nil {
			t.Fatal(err)
		}
	}
	jobs, err := db.Jobs()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, j := range jobs {
		got = append(got, jobKeyString(j.RolloutID, j.Seq)+"="+string(j.State))
	}
	want := []string{"r/1=QUEUED", "r1/1=SUCCEEDED", "r1/2=REJECTED", "r10/0=FAILED"}
	if len(got) != len(want) {
		t.Fatalf("Jobs = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("Jobs = %v, want %v", got, want)
		}
	}
	// Zero time means now.
	if j, _ := db.Job("r", 1); time.Since(j.Time) > time.Minute {
		t.Errorf("zero Time stored as %v", j.Time)
	}
}

func TestJobValidation(t *testing.T) {
	db := openTest(t, nil)
	for _, j := range []Job{
		{RolloutID: "", State: wire.JobQueued},
		{RolloutID: "a\x00b", State: wire.JobQueued},
		{RolloutID: string(make([]byte, wire.MaxRolloutIDLen+1)), State: wire.JobQueued},
		{RolloutID: "r", State: "queued"},
		{RolloutID: "r"},
	} {
		if err := db.PutJob(j); !errors.Is(err, ErrInvalid) {
			t.Errorf("PutJob(%q/%q) = %v, want ErrInvalid", j.RolloutID, j.State, err)
		}
	}
	if _, err := db.Job("", 1); !errors.Is(err, ErrInvalid) {
		t.Errorf("Job(\"\") = %v, want ErrInvalid", err)
	}
}

func TestJobCorrupt(t *testing.T) {
	db := openTest(t, nil)
	db.bolt.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketJobs).Put(jobKey("r9", 3), []byte(`{"state":"NOPE"}`))
	})
	var ce *CorruptError
	if _, err := db.Job("r9", 3); !errors.As(err, &ce) || ce.Bucket != "jobs" || ce.Key != "r9/3" {
		t.Fatalf("Job over a bad state: %v, want CorruptError jobs/r9/3", err)
	}
	if err := db.PutJob(Job{RolloutID: "r9", Seq: 3, State: wire.JobQueued}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("PutJob over a corrupt record: %v, want ErrCorrupt", err)
	}
	if _, err := db.Jobs(); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Jobs with a corrupt record: %v, want ErrCorrupt", err)
	}
}

func TestPruneJobs(t *testing.T) {
	db := openTest(t, nil)
	old := time.Now().Add(-48 * time.Hour)
	for i, st := range []wire.JobState{wire.JobSucceeded, wire.JobFailed, wire.JobInstalling} {
		if err := db.PutJob(Job{RolloutID: "old", Seq: uint64(i), State: st, Time: old}); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.PutJob(Job{RolloutID: "new", Seq: 1, State: wire.JobSucceeded}); err != nil {
		t.Fatal(err)
	}
	n, err := db.PruneJobs(time.Now().Add(-24 * time.Hour))
	if err != nil || n != 2 {
		t.Fatalf("PruneJobs = %d, %v; want 2", n, err)
	}
	jobs, _ := db.Jobs()
	if len(jobs) != 2 || jobs[0].RolloutID != "new" || jobs[1].State != wire.JobInstalling {
		t.Fatalf("after prune: %+v", jobs)
	}
}
