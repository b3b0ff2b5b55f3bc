package store

import (
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// NextSession durably increments the device's session counter and returns
// the new value (1 on the first call). The agent announces it on every MQTT
// connect so a stale Last Will can be told from the current one.
func (db *DB) NextSession() (uint64, error) {
	var n uint64
	err := db.essential(func(tx *bolt.Tx) error {
		b, err := bucket(tx, bucketDevice)
		if err != nil {
			return err
		}
		cur, err := getU64(b, bucketDevice, keySession)
		if err != nil {
			return err
		}
		n = cur + 1
		return b.Put(keySession, u64Bytes(n))
	})
	if err != nil {
		return 0, fmt.Errorf("store: next session: %w", err)
	}
	return n, nil
}

// Session returns the last value NextSession returned, or 0.
func (db *DB) Session() (uint64, error) {
	var n uint64
	err := db.view(func(tx *bolt.Tx) error {
		b, err := bucket(tx, bucketDevice)
		if err != nil {
			return err
		}
		n, err = getU64(b, bucketDevice, keySession)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("store: session: %w", err)
	}
	return n, nil
}
