package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"testing"

	bolt "go.etcd.io/bbolt"
)

func TestBundlePutGetDelete(t *testing.T) {
	db := openTest(t, nil)
	data := []byte("a model bundle")
	hash, err := db.PutBundle(data)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	if want := hex.EncodeToString(sum[:]); hash != want {
		t.Fatalf("hash %s, want %s", hash, want)
	}
	// Idempotent.
	if h2, err := db.PutBundle(bytes.Clone(data)); err != nil || h2 != hash {
		t.Fatalf("second PutBundle: %s, %v", h2, err)
	}
	got, err := db.Bundle(hash)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("Bundle = %q, %v", got, err)
	}
	got[0] ^= 0xff // the copy is ours; the stored bundle must not change
	if again, _ := db.Bundle(hash); !bytes.Equal(again, data) {
		t.Fatal("modifying a returned bundle changed the stored one")
	}
	hashes, err := db.BundleHashes()
	if err != nil || len(hashes) != 1 || hashes[0] != hash {
		t.Fatalf("BundleHashes = %v, %v", hashes, err)
	}
	if err := db.DeleteBundle(hash); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Bundle(hash); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Bundle after delete: %v, want ErrNotFound", err)
	}
	if err := db.DeleteBundle(hash); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second delete: %v, want ErrNotFound", err)
	}
}

func TestBundleInvalidInput(t *testing.T) {
	db := openTest(t, nil)
	if _, err := db.PutBundle(nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("PutBundle(nil) = %v, want ErrInvalid", err)
	}
	for _, h := range []string{"", "abc", string(bytes.Repeat([]byte("A"), 64)), string(bytes.Repeat([]byte("g"), 64))} {
		if _, err := db.Bundle(h); !errors.Is(err, ErrInvalid) {
			t.Errorf("Bundle(%q) = %v, want ErrInvalid", h, err)
		}
		if err := db.DeleteBundle(h); !errors.Is(err, ErrInvalid) {
			t.Errorf("DeleteBundle(%q) = %v, want ErrInvalid", h, err)
		}
	}
}

func TestBundleCorruptContent(t *testing.T) {
	db := openTest(t, nil)
	hash, _ := db.PutBundle([]byte("original"))
	db.bolt.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketBundles).Put([]byte(hash), []byte("bit-rotted"))
	})
	_, err := db.Bundle(hash)
	var ce *CorruptError
	if !errors.As(err, &ce) || ce.Bucket != "bundles" || ce.Key != hash {
		t.Fatalf("Bundle of rotted content: %v, want CorruptError bundles/%s", err, hash)
	}
	if err := db.Check(); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Check = %v, want ErrCorrupt", err)
	}
	// Storing the right bytes again repairs the record: PutBundle took
	// any stored value under the hash for the bundle and kept the rotted
	// one, so an agent that downloaded the bundle again could not load it.
	if h, err := db.PutBundle([]byte("original")); err != nil || h != hash {
		t.Fatalf("PutBundle over rotted content: %s, %v", h, err)
	}
	if got, err := db.Bundle(hash); err != nil || string(got) != "original" {
		t.Fatalf("Bundle after the repair: %q, %v", got, err)
	}
	if err := db.Check(); err != nil {
		t.Errorf("Check after the repair: %v", err)
	}
}

func TestDeleteBundleInUse(t *testing.T) {
	db := openTest(t, nil)
	a := mustBundle(t, db, "A")
	b := mustBundle(t, db, "B")
	c := mustBundle(t, db, "C")
	mustInstall(t, db, a, 1)
	mustInstall(t, db, b, 2) // active b, previous a
	for _, h := range []string{a, b} {
		if err := db.DeleteBundle(h); !errors.Is(err, ErrBundleInUse) {
			t.Errorf("DeleteBundle(in use) = %v, want ErrBundleInUse", err)
		}
	}
	if err := db.DeleteBundle(c); err != nil {
		t.Errorf("DeleteBundle(unused) = %v", err)
	}
}
