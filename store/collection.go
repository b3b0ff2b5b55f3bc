package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

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
)

// String returns the collection's bucket name.
func (c Collection) String() string {
	if c < 0 || int(c) >= len(collectionBuckets) {
		return fmt.Sprintf("Collection(%d)", int(c))
	}
	return string(collectionBuckets[c])
}

// errTxDone is returned by a Tx used after its Update or View returned.
var errTxDone = errors.New("store: transaction already finished")

// Tx is a transaction over the collections, passed to the function given to
// Update or View. It is valid only until that function returns.
type Tx struct {
	tx   *bolt.Tx
	done bool
}

// Update runs fn in one read-write transaction: all its changes commit
// together if fn returns nil, and none do otherwise. Keep fn short; it
// blocks every other writer.
func (db *DB) Update(fn func(tx *Tx) error) error {
	return db.essential(func(btx *bolt.Tx) error {
		tx := &Tx{tx: btx}
		defer func() { tx.done = true }()
		return fn(tx)
	})
}

// View runs fn in one read-only transaction that sees a consistent snapshot.
func (db *DB) View(fn func(tx *Tx) error) error {
	return db.view(func(btx *bolt.Tx) error {
		tx := &Tx{tx: btx}
		defer func() { tx.done = true }()
		return fn(tx)
	})
}

// bucket returns coll's bucket after validating coll and key.
func (tx *Tx) bucket(coll Collection, key string, needKey bool) (*bolt.Bucket, error) {
	if tx.done {
		return nil, errTxDone
	}
	if coll < 0 || int(coll) >= len(collectionBuckets) {
		return nil, fmt.Errorf("store: unknown collection %d: %w", int(coll), ErrInvalid)
	}
	if needKey && (key == "" || len(key) > bolt.MaxKeySize) {
		return nil, fmt.Errorf("store: %s: key of %d bytes, want 1..%d: %w", coll, len(key), bolt.MaxKeySize, ErrInvalid)
	}
	return bucket(tx.tx, collectionBuckets[coll])
}

// Put stores v, encoded as JSON, under key in coll, replacing any document.
func (tx *Tx) Put(coll Collection, key string, v any) error {
	b, err := tx.bucket(coll, key, true)
	if err != nil {
		return err
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("store: put %s %q: %w", coll, key, err)
	}
	if err := b.Put([]byte(key), raw); err != nil {
		return fmt.Errorf("store: put %s %q: %w", coll, key, err)
	}
	return nil
}

// Get decodes the document under key in coll into v and reports whether it
// exists. A stored document that is not valid JSON is a *CorruptError.
func (tx *Tx) Get(coll Collection, key string, v any) (bool, error) {
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
func (tx *Tx) Delete(coll Collection, key string) error {
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
func (tx *Tx) ForEach(coll Collection, fn func(key string, raw []byte) error) error {
	b, err := tx.bucket(coll, "", false)
	if err != nil {
		return err
	}
	return b.ForEach(func(k, v []byte) error {
		return fn(string(k), v)
	})
}

// decodeDoc unmarshals a stored document; a JSON syntax error means the
// stored bytes are damaged, any other error is the caller's type mismatch.
func decodeDoc(coll Collection, key string, raw []byte, v any) error {
	err := json.Unmarshal(raw, v)
	var syn *json.SyntaxError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &syn):
		return corrupt(collectionBuckets[coll], key, err)
	default:
		return fmt.Errorf("store: decode %s %q: %w", coll, key, err)
	}
}

// Put stores v, encoded as JSON, under key in coll in its own transaction.
func (db *DB) Put(coll Collection, key string, v any) error {
	return db.Update(func(tx *Tx) error { return tx.Put(coll, key, v) })
}

// Get decodes the document under key in coll into v and reports whether it
// exists. The JSON is copied out and decoded after the transaction ends.
func (db *DB) Get(coll Collection, key string, v any) (bool, error) {
	var raw []byte
	err := db.View(func(tx *Tx) error {
		b, err := tx.bucket(coll, key, true)
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
	return db.Update(func(tx *Tx) error { return tx.Delete(coll, key) })
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
	err := db.View(func(tx *Tx) error {
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
