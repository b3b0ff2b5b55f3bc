package store

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

func mustBundle(t testing.TB, db *DB, content string) string {
	t.Helper()
	h, err := db.PutBundle([]byte(content))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// mustInstall activates hash as release rel of model "m" and commits it.
func mustInstall(t testing.TB, db *DB, hash string, rel uint64) {
	t.Helper()
	if err := db.Activate(hash, SlotMeta{ModelID: "m", Release: rel}); err != nil {
		t.Fatal(err)
	}
	if err := db.Commit(); err != nil {
		t.Fatal(err)
	}
}

func mustSlots(t testing.TB, db *DB) (active, previous *Slot) {
	t.Helper()
	a, p, err := db.Slots()
	if err != nil {
		t.Fatal(err)
	}
	return a, p
}

func hashOf(s *Slot) string {
	if s == nil {
		return "<none>"
	}
	return s.Hash[:8]
}

func TestSlotsLifecycle(t *testing.T) {
	db := openTest(t, nil)
	if a, p := mustSlots(t, db); a != nil || p != nil {
		t.Fatalf("fresh slots %v %v", a, p)
	}
	if err := db.Commit(); !errors.Is(err, ErrNoActive) {
		t.Errorf("Commit with no model: %v, want ErrNoActive", err)
	}
	if err := db.Rollback(); !errors.Is(err, ErrNoPrevious) {
		t.Errorf("Rollback with no model: %v, want ErrNoPrevious", err)
	}

	a, b, c := mustBundle(t, db, "A"), mustBundle(t, db, "B"), mustBundle(t, db, "C")

	// First install: pending, no previous; nothing to roll back to.
	if err := db.Activate(a, SlotMeta{ModelID: "m", Release: 1}); err != nil {
		t.Fatal(err)
	}
	act, prev := mustSlots(t, db)
	if act == nil || act.Hash != a || act.State != InstallPending || prev != nil {
		t.Fatalf("after first Activate: active %v previous %v", act, prev)
	}
	if err := db.Rollback(); !errors.Is(err, ErrNoPrevious) {
		t.Errorf("Rollback of the first install: %v, want ErrNoPrevious", err)
	}
	if err := db.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := db.Commit(); err != nil {
		t.Errorf("second Commit: %v", err)
	}

	// Second install moves the committed one to previous.
	if err := db.Activate(b, SlotMeta{ModelID: "m", Release: 2, RolloutID: "r2", Seq: 7}); err != nil {
		t.Fatal(err)
	}
	act, prev = mustSlots(t, db)
	if act.Hash != b || act.State != InstallPending || prev == nil || prev.Hash != a || prev.State != InstallCommitted {
		t.Fatalf("after second Activate: active %s/%s previous %s", hashOf(act), act.State, hashOf(prev))
	}

	// Health check fails: roll back.
	before := time.Now()
	if err := db.Rollback(); err != nil {
		t.Fatal(err)
	}
	act, prev = mustSlots(t, db)
	if act.Hash != a || act.State != InstallCommitted || prev != nil {
		t.Fatalf("after Rollback: active %s previous %s", hashOf(act), hashOf(prev))
	}
	f, err := db.Failed()
	if err != nil {
		t.Fatal(err)
	}
	if f == nil || f.Hash != b || f.State != InstallFailed || f.RolloutID != "r2" || f.Seq != 7 || f.FailedAt.Before(before.Add(-time.Second)) {
		t.Fatalf("failed record %+v", f)
	}
	if err := db.Rollback(); !errors.Is(err, ErrNoPrevious) {
		t.Errorf("second Rollback: %v, want ErrNoPrevious", err)
	}
	// The failed bundle is no longer protected.
	if err := db.DeleteBundle(b); err != nil {
		t.Errorf("delete failed bundle: %v", err)
	}

	// Activate a bundle that is not stored: refused, nothing changes.
	if err := db.Activate(b, SlotMeta{ModelID: "m", Release: 3}); !errors.Is(err, ErrNoBundle) {
		t.Fatalf("Activate of a deleted bundle: %v, want ErrNoBundle", err)
	}
	if act2, prev2 := mustSlots(t, db); act2.Hash != a || prev2 != nil {
		t.Fatalf("refused Activate changed slots: %s %s", hashOf(act2), hashOf(prev2))
	}
	mustInstall(t, db, c, 3)
	if act, prev = mustSlots(t, db); act.Hash != c || prev.Hash != a {
		t.Fatalf("after third install: %s %s", hashOf(act), hashOf(prev))
	}
	if err := db.Check(); err != nil {
		t.Error(err)
	}
}

func TestActivateSupersedesPending(t *testing.T) {
	db := openTest(t, nil)
	a, b, c := mustBundle(t, db, "A"), mustBundle(t, db, "B"), mustBundle(t, db, "C")
	mustInstall(t, db, a, 1)
	if err := db.Activate(b, SlotMeta{ModelID: "m", Release: 2}); err != nil {
		t.Fatal(err)
	}
	// b never passed its health check, so it must not become previous.
	if err := db.Activate(c, SlotMeta{ModelID: "m", Release: 3}); err != nil {
		t.Fatal(err)
	}
	act, prev := mustSlots(t, db)
	if act.Hash != c || prev == nil || prev.Hash != a {
		t.Fatalf("active %s previous %s, want C and A", hashOf(act), hashOf(prev))
	}
	// Superseding a pending install with the previous model leaves no
	// previous (the same bundle cannot fill both slots).
	if err := db.Activate(a, SlotMeta{ModelID: "m", Release: 1, Rollback: true}); err != nil {
		t.Fatal(err)
	}
	if act, prev = mustSlots(t, db); act.Hash != a || prev != nil {
		t.Fatalf("active %s previous %s, want A and none", hashOf(act), hashOf(prev))
	}
	if err := db.Check(); err != nil {
		t.Error(err)
	}
}

// TestActivateOverDamagedActive: a committed active model whose stored
// bytes no longer match their hash (the agent then runs the previous
// model) does not push that previous model out of its slot: a failed
// health check of the next install rolls back to a model that loads.
// The damaged bytes stay stored, and the same bundle delivered again
// repairs them.
func TestActivateOverDamagedActive(t *testing.T) {
	db := openTest(t, nil)
	a, b, c := mustBundle(t, db, "A"), mustBundle(t, db, "B"), mustBundle(t, db, "C")
	mustInstall(t, db, a, 1)
	mustInstall(t, db, b, 2) // active B, previous A
	if err := db.bolt.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketBundles).Put([]byte(b), []byte("B, rotted"))
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.Activate(c, SlotMeta{ModelID: "m", Release: 3}); err != nil {
		t.Fatal(err)
	}
	if act, prev := mustSlots(t, db); act.Hash != c || prev == nil || prev.Hash != a {
		t.Fatalf("active %s previous %s, want C and A (B is damaged)", hashOf(act), hashOf(prev))
	}
	if err := db.Rollback(); err != nil {
		t.Fatal(err)
	}
	if act, _ := mustSlots(t, db); act.Hash != a {
		t.Fatalf("rolled back to %s, want A", hashOf(act))
	}
	hashes, err := db.BundleHashes()
	if err != nil || len(hashes) != 3 {
		t.Fatalf("stored bundles %v, %v: want all three, the damaged one kept", hashes, err)
	}
	if _, err := db.Bundle(b); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Bundle(B) = %v, want ErrCorrupt", err)
	}
	if h, err := db.PutBundle([]byte("B")); err != nil || h != b {
		t.Fatalf("PutBundle(B) again: %s, %v", h, err)
	}
	// An intact committed active model becomes the previous one, as ever.
	if err := db.Activate(b, SlotMeta{ModelID: "m", Release: 2, Rollback: true}); err != nil {
		t.Fatal(err)
	}
	if err := db.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := db.Activate(c, SlotMeta{ModelID: "m", Release: 3}); err != nil {
		t.Fatal(err)
	}
	if act, prev := mustSlots(t, db); act.Hash != c || prev == nil || prev.Hash != b {
		t.Fatalf("active %s previous %s, want C and B", hashOf(act), hashOf(prev))
	}
}

func TestActivateAlreadyActive(t *testing.T) {
	db := openTest(t, nil)
	a := mustBundle(t, db, "A")
	mustInstall(t, db, a, 1)
	if err := db.Activate(a, SlotMeta{ModelID: "m", Release: 1}); !errors.Is(err, ErrAlreadyActive) {
		t.Fatalf("re-Activate: %v, want ErrAlreadyActive", err)
	}
}

func TestActivateValidation(t *testing.T) {
	db := openTest(t, nil)
	a := mustBundle(t, db, "A")
	for _, tc := range []struct {
		hash string
		meta SlotMeta
	}{
		{"nothex", SlotMeta{ModelID: "m"}},
		{a, SlotMeta{}},
		{a, SlotMeta{ModelID: "m", State: InstallFailed}},
		{a, SlotMeta{ModelID: "m", State: "bogus"}},
	} {
		if err := db.Activate(tc.hash, tc.meta); !errors.Is(err, ErrInvalid) {
			t.Errorf("Activate(%q, %+v) = %v, want ErrInvalid", tc.hash, tc.meta, err)
		}
	}
	if act, _ := mustSlots(t, db); act != nil {
		t.Fatal("invalid Activate installed something")
	}
}

func TestSlotMetaRoundTrip(t *testing.T) {
	db := openTest(t, nil)
	a := mustBundle(t, db, "A")
	at := time.Date(2025, 3, 4, 5, 6, 7, 891, time.UTC)
	meta := SlotMeta{ModelID: "har-v2", Release: 42, RolloutID: "ro-9", Seq: 1 << 40, InstalledAt: at, State: InstallCommitted}
	if err := db.Activate(a, meta); err != nil {
		t.Fatal(err)
	}
	act, _ := mustSlots(t, db)
	got := act.SlotMeta
	if !got.InstalledAt.Equal(at) {
		t.Errorf("InstalledAt %v, want %v", got.InstalledAt, at)
	}
	got.InstalledAt = at
	if got != meta {
		t.Fatalf("stored meta %+v, want %+v", act.SlotMeta, meta)
	}

	// Zero InstalledAt and State take defaults.
	b := mustBundle(t, db, "B")
	before := time.Now().Add(-time.Second)
	if err := db.Activate(b, SlotMeta{ModelID: "m2"}); err != nil {
		t.Fatal(err)
	}
	act, _ = mustSlots(t, db)
	if act.State != InstallPending || act.InstalledAt.Before(before) {
		t.Fatalf("defaults: %+v", act.SlotMeta)
	}
}

func TestReleaseCounter(t *testing.T) {
	db := openTest(t, nil)
	a, b, c, d := mustBundle(t, db, "A"), mustBundle(t, db, "B"), mustBundle(t, db, "C"), mustBundle(t, db, "D")
	if r, err := db.HighestRelease("m"); err != nil || r != 0 {
		t.Fatalf("HighestRelease of unknown model: %d, %v", r, err)
	}
	if _, err := db.HighestRelease(""); !errors.Is(err, ErrInvalid) {
		t.Errorf("HighestRelease(\"\"): %v, want ErrInvalid", err)
	}
	mustInstall(t, db, a, 5)
	mustInstall(t, db, b, 7)
	if r, _ := db.HighestRelease("m"); r != 7 {
		t.Fatalf("highest %d, want 7", r)
	}
	// A lower release is refused and changes nothing.
	err := db.Activate(c, SlotMeta{ModelID: "m", Release: 6})
	if !errors.Is(err, ErrReleaseTooOld) {
		t.Fatalf("downgrade: %v, want ErrReleaseTooOld", err)
	}
	if act, _ := mustSlots(t, db); act.Hash != b {
		t.Fatal("refused downgrade changed the active slot")
	}
	// Equal release is allowed (re-signed bundle of the same release).
	if err := db.Activate(c, SlotMeta{ModelID: "m", Release: 7}); err != nil {
		t.Fatalf("same release: %v", err)
	}
	db.Commit()
	// A signed rollback may go lower; the highest value stays.
	if err := db.Activate(a, SlotMeta{ModelID: "m", Release: 5, Rollback: true}); err != nil {
		t.Fatalf("rollback install: %v", err)
	}
	if r, _ := db.HighestRelease("m"); r != 7 {
		t.Fatalf("highest after rollback install %d, want 7", r)
	}
	act, _ := mustSlots(t, db)
	if !act.Rollback {
		t.Error("Rollback flag not stored")
	}
	// Models are independent.
	if err := db.Activate(d, SlotMeta{ModelID: "other", Release: 1}); err != nil {
		t.Fatalf("other model: %v", err)
	}
	if r, _ := db.HighestRelease("other"); r != 1 {
		t.Errorf("other model highest %d, want 1", r)
	}
}

func TestCorruptSlot(t *testing.T) {
	for _, bad := range [][]byte{
		[]byte("{not json"),
		[]byte(`{"hash":"zz","model_id":"m","state":"committed"}`),
		[]byte(`{"hash":"` + fmt.Sprintf("%064x", 1) + `","model_id":"","state":"committed"}`),
		[]byte(`{"hash":"` + fmt.Sprintf("%064x", 1) + `","model_id":"m","state":"weird"}`),
		[]byte(`{"hash":"` + fmt.Sprintf("%064x", 1) + `","model_id":"m","state":"failed"}`),
	} {
		db := openTest(t, nil)
		db.bolt.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketSlots).Put(keyActive, bad) })
		var ce *CorruptError
		if _, _, err := db.Slots(); !errors.As(err, &ce) || ce.Bucket != "slots" || ce.Key != "active" {
			t.Errorf("Slots with %q: %v, want CorruptError slots/active", bad, err)
		}
		h := mustBundle(t, db, "X")
		if err := db.Activate(h, SlotMeta{ModelID: "m"}); !errors.Is(err, ErrCorrupt) {
			t.Errorf("Activate over %q: %v, want ErrCorrupt", bad, err)
		}
		if err := db.Check(); !errors.Is(err, ErrCorrupt) {
			t.Errorf("Check with %q: %v, want ErrCorrupt", bad, err)
		}
	}
}

// TestSlotInvariantRandomOps drives random slot operations and checks the
// invariant and each operation's documented effect after every step.
func TestSlotInvariantRandomOps(t *testing.T) {
	db := openTest(t, &Options{NoSync: true})
	rng := rand.New(rand.NewPCG(1, 2))
	var hashes []string
	for i := range 6 {
		hashes = append(hashes, mustBundle(t, db, fmt.Sprintf("bundle-%d", i)))
	}
	installed := false
	for step := range 600 {
		act0, prev0 := mustSlots(t, db)
		h := hashes[rng.IntN(len(hashes))]
		var op string
		var err error
		switch rng.IntN(5) {
		case 0, 1:
			op = "activate " + h[:8]
			err = db.Activate(h, SlotMeta{ModelID: "m", Release: uint64(rng.IntN(4)), Rollback: rng.IntN(2) == 0})
			if err == nil {
				installed = true
				act, prev := mustSlots(t, db)
				if act.Hash != h || act.State != InstallPending {
					t.Fatalf("step %d %s: active %s", step, op, hashOf(act))
				}
				wantPrev := prev0
				if act0 != nil && act0.State == InstallCommitted {
					wantPrev = act0
				}
				if wantPrev != nil && wantPrev.Hash == h {
					wantPrev = nil
				}
				if hashOf(prev) != hashOf(wantPrev) {
					t.Fatalf("step %d %s: previous %s, want %s", step, op, hashOf(prev), hashOf(wantPrev))
				}
			}
		case 2:
			op = "commit"
			err = db.Commit()
			if act, _ := mustSlots(t, db); err == nil && act.State != InstallCommitted {
				t.Fatalf("step %d commit: state %s", step, act.State)
			}
		case 3:
			op = "rollback"
			err = db.Rollback()
			if err == nil {
				act, prev := mustSlots(t, db)
				if act.Hash != prev0.Hash || prev != nil {
					t.Fatalf("step %d rollback: active %s previous %s, want %s and none", step, hashOf(act), hashOf(prev), hashOf(prev0))
				}
			}
		case 4:
			op = "delete " + h[:8]
			err = db.DeleteBundle(h)
			if err == nil {
				hashes = append(hashes, mustBundle(t, db, fmt.Sprintf("bundle-%d", len(hashes)+step*1000)))
			}
			if err == nil && (hashOf(act0) == h[:8] || hashOf(prev0) == h[:8]) {
				t.Fatalf("step %d: deleted an in-use bundle", step)
			}
			if errors.Is(err, ErrNotFound) {
				err = nil
			}
		}
		if err != nil && errors.Is(err, ErrCorrupt) {
			t.Fatalf("step %d %s: %v", step, op, err)
		}
		if err := db.Check(); err != nil {
			t.Fatalf("step %d %s: %v", step, op, err)
		}
		if act, _ := mustSlots(t, db); installed && act == nil {
			t.Fatalf("step %d %s: no active model after an install", step, op)
		}
	}
}
