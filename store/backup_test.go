package store

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// Backup copies the database while another goroutine keeps writing: the
// copy is mode 0600, opens and checks, and holds one consistent snapshot
// (two documents written together always agree).
func TestBackupWhileWriting(t *testing.T) {
	db := openTest(t, &Options{NoSync: true})
	type counter struct{ N int }
	put := func(tx Tx, n int) error {
		if err := tx.Put(FleetDevices, "a", counter{n}); err != nil {
			return err
		}
		return tx.Put(FleetRollouts, "b", counter{n})
	}
	if err := db.Update(func(tx Tx) error { return put(tx, 0) }); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for n := 1; ; n++ {
			select {
			case <-stop:
				return
			default:
			}
			if err := db.Update(func(tx Tx) error { return put(tx, n) }); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	dir := t.TempDir()
	out := filepath.Join(dir, "backup.db")
	if err := os.WriteFile(out, []byte("an older backup"), 0o644); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		n, err := db.Backup(out)
		if err != nil {
			t.Fatalf("backup %d: %v", i, err)
		}
		fi, err := os.Stat(out)
		if err != nil || fi.Size() != n || fi.Mode().Perm() != 0o600 {
			t.Fatalf("backup %d: %v, size %d (wrote %d), mode %v", i, err, fi.Size(), n, fi.Mode().Perm())
		}
		b, err := Open(out, &Options{ReadOnly: true})
		if err != nil {
			t.Fatalf("backup %d does not open: %v", i, err)
		}
		if err := b.Check(); err != nil {
			t.Fatalf("backup %d: %v", i, err)
		}
		var a, c counter
		if _, err := b.Get(FleetDevices, "a", &a); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Get(FleetRollouts, "b", &c); err != nil {
			t.Fatal(err)
		}
		b.Close()
		if a != c {
			t.Fatalf("backup %d is not one snapshot: a=%d b=%d", i, a.N, c.N)
		}
	}
	close(stop)
	wg.Wait()
	if left, _ := filepath.Glob(filepath.Join(dir, ".*tmp*")); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
	if _, err := db.Backup(db.Path()); !errors.Is(err, ErrInvalid) {
		t.Fatalf("backup onto the database itself: %v", err)
	}
}

// WriteBackup refuses a copy that is not a sound database and leaves the
// file at path as it was.
func TestWriteBackupRefusesDamage(t *testing.T) {
	db := openTest(t, nil)
	for i := range 50 {
		if err := db.Put(FleetDevices, fmt.Sprint(i), map[string]int{"i": i}); err != nil {
			t.Fatal(err)
		}
	}
	var good bytes.Buffer
	if _, err := db.WriteTo(&good); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "fleet.db.backup")
	if _, err := WriteBackup(out, bytes.NewReader(good.Bytes())); err != nil {
		t.Fatal(err)
	}
	for name, bad := range map[string][]byte{
		"truncated": good.Bytes()[:good.Len()/3],
		"empty":     nil,
		"garbage":   bytes.Repeat([]byte("x"), good.Len()),
	} {
		if _, err := WriteBackup(out, bytes.NewReader(bad)); err == nil {
			t.Errorf("%s copy accepted", name)
		}
		got, err := os.ReadFile(out)
		if err != nil || !bytes.Equal(got, good.Bytes()) {
			t.Fatalf("%s copy replaced the good backup (%v)", name, err)
		}
	}
}
