package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	bolt "go.etcd.io/bbolt"
)

type device struct {
	ID     string            `json:"id"`
	Model  string            `json:"model"`
	Labels map[string]string `json:"labels,omitempty"`
}

type rollout struct {
	ID        string `json:"id"`
	Succeeded int    `json:"succeeded"`
}

func TestCollectionCRUD(t *testing.T) {
	db := openTest(t, nil)
	var d device
	if ok, err := db.Get(FleetDevices, "d1", &d); ok || err != nil {
		t.Fatalf("Get missing = %v, %v", ok, err)
	}
	in := device{ID: "d1", Model: "m", Labels: map[string]string{"site": "a"}}
	if err := db.Put(FleetDevices, "d1", in); err != nil {
		t.Fatal(err)
	}
	if ok, err := db.Get(FleetDevices, "d1", &d); !ok || err != nil || d.ID != "d1" || d.Labels["site"] != "a" {
		t.Fatalf("Get = %+v, %v, %v", d, ok, err)
	}
	// Collections are separate namespaces.
	if ok, _ := db.Get(FleetModels, "d1", &d); ok {
		t.Fatal("document leaked into another collection")
	}
	for i := range 5 {
		db.Put(FleetDevices, fmt.Sprintf("d%d", 5-i), device{ID: fmt.Sprint(5 - i)})
	}
	var keys []string
	err := db.ForEach(FleetDevices, func(key string, raw []byte) error {
		var d device
		if err := json.Unmarshal(raw, &d); err != nil {
			return err
		}
		keys = append(keys, key)
		return nil
	})
	if err != nil || fmt.Sprint(keys) != "[d1 d2 d3 d4 d5]" {
		t.Fatalf("ForEach keys %v, %v", keys, err)
	}
	// fn may write to the DB (it runs outside the read transaction).
	err = db.ForEach(FleetDevices, func(key string, _ []byte) error {
		return db.Put(FleetDevices, key, device{ID: key, Model: "updated"})
	})
	if err != nil {
		t.Fatal(err)
	}
	db.Get(FleetDevices, "d3", &d)
	if d.Model != "updated" {
		t.Fatalf("write from ForEach lost: %+v", d)
	}
	// ForEach stops at the first error and returns it.
	stop := errors.New("stop")
	n := 0
	if err := db.ForEach(FleetDevices, func(string, []byte) error { n++; return stop }); err != stop || n != 1 {
		t.Fatalf("ForEach error: %v after %d calls", err, n)
	}
	if err := db.Delete(FleetDevices, "d1"); err != nil {
		t.Fatal(err)
	}
	if err := db.Delete(FleetDevices, "d1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second Delete = %v, want ErrNotFound", err)
	}
	if ok, _ := db.Get(FleetDevices, "d1", &d); ok {
		t.Fatal("deleted document still there")
	}
}

func TestCollectionInvalid(t *testing.T) {
	db := openTest(t, nil)
	var v any
	for _, c := range []Collection{-1, Collection(len(collectionBuckets)), 99} {
		if err := db.Put(c, "k", 1); !errors.Is(err, ErrInvalid) {
			t.Errorf("Put(%v) = %v, want ErrInvalid", c, err)
		}
		if _, err := db.Get(c, "k", &v); !errors.Is(err, ErrInvalid) {
			t.Errorf("Get(%v) = %v, want ErrInvalid", c, err)
		}
		if err := db.ForEach(c, func(string, []byte) error { return nil }); !errors.Is(err, ErrInvalid) {
			t.Errorf("ForEach(%v) = %v, want ErrInvalid", c, err)
		}
		// DecodeDoc indexed the bucket names by c to name damaged JSON:
		// it panicked. Good JSON or bad, an unknown collection is
		// ErrInvalid naming the collection and the key.
		for _, raw := range []string{`{"id":`, `{"id":"r1"}`} {
			err := DecodeDoc(c, "k", []byte(raw), &v)
			if want := fmt.Sprintf(`store: decode "k": unknown collection %d: invalid argument`, int(c)); !errors.Is(err, ErrInvalid) || err.Error() != want {
				t.Errorf("DecodeDoc(%v, %s) = %v, want ErrInvalid: %s", c, raw, err, want)
			}
		}
	}
	if err := db.Put(FleetModels, "", 1); !errors.Is(err, ErrInvalid) {
		t.Errorf("empty key: %v, want ErrInvalid", err)
	}
	if err := db.Put(FleetModels, "k", func() {}); err == nil {
		t.Error("Put of an unencodable value succeeded")
	}
	if FleetRollouts.String() != "fleet_rollouts" || Collection(99).String() != "Collection(99)" {
		t.Errorf("String: %s %s", FleetRollouts, Collection(99))
	}
}

func TestCollectionCorruptAndTypeMismatch(t *testing.T) {
	db := openTest(t, nil)
	db.bolt.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketFleetRollouts).Put([]byte("r1"), []byte(`{"id":"r1",`))
	})
	var r rollout
	var ce *CorruptError
	if _, err := db.Get(FleetRollouts, "r1", &r); !errors.As(err, &ce) || ce.Bucket != "fleet_rollouts" || ce.Key != "r1" {
		t.Fatalf("Get of truncated JSON: %v, want CorruptError fleet_rollouts/r1", err)
	}
	if err := db.Check(); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Check = %v, want ErrCorrupt", err)
	}
	db.Put(FleetRollouts, "r2", map[string]string{"succeeded": "many"})
	_, err := db.Get(FleetRollouts, "r2", &r)
	if err == nil || errors.Is(err, ErrCorrupt) {
		t.Fatalf("type mismatch: %v, want a non-corrupt decode error", err)
	}
}

// TestUpdateAtomic checks a multi-record update commits all or nothing.
func TestUpdateAtomic(t *testing.T) {
	db := openTest(t, nil)
	for i := range 50 {
		db.Put(FleetDevices, fmt.Sprintf("d%02d", i), device{ID: fmt.Sprint(i), Model: "old"})
	}
	db.Put(FleetRollouts, "r", rollout{ID: "r"})

	// Failing update: nothing changes.
	boom := errors.New("boom")
	err := db.Update(func(tx Tx) error {
		for i := range 50 {
			if err := tx.Put(FleetDevices, fmt.Sprintf("d%02d", i), device{Model: "new"}); err != nil {
				return err
			}
		}
		return boom
	})
	if err != boom {
		t.Fatalf("Update = %v, want boom", err)
	}
	var d device
	db.Get(FleetDevices, "d49", &d)
	if d.Model != "old" {
		t.Fatal("failed Update left changes behind")
	}

	// Successful update: rollout counter and all devices together.
	err = db.Update(func(tx Tx) error {
		var r rollout
		if ok, err := tx.Get(FleetRollouts, "r", &r); !ok || err != nil {
			return fmt.Errorf("get rollout: %v %v", ok, err)
		}
		err := tx.ForEach(FleetDevices, func(key string, raw []byte) error {
			r.Succeeded++
			return nil
		})
		if err != nil {
			return err
		}
		for i := range 50 {
			if err := tx.Put(FleetDevices, fmt.Sprintf("d%02d", i), device{ID: fmt.Sprint(i), Model: "new"}); err != nil {
				return err
			}
		}
		if err := tx.Delete(FleetDevices, "d00"); err != nil {
			return err
		}
		return tx.Put(FleetRollouts, "r", r)
	})
	if err != nil {
		t.Fatal(err)
	}
	var r rollout
	db.Get(FleetRollouts, "r", &r)
	db.Get(FleetDevices, "d49", &d)
	if r.Succeeded != 50 || d.Model != "new" {
		t.Fatalf("after Update: rollout %+v device %+v", r, d)
	}
	if ok, _ := db.Get(FleetDevices, "d00", &d); ok {
		t.Fatal("delete inside Update lost")
	}
}

func TestTxAfterDoneAndReadOnly(t *testing.T) {
	db := openTest(t, nil)
	var saved Tx
	db.Update(func(tx Tx) error { saved = tx; return nil })
	if err := saved.Put(FleetModels, "k", 1); err == nil {
		t.Error("Put on a finished Tx succeeded")
	}
	err := db.View(func(tx Tx) error { return tx.Put(FleetModels, "k", 1) })
	if err == nil {
		t.Error("Put in View succeeded")
	}
}
