package store

import (
	"errors"
	"fmt"
)

// Sentinel errors. Functions wrap them with context; test with errors.Is.
var (
	// ErrNotFound is returned when a requested record does not exist.
	ErrNotFound = errors.New("not found")

	// ErrLocked is returned by Open when another process holds the database
	// file lock for longer than Options.Timeout.
	ErrLocked = errors.New("database is locked by another process")

	// ErrSchemaTooNew is returned by Open when the file was written by a
	// newer version of this package than the running one.
	ErrSchemaTooNew = errors.New("database schema is newer than this program supports")

	// ErrCorrupt is returned when a stored value cannot be decoded or fails
	// an integrity check. The error is a *CorruptError naming bucket and key.
	ErrCorrupt = errors.New("corrupt value")

	// ErrInvalid is returned for invalid arguments (empty key, bad hash,
	// unknown collection, ...).
	ErrInvalid = errors.New("invalid argument")

	// ErrNoBundle is returned by Activate when the bundle bytes for the hash
	// are not stored.
	ErrNoBundle = errors.New("bundle not stored")

	// ErrBundleInUse is returned by DeleteBundle for the active or previous
	// bundle.
	ErrBundleInUse = errors.New("bundle is in the active or previous slot")

	// ErrAlreadyActive is returned by Activate when the hash is already the
	// active bundle.
	ErrAlreadyActive = errors.New("bundle is already active")

	// ErrReleaseTooOld is returned by Activate when the release counter is
	// below the highest installed for the model and the install is not a
	// rollback.
	ErrReleaseTooOld = errors.New("release counter below the highest installed")

	// ErrNoActive is returned when an operation needs an active model and
	// none is installed.
	ErrNoActive = errors.New("no active model")

	// ErrNoPrevious is returned by Rollback when there is no previous model.
	ErrNoPrevious = errors.New("no previous model")

	// ErrJobFinished is returned by PutJob when the stored job already
	// reached a different terminal state.
	ErrJobFinished = errors.New("job already finished")

	// ErrTooLarge is returned by Enqueue for a message larger than the whole
	// outbox bound.
	ErrTooLarge = errors.New("message larger than the outbox bound")

	// ErrUnavailable marks an error of a database server that cannot be
	// reached or is not accepting work now (stopped, restarting, the
	// connection lost): the same request may succeed later, or on another
	// replica. store/postgres wraps such errors with it.
	ErrUnavailable = errors.New("database unavailable")

	// ErrConflict marks a transaction the database cancelled because it
	// conflicted with another running beside it (a deadlock, a
	// serialization failure): nothing of it was stored, and running the
	// whole transaction again may succeed.
	ErrConflict = errors.New("transaction conflicted with another")

	// ErrFenced is returned by a transaction that checked a lease it
	// acts under (a leader's fencing token) and found it no longer held:
	// nothing of it was stored.
	ErrFenced = errors.New("the lease it acts under is no longer held")
)

// CorruptError reports a stored value that could not be decoded. It matches
// ErrCorrupt with errors.Is.
type CorruptError struct {
	Bucket string // bucket name
	Key    string // key, rendered readably (numbers in decimal)
	Err    error  // what is wrong with the value
}

// Error implements error.
func (e *CorruptError) Error() string {
	return fmt.Sprintf("store: corrupt value in bucket %q key %q: %v", e.Bucket, e.Key, e.Err)
}

// Is reports whether target is ErrCorrupt.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

// Unwrap returns the underlying decode error.
func (e *CorruptError) Unwrap() error { return e.Err }

func corrupt(bucket []byte, key string, err error) error {
	return &CorruptError{Bucket: string(bucket), Key: key, Err: err}
}
