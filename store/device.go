package store

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"strconv"

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

// Instance returns the database's instance ID, 16 lowercase hex digits of a
// random 64-bit number drawn the first time it is asked for and kept. A
// gateway whose database was reset or replaced has a new one: the fleet
// tells from it that the gateway's session counter started again, and that
// a Last Will carrying the old one is stale.
func (db *DB) Instance() (string, error) {
	var id uint64
	err := db.view(func(tx *bolt.Tx) error {
		b, err := bucket(tx, bucketDevice)
		if err != nil {
			return err
		}
		id, err = getU64(b, bucketDevice, keyInstance)
		return err
	})
	if err == nil && id == 0 {
		var buf [8]byte
		for id == 0 {
			rand.Read(buf[:]) // never fails (crypto/rand)
			id = binary.BigEndian.Uint64(buf[:])
		}
		err = db.essential(func(tx *bolt.Tx) error {
			b, err := bucket(tx, bucketDevice)
			if err != nil {
				return err
			}
			stored, err := getU64(b, bucketDevice, keyInstance)
			if err != nil || stored != 0 {
				id = stored
				return err
			}
			return b.Put(keyInstance, u64Bytes(id))
		})
	}
	if err != nil {
		return "", fmt.Errorf("store: instance: %w", err)
	}
	s := strconv.FormatUint(id, 16)
	for len(s) < 16 {
		s = "0" + s
	}
	return s, nil
}
