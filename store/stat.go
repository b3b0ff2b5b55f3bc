package store

import (
	"bytes"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// PutStat stores an opaque named value, such as a rolling statistics
// snapshot, replacing any previous value.
func (db *DB) PutStat(name string, v []byte) error {
	if name == "" {
		return fmt.Errorf("store: put stat: empty name: %w", ErrInvalid)
	}
	err := db.ordinary(func(tx *bolt.Tx) error {
		b, err := bucket(tx, bucketStats)
		if err != nil {
			return err
		}
		return b.Put([]byte(name), v)
	})
	if err != nil {
		return fmt.Errorf("store: put stat %q: %w", name, err)
	}
	return nil
}

// Stat returns a copy of the named value, or ErrNotFound.
func (db *DB) Stat(name string) ([]byte, error) {
	var v []byte
	err := db.view(func(tx *bolt.Tx) error {
		b, err := bucket(tx, bucketStats)
		if err != nil {
			return err
		}
		raw := b.Get([]byte(name))
		if raw == nil {
			return ErrNotFound
		}
		v = bytes.Clone(raw)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: stat %q: %w", name, err)
	}
	return v, nil
}
