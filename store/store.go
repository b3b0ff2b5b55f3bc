package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// Defaults used for zero fields of Options.
const (
	// DefaultTimeout is how long Open waits for the file lock.
	DefaultTimeout = 2 * time.Second
	// DefaultOutboxMaxBytes bounds the outbox (sum of stored record sizes).
	DefaultOutboxMaxBytes = 4 << 20
)

// fileMode is the permission of a newly created database file: it holds
// device state, so only the owner may read it.
const fileMode = 0o600

// Options configures Open. A nil *Options, and every zero field, means the
// default.
type Options struct {
	// Timeout is how long Open waits for another process to release the
	// file lock before failing with ErrLocked. Zero means DefaultTimeout.
	Timeout time.Duration

	// OutboxMaxBytes bounds the outbox; when exceeded the oldest messages
	// are dropped. Zero means DefaultOutboxMaxBytes.
	OutboxMaxBytes int64

	// NoSync skips fsync on commit. Only for tests and benchmarks that
	// simulate many devices: after a machine crash the file may be lost.
	NoSync bool
}

// DB is an open trit database. It is safe for concurrent use; every method
// runs in its own short bbolt transaction unless documented otherwise.
type DB struct {
	bolt      *bolt.DB
	outboxMax uint64
}

// Open opens or creates the database at path (mode 0600), waits at most
// opts.Timeout for the file lock, and brings the schema up to date.
func Open(path string, opts *Options) (*DB, error) {
	return open(path, opts, migrations)
}

// open is Open with an explicit migration list, so tests can exercise
// migrations without touching the real one.
func open(path string, opts *Options, migs []migration) (*DB, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Timeout < 0 {
		return nil, fmt.Errorf("store: open %s: negative Timeout %v: %w", path, o.Timeout, ErrInvalid)
	}
	if o.OutboxMaxBytes < 0 {
		return nil, fmt.Errorf("store: open %s: negative OutboxMaxBytes %d: %w", path, o.OutboxMaxBytes, ErrInvalid)
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.OutboxMaxBytes == 0 {
		o.OutboxMaxBytes = DefaultOutboxMaxBytes
	}

	bdb, err := bolt.Open(path, fileMode, &bolt.Options{
		Timeout: o.Timeout,
		NoSync:  o.NoSync,
	})
	switch {
	case errors.Is(err, bolterrors.ErrTimeout):
		return nil, fmt.Errorf("store: open %s: waited %v: %w", path, o.Timeout, ErrLocked)
	case errors.Is(err, bolterrors.ErrInvalid), errors.Is(err, bolterrors.ErrChecksum),
		errors.Is(err, bolterrors.ErrVersionMismatch):
		return nil, fmt.Errorf("store: open %s: %w: %w", path, ErrCorrupt, err)
	case err != nil:
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}

	db := &DB{bolt: bdb, outboxMax: uint64(o.OutboxMaxBytes)}
	err = bdb.Update(func(tx *bolt.Tx) error {
		if err := migrate(tx, migs); err != nil {
			return err
		}
		// Enforce the bound at once if it shrank since the last run.
		return db.trimOutbox(tx)
	})
	if err != nil {
		bdb.Close()
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	return db, nil
}

// Close releases the database and its file lock. Calling it again is a no-op.
func (db *DB) Close() error {
	return db.bolt.Close()
}

// Path returns the database file path.
func (db *DB) Path() string { return db.bolt.Path() }

// bucket returns the named bucket or a corruption error if the schema is
// damaged; buckets always exist after migration.
func bucket(tx *bolt.Tx, name []byte) (*bolt.Bucket, error) {
	b := tx.Bucket(name)
	if b == nil {
		return nil, corrupt(name, "", errors.New("bucket missing"))
	}
	return b, nil
}

func u64Bytes(v uint64) []byte {
	return binary.BigEndian.AppendUint64(make([]byte, 0, 8), v)
}

// decodeU64 decodes a u64 value; a missing value (nil) is zero.
func decodeU64(bucketName []byte, key string, v []byte) (uint64, error) {
	if v == nil {
		return 0, nil
	}
	if len(v) != 8 {
		return 0, corrupt(bucketName, key, fmt.Errorf("counter has %d bytes, want 8", len(v)))
	}
	return binary.BigEndian.Uint64(v), nil
}

// getU64 reads a u64 value from b; missing means zero.
func getU64(b *bolt.Bucket, bucketName, key []byte) (uint64, error) {
	return decodeU64(bucketName, string(key), b.Get(key))
}
