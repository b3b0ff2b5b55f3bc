package store

import (
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// A migration moves the schema from version i to i+1, where i is its index
// in the migration list. It runs inside the single write transaction that
// applies all pending migrations, so a crash leaves the old version intact.
type migration func(tx *bolt.Tx) error

// migrations is the ordered schema history; the code's schema version is
// len(migrations). Append only: never edit or reorder an entry that has
// shipped.
var migrations = []migration{
	migrateV1,
	migrateV2,
	migrateV3,
	migrateV4,
	migrateV5,
	migrateV6,
}

// migrateV1 creates the initial buckets.
func migrateV1(tx *bolt.Tx) error {
	for _, name := range schemaV1Buckets {
		if _, err := tx.CreateBucket(name); err != nil {
			return fmt.Errorf("create bucket %q (is this a trit database?): %w", name, err)
		}
	}
	return nil
}

// migrateV2 creates the fleet's operator and audit buckets.
func migrateV2(tx *bolt.Tx) error {
	for _, name := range schemaV2Buckets {
		if _, err := tx.CreateBucket(name); err != nil {
			return fmt.Errorf("create bucket %q: %w", name, err)
		}
	}
	return nil
}

// migrateV3 creates the fleet's model health bucket (health.go).
func migrateV3(tx *bolt.Tx) error {
	for _, name := range schemaV3Buckets {
		if _, err := tx.CreateBucket(name); err != nil {
			return fmt.Errorf("create bucket %q: %w", name, err)
		}
	}
	return nil
}

// migrateV4 creates the web console's sessions bucket (consolesession.go).
func migrateV4(tx *bolt.Tx) error {
	for _, name := range schemaV4Buckets {
		if _, err := tx.CreateBucket(name); err != nil {
			return fmt.Errorf("create bucket %q: %w", name, err)
		}
	}
	return nil
}

// migrateV5 creates the fleet's remote-training jobs bucket.
func migrateV5(tx *bolt.Tx) error {
	for _, name := range schemaV5Buckets {
		if _, err := tx.CreateBucket(name); err != nil {
			return fmt.Errorf("create bucket %q: %w", name, err)
		}
	}
	return nil
}

// migrateV6 creates the fleet's field windows bucket.
func migrateV6(tx *bolt.Tx) error {
	for _, name := range schemaV6Buckets {
		if _, err := tx.CreateBucket(name); err != nil {
			return fmt.Errorf("create bucket %q: %w", name, err)
		}
	}
	return nil
}

// migrate applies the pending migrations of migs and records the new version.
// A brand-new file has no meta bucket and is at version 0.
func migrate(tx *bolt.Tx, migs []migration) error {
	var version uint64
	if meta := tx.Bucket(bucketMeta); meta != nil {
		v, err := getU64(meta, bucketMeta, keySchemaVersion)
		if err != nil {
			return err
		}
		version = v
	}
	want := uint64(len(migs))
	if version > want {
		return fmt.Errorf("file has schema version %d, this program knows up to %d: %w", version, want, ErrSchemaTooNew)
	}
	if version == want {
		return nil
	}
	for v := version; v < want; v++ {
		if err := migs[v](tx); err != nil {
			return fmt.Errorf("migrate schema %d -> %d: %w", v, v+1, err)
		}
	}
	meta, err := bucket(tx, bucketMeta)
	if err != nil {
		return err
	}
	return meta.Put(keySchemaVersion, u64Bytes(want))
}

// Schema returns the schema version stored in the file.
func (db *DB) Schema() (uint64, error) {
	var v uint64
	err := db.view(func(tx *bolt.Tx) error {
		meta, err := bucket(tx, bucketMeta)
		if err != nil {
			return err
		}
		v, err = getU64(meta, bucketMeta, keySchemaVersion)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("store: schema: %w", err)
	}
	return v, nil
}
