package store

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/trit-iot/trit/wire"
)

// openTest opens a fresh database in a temporary directory and closes it
// when the test ends.
func openTest(t testing.TB, opts *Options) *DB {
	t.Helper()
	db, err := Open(filepath.Join(t.TempDir(), "trit.db"), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// reopen closes db and opens its file again with opts.
func reopen(t testing.TB, db *DB, opts *Options) *DB {
	t.Helper()
	path := db.Path()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db2, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db2.Close() })
	return db2
}

func TestOpenFileModeAndSchema(t *testing.T) {
	db := openTest(t, nil)
	fi, err := os.Stat(db.Path())
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o600 {
		t.Errorf("file mode %v, want 0600", perm)
	}
	v, err := db.Schema()
	if err != nil {
		t.Fatal(err)
	}
	if v != uint64(len(migrations)) {
		t.Errorf("schema %d, want %d", v, len(migrations))
	}
	if err := db.Check(); err != nil {
		t.Errorf("fresh database fails Check: %v", err)
	}
}

func TestOpenInvalidOptions(t *testing.T) {
	dir := t.TempDir()
	for _, o := range []*Options{{Timeout: -time.Second}, {OutboxMaxBytes: -1}} {
		if _, err := Open(filepath.Join(dir, "x.db"), o); !errors.Is(err, ErrInvalid) {
			t.Errorf("Open(%+v) = %v, want ErrInvalid", *o, err)
		}
	}
}

func TestOpenMissingDirectory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "no", "such", "dir", "trit.db")
	if _, err := Open(path, nil); err == nil {
		t.Fatal("Open in a missing directory succeeded")
	}
}

func TestOpenNotADatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "garbage.db")
	junk := make([]byte, 64<<10)
	for i := range junk {
		junk[i] = byte(i*7 + 3)
	}
	if err := os.WriteFile(path, junk, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Open(path, nil)
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open(garbage) = %v, want ErrCorrupt", err)
	}
}

func TestLockTimeout(t *testing.T) {
	db := openTest(t, nil)
	const timeout = 200 * time.Millisecond
	start := time.Now()
	db2, err := Open(db.Path(), &Options{Timeout: timeout})
	if err == nil {
		db2.Close()
		t.Fatal("second Open of a locked file succeeded")
	}
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open = %v, want ErrLocked", err)
	}
	// Not a speed assertion: just that it gave up instead of hanging.
	if waited := time.Since(start); waited > 10*timeout {
		t.Errorf("gave up after %v with a %v timeout", waited, timeout)
	}
	// After the holder closes, the file opens.
	reopen(t, db, &Options{Timeout: timeout})
}

func TestCloseTwice(t *testing.T) {
	db := openTest(t, nil)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := db.NextSession(); err == nil {
		t.Error("NextSession on a closed DB succeeded")
	}
}

func TestReopenDurability(t *testing.T) {
	db := openTest(t, nil)
	hash, err := db.PutBundle([]byte("bundle-1"))
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Activate(hash, SlotMeta{ModelID: "m", Release: 3}); err != nil {
		t.Fatal(err)
	}
	if err := db.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.NextSession(); err != nil {
		t.Fatal(err)
	}
	if err := db.Enqueue(OutboxMsg{Topic: "a/b", Payload: []byte("x"), QoS: 1}); err != nil {
		t.Fatal(err)
	}
	if err := db.PutJob(Job{RolloutID: "r1", Seq: 2, State: wire.JobSucceeded}); err != nil {
		t.Fatal(err)
	}
	if err := db.PutStat("s", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if err := db.Put(FleetDevices, "d1", map[string]int{"n": 1}); err != nil {
		t.Fatal(err)
	}

	db = reopen(t, db, nil)
	active, _, err := db.Slots()
	if err != nil || active == nil || active.Hash != hash || active.State != InstallCommitted {
		t.Errorf("after reopen: active %+v, err %v", active, err)
	}
	if s, err := db.Session(); err != nil || s != 1 {
		t.Errorf("after reopen: session %d, %v; want 1", s, err)
	}
	if st, err := db.OutboxStats(); err != nil || st.Count != 1 {
		t.Errorf("after reopen: outbox %+v, %v", st, err)
	}
	if j, err := db.Job("r1", 2); err != nil || j.State != wire.JobSucceeded {
		t.Errorf("after reopen: job %+v, %v", j, err)
	}
	if v, err := db.Stat("s"); err != nil || string(v) != "v" {
		t.Errorf("after reopen: stat %q, %v", v, err)
	}
	var doc map[string]int
	if ok, err := db.Get(FleetDevices, "d1", &doc); !ok || err != nil || doc["n"] != 1 {
		t.Errorf("after reopen: doc %v ok %v err %v", doc, ok, err)
	}
	if r, err := db.HighestRelease("m"); err != nil || r != 3 {
		t.Errorf("after reopen: highest release %d, %v", r, err)
	}
	if err := db.Check(); err != nil {
		t.Error(err)
	}
}
