package fleet

import (
	"sync"
	"testing"
	"time"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet/fleettest"
	"github.com/trit-iot/trit/store"
	"github.com/trit-iot/trit/store/postgres"
	"github.com/trit-iot/trit/store/postgres/pgtest"
)

// TestTrainingJobsOnceAcrossReplicas: two services on one PostgreSQL take
// the jobs asked through either of them, while both look for queued jobs
// as fast as they can; every job is run by exactly one replica, once, and
// succeeds, and both replicas list every job.
func TestTrainingJobsOnceAcrossReplicas(t *testing.T) {
	dir := t.TempDir()
	fleettest.WriteRings(t, dir, "small.csv", 200)
	dsn := pgtest.Database(t)
	now := time.Now()
	var mu sync.Mutex
	runs := map[string][]string{}
	var replicas []*fixture
	for _, name := range []string{"a", "b"} {
		db, err := postgres.Open(dsn, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		f := newFixtureOn(t, db, func(o *Options) { o.TrainingDir = dir; o.Replica = name })
		f.clk.t = now // the bundle's created-at
		f.svc.trainer.started = func(id string) {
			mu.Lock()
			runs[id] = append(runs[id], name)
			mu.Unlock()
		}
		replicas = append(replicas, f)
	}
	quick := api.TrainRequest{Dataset: "small.csv", Format: "dense", LabelColumn: -1, Sigma: 0.5, C: 10, P: 64, ModelID: "rings", Release: 1}
	var ids []string
	for i := range maxActiveTrainJobs {
		j, err := replicas[i%2].svc.StartTraining(quick)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, j.ID)
	}
	// Both replicas look for queued jobs continuously meanwhile.
	done := make(chan struct{})
	var wg sync.WaitGroup
	for _, f := range replicas {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
					f.svc.takeTraining()
				}
			}
		}()
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		finished := 0
		for _, j := range replicas[1].svc.TrainingJobs() {
			finished += btoi(j.State.Done())
		}
		if finished == len(ids) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d jobs finished in 2 minutes", finished, len(ids))
		}
		time.Sleep(20 * time.Millisecond)
	}
	close(done)
	wg.Wait()
	for _, id := range ids {
		for _, f := range replicas {
			j, err := f.svc.TrainingJob(id)
			if err != nil || j.State != api.TrainSucceeded || j.Bundle == "" {
				t.Fatalf("job %s on replica %s: %+v, %v", id, f.svc.opt.Replica, j, err)
			}
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(runs) != len(ids) {
		t.Fatalf("runs %v, want one for each of %v", runs, ids)
	}
	for _, id := range ids {
		if len(runs[id]) != 1 {
			t.Errorf("job %s run by %v, want exactly one replica once", id, runs[id])
		}
	}
	t.Logf("who ran which job: %v", runs)
}

// TestTrainingJobOfAStoppedReplica: a running job whose runner stopped
// writing signs of life (its replica died) is failed by the next replica
// that looks, not run again.
func TestTrainingJobOfAStoppedReplica(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.TrainingDir = t.TempDir() })
	rec := trainRecord{Seq: 1, Runner: "gone/0123", Beat: f.clk.now(),
		Job: api.TrainJob{ID: "train-1", State: api.TrainRunning, Started: f.clk.now(), Request: api.TrainRequest{Dataset: "x.csv", ModelID: "m", Release: 1}}}
	if err := f.db.Update(func(tx store.Tx) error {
		if err := tx.Put(store.FleetTrainJobs, trainKey(1), &rec); err != nil {
			return err
		}
		return tx.Put(store.FleetTrainJobs, trainNextKey, 1)
	}); err != nil {
		t.Fatal(err)
	}
	ran := false
	f.svc.trainer.started = func(string) { ran = true }
	f.clk.t = f.clk.t.Add(trainOrphanAfter - time.Second)
	f.svc.Tick()
	if j, err := f.svc.TrainingJob("train-1"); err != nil || j.State != api.TrainRunning {
		t.Fatalf("within trainOrphanAfter: %+v, %v", j, err)
	}
	f.clk.t = f.clk.t.Add(2 * time.Second)
	f.svc.Tick()
	j, err := f.svc.TrainingJob("train-1")
	if err != nil || j.State != api.TrainFailed || j.Finished.IsZero() || ran {
		t.Fatalf("after trainOrphanAfter: %+v, %v (run again: %v)", j, err, ran)
	}
	// The next job gets the next number.
	g, err := f.svc.StartTraining(api.TrainRequest{Dataset: "x.csv", ModelID: "m", Release: 1})
	if err != nil || g.ID != "train-2" {
		t.Fatalf("next job: %+v, %v", g, err)
	}
}
