package store

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	bolt "go.etcd.io/bbolt"
)

// Collection names one of the fleet's JSON document collections. Documents
// are stored as encoding/json of the caller's value under a string key and
// are iterated in byte order of their keys.
type Collection int

// The fleet's collections; their buckets are listed in names.go.
const (
	FleetModels   Collection = iota // model registry, keyed by model ID
	FleetBundles                    // bundle metadata, keyed by SHA-256 hex
	FleetDevices                    // device inventory, keyed by device ID
	FleetRollouts                   // rollouts, keyed by rollout ID

	// From schema 2 (operator.go, audit.go):
	FleetOperators      // operators, keyed by name
	FleetOperatorTokens // operator credential hash -> name
	FleetAudit          // the audit trail, keyed by sequence number
	FleetAuditMeta      // the audit trail's bounds

	// From schema 3 (health.go):
	FleetHealth // each device's model health over time, keyed by device/period

	// From schema 4 (consolesession.go):
	FleetConsoleSessions // the web console's sessions, keyed by the SHA-256 of their ID

	// From schema 5 (fleet/train.go owns the documents):
	FleetTrainJobs // remote-training jobs, keyed by job/<sequence>, and their counter

	// From schema 6 (fleet/windows.go owns the documents):
	FleetWindows // windows devices kept, and their labels, keyed by w/<device>/<time>
)

// String returns the collection's bucket name.
func (c Collection) String() string {
	if c < 0 || int(c) >= len(collectionBuckets) {
		return fmt.Sprintf("Collection(%d)", int(c))
	}
	return string(collectionBuckets[c])
}

// ErrTxDone is returned by a Tx used after its Update or View returned.
var ErrTxDone = errors.New("store: transaction already finished")

// Tx is a transaction over the document collections, passed to the
// function given to Update or View, and valid only until that function
// returns. It is the contract of every fleet store: this package's bbolt
// file and store/postgres implement it, and store/storetest checks both
// against it.
//
//   - Put stores v encoded as JSON under key, replacing any document.
//   - Get decodes the document under key into v and reports whether it
//     exists; a stored document that is not JSON is a *CorruptError.
//   - Delete removes the document under key, or returns ErrNotFound.
//   - ForEach calls fn for every document in byte order of the keys,
//     stopping at the first error; raw is valid only during the call and
//     fn must not modify the collection.
//
// A key is 1 to MaxKey bytes of UTF-8 without NUL; an unknown collection or
// a key outside that is ErrInvalid. Writes inside View fail.
type Tx interface {
	Put(coll Collection, key string, v any) error
	Get(coll Collection, key string, v any) (bool, error)
	Delete(coll Collection, key string) error
	ForEach(coll Collection, fn func(key string, raw []byte) error) error
}

// MaxKey is the longest document key every store accepts (PostgreSQL's
// index entries bound it; bbolt would take more).
const MaxKey = 1024

// CheckKey returns ErrInvalid, saying why, for a key no store accepts.
func CheckKey(coll Collection, key string) error {
	switch {
	case key == "" || len(key) > MaxKey:
		return fmt.Errorf("store: %s: key of %d bytes, want 1..%d: %w", coll, len(key), MaxKey, ErrInvalid)
	case !utf8.ValidString(key) || strings.IndexByte(key, 0) >= 0:
		return fmt.Errorf("store: %s: key %q is not UTF-8 without NUL: %w", coll, key, ErrInvalid)
	}
	return nil
}

// CheckCollection returns ErrInvalid for an unknown collection.
func CheckCollection(coll Collection) error {
	if coll < 0 || int(coll) >= len(collectionBuckets) {
		return fmt.Errorf("store: unknown collection %d: %w", int(coll), ErrInvalid)
	}
	return nil
}

// Collections lists every document collection, in declaration order.
func Collections() []Collection {
	out := make([]Collection, len(collectionBuckets))
	for i := range out {
		out[i] = Collection(i)
	}
	return out
}

// DecodeDoc unmarshals a stored document into v: a JSON syntax error means
// the stored bytes are damaged (a *CorruptError naming the collection and
// key), any other error is the caller's type mismatch. An unknown
// collection is ErrInvalid, whatever raw holds.
func DecodeDoc(coll Collection, key string, raw []byte, v any) error {
	if CheckCollection(coll) != nil {
		return fmt.Errorf("store: decode %q: unknown collection %d: %w", key, int(coll), ErrInvalid)
	}
	return decodeDoc(coll, key, raw, v)
}

// boltTx is Tx on the bbolt file.
type boltTx struct {
	tx   *bolt.Tx
	done bool
}

// Update runs fn in one read-write transaction: all its changes commit
// together if fn returns nil, and none do otherwise. Keep fn short; it
// blocks every other writer.
func (db *DB) Update(fn func(tx Tx) error) error {
	return db.essential(func(btx *bolt.Tx) error {
		tx := &boltTx{tx: btx}
		defer func() { tx.done = true }()
		return fn(tx)
	})
}

// View runs fn in one read-only transaction that sees a consistent snapshot.
func (db *DB) View(fn func(tx Tx) error) error {
	return db.view(func(btx *bolt.Tx) error {
		tx := &boltTx{tx: btx}
		defer func() { tx.done = true }()
		return fn(tx)
	})
}

// bucket returns coll's bucket after validating coll and key.
func (tx *boltTx) bucket(coll Collection, key string, needKey bool) (*bolt.Bucket, error) {
	if tx.done {
		return nil, ErrTxDone
	}
	if err := CheckCollection(coll); err != nil {
		return nil, err
	}
	if needKey {
		if err := CheckKey(coll, key); err != nil {
			return nil, err
		}
	}
	return bucket(tx.tx, collectionBuckets[coll])
}

// Put stores v, encoded as JSON, under key in coll, replacing any document.
func (tx *boltTx) Put(coll Collection, key string, v any) error {
	b, err := tx.bucket(coll, key, true)
	if err != nil {
		return err
	}
	raw, err := EncodeDoc(coll, key, v)
	if err != nil {
		return err
	}
	if err := b.Put([]byte(key), raw); err != nil {
		return fmt.Errorf("store: put %s %q: %w", coll, key, err)
	}
	return nil
}

// Get decodes the document under key in coll into v and reports whether it
// exists. A stored document that is not valid JSON is a *CorruptError.
func (tx *boltTx) Get(coll Collection, key string, v any) (bool, error) {
	b, err := tx.bucket(coll, key, true)
	if err != nil {
		return false, err
	}
	raw := b.Get([]byte(key))
	if raw == nil {
		return false, nil
	}
	return true, decodeDoc(coll, key, raw, v)
}

// Delete removes the document under key in coll, or returns ErrNotFound.
func (tx *boltTx) Delete(coll Collection, key string) error {
	b, err := tx.bucket(coll, key, true)
	if err != nil {
		return err
	}
	if b.Get([]byte(key)) == nil {
		return fmt.Errorf("store: delete %s %q: %w", coll, key, ErrNotFound)
	}
	if err := b.Delete([]byte(key)); err != nil {
		return fmt.Errorf("store: delete %s %q: %w", coll, key, err)
	}
	return nil
}

// ForEach calls fn for every document of coll in key order, stopping at the
// first error. raw is the stored JSON, valid only during the call; fn must
// not modify coll.
func (tx *boltTx) ForEach(coll Collection, fn func(key string, raw []byte) error) error {
	b, err := tx.bucket(coll, "", false)
	if err != nil {
		return err
	}
	return b.ForEach(func(k, v []byte) error {
		return fn(string(k), v)
	})
}

// Put stores v, encoded as JSON, under key in coll in its own transaction.
func (db *DB) Put(coll Collection, key string, v any) error {
	return db.Update(func(tx Tx) error { return tx.Put(coll, key, v) })
}

// Get decodes the document under key in coll into v and reports whether it
// exists. The JSON is copied out and decoded after the transaction ends.
func (db *DB) Get(coll Collection, key string, v any) (bool, error) {
	var raw []byte
	err := db.view(func(btx *bolt.Tx) error {
		b, err := (&boltTx{tx: btx}).bucket(coll, key, true)
		if err != nil {
			return err
		}
		raw = bytes.Clone(b.Get([]byte(key)))
		return nil
	})
	if err != nil || raw == nil {
		return false, err
	}
	return true, decodeDoc(coll, key, raw, v)
}

// Delete removes the document under key in coll, or returns ErrNotFound.
func (db *DB) Delete(coll Collection, key string) error {
	return db.Update(func(tx Tx) error { return tx.Delete(coll, key) })
}

// ForEach calls fn for every document of coll in key order, stopping at the
// first error. It copies a consistent snapshot out of one transaction and
// calls fn after it ends, so fn may use the DB (including writes); raw is
// fn's to keep.
func (db *DB) ForEach(coll Collection, fn func(key string, raw []byte) error) error {
	type doc struct {
		key string
		raw []byte
	}
	var docs []doc
	err := db.View(func(tx Tx) error {
		return tx.ForEach(coll, func(key string, raw []byte) error {
			docs = append(docs, doc{key, bytes.Clone(raw)})
			return nil
		})
	})
	if err != nil {
		return err
	}
	for _, d := range docs {
		if err := fn(d.key, d.raw); err != nil {
			return err
		}
	}
	return nil
}
