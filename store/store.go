package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
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

	// StartFresh makes Open replace a file it would refuse as damaged (see
	// *DamagedError: empty, truncated, structurally broken, not a trit
	// database) by a new, empty database. The damaged file is renamed to
	// path.damaged-<UTC time>, never deleted; DB.MovedAside names it. Only
	// an operator may ask for this: an empty database has lost everything
	// (a gateway's anti-rollback floor and sequence, a fleet's registry).
	// A sound file, a locked one or one from a newer program is never moved.
	StartFresh bool

	// ReadOnly opens an existing file with a shared lock and without
	// migrations, for tools that only read (a backup); writes fail.
	ReadOnly bool

	// Reserve is the room kept in the file for essential writes when the
	// disk is full (reserve.go). Zero means DefaultReserve; negative, none.
	Reserve int64
}

// DB is an open trit database. It is safe for concurrent use; every method
// runs in its own short bbolt transaction unless documented otherwise.
type DB struct {
	bolt       *bolt.DB
	outboxMax  uint64
	reserve    int         // bytes of the reserve ballast; 0: none
	reserveOut atomic.Bool // the ballast is not in the file
	// reserveMu keeps ordinary writes out of an essential write's retry
	// on the reserve's pages (reserve.go).
	reserveMu  sync.Mutex
	movedAside string // where Open moved a damaged file, if it did
}

// Open opens or creates the database at path (mode 0600), waits at most
// opts.Timeout for the file lock, checks the file and brings the schema up
// to date.
//
// A missing file is created (atomically: a crash never leaves a file that
// exists but was not initialised). An existing file must be a sound trit
// database: an empty (0-byte) file, a truncated one, one whose pages bbolt's
// consistency check refuses, or a bbolt file without trit's schema is a
// *DamagedError (matching ErrCorrupt) and is left exactly as it was, unless
// opts.StartFresh. Open never panics on a damaged file.
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
	if o.ReadOnly && o.StartFresh {
		return nil, fmt.Errorf("store: open %s: ReadOnly and StartFresh together: %w", path, ErrInvalid)
	}

	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) && !o.ReadOnly {
		if err := create(path, &o, migs); err != nil {
			return nil, err
		}
	} else if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	db, err := openExisting(path, &o, migs)
	var damaged *DamagedError
	if !o.StartFresh || !errors.As(err, &damaged) {
		return db, err
	}
	aside := path + ".damaged-" + time.Now().UTC().Format("20060102T150405.000Z")
	if err := os.Rename(path, aside); err != nil {
		return nil, fmt.Errorf("store: open %s: moving the damaged file aside: %w", path, err)
	}
	if err := create(path, &o, migs); err != nil {
		return nil, err
	}
	if db, err = openExisting(path, &o, migs); err != nil {
		return nil, err
	}
	db.movedAside = aside
	return db, nil
}

// openExisting opens a file that exists, checks it and migrates it.
func openExisting(path string, o *Options, migs []migration) (*DB, error) {
	bdb, err := openBolt(path, o)
	if err != nil {
		return nil, err
	}
	if err := verifyFile(bdb, path); err != nil {
		bdb.Close()
		return nil, err
	}
	db := &DB{bolt: bdb, outboxMax: uint64(o.OutboxMaxBytes)}
	switch {
	case o.Reserve == 0:
		db.reserve = DefaultReserve
	case o.Reserve > 0:
		db.reserve = int(min(o.Reserve, 1<<30))
	}
	if !o.ReadOnly {
		// Write only when there is something to do, so that a gateway whose
		// disk is full still starts.
		var pending bool
		err = db.view(func(tx *bolt.Tx) error {
			var err error
			pending, err = needsUpdate(tx, migs, db.outboxMax)
			return err
		})
		if err == nil && pending {
			err = db.essential(func(tx *bolt.Tx) error {
				if err := migrate(tx, migs); err != nil {
					return err
				}
				// Enforce the bound at once if it shrank since the last run.
				return db.trimOutbox(tx)
			})
		}
		if err != nil {
			bdb.Close()
			return nil, fmt.Errorf("store: open %s: %w", path, err)
		}
	}
	if err := db.initReserve(o.ReadOnly); err != nil {
		bdb.Close()
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	return db, nil
}

// needsUpdate reports whether Open must write: a migration is pending or
// the outbox is above its bound.
func needsUpdate(tx *bolt.Tx, migs []migration, outboxMax uint64) (bool, error) {
	meta, err := bucket(tx, bucketMeta)
	if err != nil {
		return false, err
	}
	v, err := getU64(meta, bucketMeta, keySchemaVersion)
	if err != nil {
		return false, err
	}
	if v != uint64(len(migs)) {
		return true, nil // migrate refuses a newer schema with ErrSchemaTooNew
	}
	m, err := bucket(tx, bucketOutboxMeta)
	if err != nil {
		return false, err
	}
	t, err := loadTotals(m)
	return t.bytes > outboxMax, err
}

// MovedAside returns where Open moved a damaged file when Options.StartFresh
// replaced it by a new database, or "".
func (db *DB) MovedAside() string { return db.movedAside }

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
