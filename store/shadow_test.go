package store

import (
	"errors"
	"testing"
)

func TestShadowSlot(t *testing.T) {
	db := openTest(t, nil)
	a, b := mustBundle(t, db, "A"), mustBundle(t, db, "B")
	mustInstall(t, db, a, 1)
	if err := db.SetShadow(a, SlotMeta{ModelID: "m", Release: 1}); !errors.Is(err, ErrAlreadyActive) {
		t.Errorf("shadow of the active bundle: %v, want ErrAlreadyActive", err)
	}
	if err := db.SetShadow(hashOfString("C"), SlotMeta{ModelID: "m", Release: 2}); !errors.Is(err, ErrNoBundle) {
		t.Errorf("shadow of a bundle not stored: %v, want ErrNoBundle", err)
	}
	if err := db.SetShadow(b, SlotMeta{ModelID: "m", Release: 2, RolloutID: "r", Seq: 4}); err != nil {
		t.Fatal(err)
	}
	s, err := db.Shadow()
	if err != nil || s == nil || s.Hash != b || s.State != InstallShadow || s.Seq != 4 {
		t.Fatalf("shadow slot %+v, %v", s, err)
	}
	// Shadowing changes neither active nor previous, nor the release floor.
	if act, prev := mustSlots(t, db); act.Hash != a || prev != nil {
		t.Errorf("slots after SetShadow: %+v %+v", act, prev)
	}
	if h, _ := db.HighestRelease("m"); h != 1 {
		t.Errorf("highest release %d after SetShadow, want 1", h)
	}
	if err := db.DeleteBundle(b); !errors.Is(err, ErrBundleInUse) {
		t.Errorf("delete the shadow bundle: %v, want ErrBundleInUse", err)
	}
	if err := db.Check(); err != nil {
		t.Fatal(err)
	}
	// Promotion clears the shadow slot in the same transaction.
	if err := db.Activate(b, SlotMeta{ModelID: "m", Release: 2}); err != nil {
		t.Fatal(err)
	}
	if s, _ := db.Shadow(); s != nil {
		t.Errorf("shadow slot %+v after its bundle was activated", s)
	}
	if act, prev := mustSlots(t, db); act.Hash != b || prev.Hash != a {
		t.Errorf("after promotion: active %+v previous %+v", act, prev)
	}
	// Activating another bundle keeps an unrelated shadow.
	c := mustBundle(t, db, "C")
	if err := db.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := db.SetShadow(a, SlotMeta{ModelID: "m", Release: 3}); err != nil {
		t.Fatal(err)
	}
	if err := db.Activate(c, SlotMeta{ModelID: "m", Release: 3}); err != nil {
		t.Fatal(err)
	}
	if s, _ := db.Shadow(); s == nil || s.Hash != a {
		t.Errorf("unrelated shadow lost: %+v", s)
	}
	if err := db.ClearShadow(); err != nil {
		t.Fatal(err)
	}
	if s, _ := db.Shadow(); s != nil {
		t.Errorf("shadow %+v after ClearShadow", s)
	}
}
