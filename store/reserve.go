package store

import (
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// The reserve keeps room in the database file for the writes that must not
// fail when the disk is full: job events and job records, the session
// counter, model slot changes, acknowledgements. It is a ballast value of
// Options.Reserve bytes (keyReserve in names.go). bbolt reuses the pages
// of deleted values, so when such an essential write fails to commit (the
// file could not grow), the ballast is deleted — a small transaction that
// needs no new space — and the write is tried once more on the pages it
// freed.
//
// Ordinary writes — telemetry, bundles, statistics — never use the reserve:
// while it is released they first try to put the ballast back, and fail
// with ErrNoSpace if that fails, so that telemetry filling a full disk
// cannot take the room the next job event needs. The first ordinary write
// after space came back re-arms it.
//
// Invariant: no ordinary write runs between an essential write's release
// of the reserve and its retry (DB.reserveMu): else it could put the
// ballast back on the freed pages, or fill them, and the retry would fail
// on a full disk all the same.

// DefaultReserve is the default size of the reserve: room for dozens of
// job events and their records at a few pages each.
const DefaultReserve = 64 << 10

// ErrNoSpace is returned by an ordinary write (Enqueue of ordinary
// messages, PutBundle, PutStat) while the disk is full and the reserve is in
// use by essential writes.
var ErrNoSpace = errors.New("no space left for the database (its reserve is kept for job events)")

// armReserve puts the ballast in place if it is missing. It reports whether
// the reserve is armed afterwards.
func (db *DB) armReserve() bool {
	if db.reserve == 0 {
		return true
	}
	if !db.reserveOut.Load() {
		return true
	}
	err := db.update(func(tx *bolt.Tx) error {
		m, err := bucket(tx, bucketOutboxMeta)
		if err != nil {
			return err
		}
		if m.Get(keyReserve) != nil {
			return nil
		}
		return m.Put(keyReserve, make([]byte, db.reserve))
	})
	if err != nil {
		return false
	}
	db.reserveOut.Store(false)
	return true
}

// releaseReserve deletes the ballast; it reports whether there was one.
func (db *DB) releaseReserve() bool {
	if db.reserve == 0 {
		return false
	}
	released := false
	err := db.update(func(tx *bolt.Tx) error {
		m, err := bucket(tx, bucketOutboxMeta)
		if err != nil {
			return err
		}
		if m.Get(keyReserve) == nil {
			return nil
		}
		released = true
		return m.Delete(keyReserve)
	})
	if err != nil || !released {
		return false
	}
	db.reserveOut.Store(true)
	return true
}

// essential runs an essential write transaction: if fn succeeds but the
// commit fails (no space to grow the file), the reserve is released and fn
// runs once more. fn must derive everything from tx, as it may run twice.
func (db *DB) essential(fn func(tx *bolt.Tx) error) error {
	fnOK := false
	err := db.update(func(tx *bolt.Tx) error {
		err := fn(tx)
		fnOK = err == nil
		return err
	})
	var dmg *DamagedError
	if err == nil || !fnOK || errors.As(err, &dmg) {
		return err
	}
	db.reserveMu.Lock()
	defer db.reserveMu.Unlock()
	if !db.releaseReserve() {
		return err
	}
	if reserveReleased != nil {
		reserveReleased()
	}
	return db.update(fn)
}

// reserveReleased, when a test sets it, runs between an essential write's
// release of the reserve and its retry.
var reserveReleased func()

// ordinary runs an ordinary write transaction: never on the reserve.
func (db *DB) ordinary(fn func(tx *bolt.Tx) error) error {
	db.reserveMu.Lock()
	defer db.reserveMu.Unlock()
	if !db.armReserve() {
		return ErrNoSpace
	}
	return db.update(fn)
}

// ReserveInUse reports whether the reserve was released for essential
// writes and has not been re-armed since (the disk was or is full).
func (db *DB) ReserveInUse() bool { return db.reserveOut.Load() }

// initReserve records at Open whether the ballast is present, and puts it in
// place if it is not and there is room (a failure is not an error: the disk
// may be full right now, and ordinary writes retry).
func (db *DB) initReserve(readOnly bool) error {
	if db.reserve == 0 {
		return nil
	}
	present := false
	err := db.view(func(tx *bolt.Tx) error {
		m, err := bucket(tx, bucketOutboxMeta)
		if err != nil {
			return err
		}
		present = m.Get(keyReserve) != nil
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: reserve: %w", err)
	}
	db.reserveOut.Store(!present)
	if !present && !readOnly {
		db.armReserve()
	}
	return nil
}
