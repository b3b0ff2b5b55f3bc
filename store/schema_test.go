package store

import (
	"errors"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// Test-only schema history: v1 stores stat values as plain text, v2
// upper-cases them (standing in for a real format change) and adds a bucket.
var (
	testBucketV2 = []byte("test_v2_only")
	testMigsV1   = []migration{migrateV1}
	testMigsV2   = []migration{migrateV1, func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketStats)
		var keys [][]byte
		b.ForEach(func(k, _ []byte) error { keys = append(keys, append([]byte(nil), k...)); return nil })
		for _, k := range keys {
			v := b.Get(k)
			up := make([]byte, len(v))
			for i, c := range v {
				if 'a' <= c && c <= 'z' {
					c -= 'a' - 'A'
				}
				up[i] = c
			}
			if err := b.Put(k, up); err != nil {
				return err
			}
		}
		_, err := tx.CreateBucket(testBucketV2)
		return err
	}}
)

func TestMigrationV1ToV2(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.db")
	db, err := open(path, nil, testMigsV1)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.PutStat("greeting", []byte("hello")); err != nil {
		t.Fatal(err)
	}
	if v, _ := db.Schema(); v != 1 {
		t.Fatalf("schema %d, want 1", v)
	}
	db.Close()

	db, err = open(path, nil, testMigsV2)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := db.Schema(); v != 2 {
		t.Errorf("schema after migration %d, want 2", v)
	}
	if v, err := db.Stat("greeting"); err != nil || string(v) != "HELLO" {
		t.Errorf("migrated stat %q, %v; want HELLO", v, err)
	}
	db.bolt.View(func(tx *bolt.Tx) error {
		if tx.Bucket(testBucketV2) == nil {
			t.Error("v2 bucket missing")
		}
		return nil
	})
	// Opening again at v2 must not re-run the migration.
	db.Close()
	if db, err = open(path, nil, testMigsV2); err != nil {
		t.Fatalf("reopen at v2: %v", err)
	}
	db.Close()

	// The v1 program refuses the v2 file.
	if _, err := open(path, nil, testMigsV1); !errors.Is(err, ErrSchemaTooNew) {
		t.Fatalf("v1 code on v2 file: %v, want ErrSchemaTooNew", err)
	}
	// And so does the real Open while the real schema is older than 2.
	if len(migrations) < 2 {
		if _, err := Open(path, nil); !errors.Is(err, ErrSchemaTooNew) {
			t.Fatalf("Open on v2 file: %v, want ErrSchemaTooNew", err)
		}
	}
}

func TestMigrationFailureIsAtomic(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.db")
	db, err := open(path, nil, testMigsV1)
	if err != nil {
		t.Fatal(err)
	}
	db.PutStat("k", []byte("abc"))
	db.Close()

	boom := errors.New("boom")
	bad := []migration{migrateV1, testMigsV2[1], func(*bolt.Tx) error { return boom }}
	if _, err := open(path, nil, bad); !errors.Is(err, boom) {
		t.Fatalf("failing migration: %v, want boom", err)
	}
	db, err = open(path, nil, testMigsV1)
	if err != nil {
		t.Fatalf("v1 reopen after failed migration: %v", err)
	}
	defer db.Close()
	if v, _ := db.Schema(); v != 1 {
		t.Errorf("schema %d after failed migration, want 1", v)
	}
	if v, _ := db.Stat("k"); string(v) != "abc" {
		t.Errorf("stat %q after failed migration, want the v1 value abc", v)
	}
}

func TestSchemaCorruptVersion(t *testing.T) {
	db := openTest(t, nil)
	db.bolt.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketMeta).Put(keySchemaVersion, []byte{1, 2, 3})
	})
	path := db.Path()
	db.Close()
	_, err := Open(path, nil)
	var ce *CorruptError
	if !errors.As(err, &ce) || ce.Bucket != "meta" || ce.Key != "schema_version" {
		t.Fatalf("Open with a 3-byte version: %v, want CorruptError meta/schema_version", err)
	}
}
