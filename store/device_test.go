package store

import (
	"errors"
	"testing"

	bolt "go.etcd.io/bbolt"
)

func TestNextSession(t *testing.T) {
	db := openTest(t, nil)
	if s, err := db.Session(); err != nil || s != 0 {
		t.Fatalf("fresh Session = %d, %v", s, err)
	}
	for want := uint64(1); want <= 3; want++ {
		got, err := db.NextSession()
		if err != nil || got != want {
			t.Fatalf("NextSession = %d, %v; want %d", got, err, want)
		}
	}
	db = reopen(t, db, nil)
	if got, err := db.NextSession(); err != nil || got != 4 {
		t.Fatalf("NextSession after reopen = %d, %v; want 4", got, err)
	}
}

func TestSessionCorrupt(t *testing.T) {
	db := openTest(t, nil)
	db.bolt.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketDevice).Put(keySession, []byte("seven")) })
	var ce *CorruptError
	if _, err := db.NextSession(); !errors.As(err, &ce) || ce.Bucket != "device" || ce.Key != "session" {
		t.Fatalf("NextSession over a 5-byte counter: %v", err)
	}
}

func TestStat(t *testing.T) {
	db := openTest(t, nil)
	if _, err := db.Stat("latency"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing stat: %v, want ErrNotFound", err)
	}
	if err := db.PutStat("", []byte("x")); !errors.Is(err, ErrInvalid) {
		t.Errorf("empty name: %v, want ErrInvalid", err)
	}
	in := []byte(`{"p50":1.5}`)
	if err := db.PutStat("latency", in); err != nil {
		t.Fatal(err)
	}
	in[0] = 'X' // the store must have its own copy
	got, err := db.Stat("latency")
	if err != nil || string(got) != `{"p50":1.5}` {
		t.Fatalf("Stat = %q, %v", got, err)
	}
	if err := db.PutStat("latency", []byte("v2")); err != nil {
		t.Fatal(err)
	}
	if got, _ := db.Stat("latency"); string(got) != "v2" {
		t.Fatalf("overwritten stat %q", got)
	}
	if err := db.PutStat("empty", []byte{}); err != nil {
		t.Fatal(err)
	}
	if got, err := db.Stat("empty"); err != nil || len(got) != 0 {
		t.Fatalf("empty stat = %q, %v", got, err)
	}
}

// The instance ID is drawn once and kept; another database has another.
func TestInstance(t *testing.T) {
	db := openTest(t, nil)
	id, err := db.Instance()
	if err != nil || len(id) != 16 {
		t.Fatalf("Instance() = %q, %v", id, err)
	}
	db = reopen(t, db, nil)
	if again, err := db.Instance(); err != nil || again != id {
		t.Fatalf("after reopen: %q, %v; want %q", again, err, id)
	}
	other := openTest(t, nil)
	if o, _ := other.Instance(); o == id {
		t.Fatalf("two databases share instance %s", id)
	}
	if err := db.Check(); err != nil {
		t.Fatal(err)
	}
}
