package store

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

func TestCheckFindsViolations(t *testing.T) {
	cases := []struct {
		name   string
		damage func(tx *bolt.Tx) error
		want   string
	}{
		{"active bundle missing", func(tx *bolt.Tx) error {
			return tx.Bucket(bucketBundles).Delete([]byte(hashOfString("A")))
		}, "is not stored"},
		{"previous without active", func(tx *bolt.Tx) error {
			return tx.Bucket(bucketSlots).Delete(keyActive)
		}, "previous slot without an active one"},
		{"bundle key not a hash", func(tx *bolt.Tx) error {
			return tx.Bucket(bucketBundles).Put([]byte("xyz"), []byte("1"))
		}, "hex"},
		{"release counter length", func(tx *bolt.Tx) error {
			return tx.Bucket(bucketReleases).Put([]byte("m"), []byte("1"))
		}, "counter has 1 bytes"},
		{"outbox record", func(tx *bolt.Tx) error {
			return tx.Bucket(bucketOutbox).Put(seqKey(1), []byte{1, 0, 0, 9, 'a'})
		}, "overruns"},
		{"missing bucket", func(tx *bolt.Tx) error {
			return tx.DeleteBucket(bucketStats)
		}, "bucket missing"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			db := openTest(t, nil)
			a, b := mustBundle(t, db, "A"), mustBundle(t, db, "B")
			mustInstall(t, db, b, 1)
			mustInstall(t, db, a, 2) // active A, previous B
			db.Enqueue(msg(0, 3))
			if err := db.Check(); err != nil {
				t.Fatalf("before damage: %v", err)
			}
			if err := db.bolt.Update(tc.damage); err != nil {
				t.Fatal(err)
			}
			err := db.Check()
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Check = %v, want ErrCorrupt mentioning %q", err, tc.want)
			}
		})
	}
}

func hashOfString(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
