package store

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// The database file: creating it, checking it when it is opened, guarding
// every transaction against a file damaged while in use, and copying it
// while it is in use (backup).
//
// bbolt trusts its file: a truncated file or a damaged page makes it panic
// (an assertion such as "Page expected to be: 5, but self identifies as 0",
// "invalid freelist page") or fault on a memory-mapped address. Open
// therefore opens and checks the file inside a guard that recovers those
// panics and, with debug.SetPanicOnFault, turns faults on the mapping into
// panics too; every later transaction runs inside the same guard. A damaged
// file is reported as a *DamagedError and left exactly as it was.

// DamagedError reports a database file that cannot be used as it is: empty,
// truncated, refused by bbolt's consistency check, or not a trit database.
// It matches ErrCorrupt with errors.Is.
type DamagedError struct {
	Path    string // the database file
	Problem string // what is wrong with it
}

// Error implements error. The text names the file and what to do.
func (e *DamagedError) Error() string {
	return fmt.Sprintf("store: database %s is damaged: %s. It was left as it is: restore it from a backup, "+
		"or start with an empty database (which keeps the damaged file aside)", e.Path, e.Problem)
}

// Is reports whether target is ErrCorrupt.
func (e *DamagedError) Is(target error) bool { return target == ErrCorrupt }

func damaged(path, format string, a ...any) error {
	return &DamagedError{Path: path, Problem: fmt.Sprintf(format, a...)}
}

// maxCheckErrors bounds the consistency-check findings quoted in an error.
const maxCheckErrors = 5

// guard runs fn so that a panic raised by bbolt on a damaged file — an
// assertion, a slice index taken from a damaged page, a fault on its memory
// map — becomes a *DamagedError for path instead of ending the process.
// onPanic, if not nil, runs first (to release what a half-finished
// bolt.Open holds). A panic in the store's own code inside a transaction
// is reported the same way, with its value: bbolt's and ours cannot be told
// apart once recovered.
func guard(path string, onPanic func(), fn func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		p := recover()
		if p == nil {
			return
		}
		if onPanic != nil {
			onPanic()
		}
		err = damaged(path, "bbolt: %v", p)
	}()
	return fn()
}

// update and view are bolt's Update and View inside guard: a page damaged
// while the program runs fails the transaction (rolled back) with a
// *DamagedError, instead of a panic that takes the whole service down.
func (db *DB) update(fn func(*bolt.Tx) error) error {
	return guard(db.Path(), nil, func() error { return db.bolt.Update(fn) })
}

func (db *DB) view(fn func(*bolt.Tx) error) error {
	return guard(db.Path(), nil, func() error { return db.bolt.View(fn) })
}

// create makes a new database at path, which does not exist: bbolt's
// initialisation and the migrations happen in path.new, which is then
// linked into place, so a file at path is never one whose creation was
// interrupted (Open refuses such a file: it has no schema).
func create(path string, o *Options, migs []migration) error {
	tmp := path + ".new"
	// A leftover of a creation that crashed never held any data.
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("store: create %s: %w", path, err)
	}
	bdb, err := bolt.Open(tmp, fileMode, &bolt.Options{Timeout: o.Timeout, NoSync: o.NoSync})
	if err != nil {
		return fmt.Errorf("store: create %s: %w", path, err)
	}
	err = bdb.Update(func(tx *bolt.Tx) error { return migrate(tx, migs) })
	if cerr := bdb.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Link(tmp, path)
		if errors.Is(err, fs.ErrExist) {
			err = nil // created meanwhile by another process: open that one
		} else if err != nil {
			err = os.Rename(tmp, path) // a file system without hard links
		}
	}
	os.Remove(tmp)
	if err == nil && !o.NoSync {
		err = syncDir(filepath.Dir(path))
	}
	if err != nil {
		return fmt.Errorf("store: create %s: %w", path, err)
	}
	return nil
}

// syncDir makes a new directory entry durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// openBolt opens an existing file with bbolt, mapping its errors and
// panics: a locked file is ErrLocked, a file bbolt cannot read is a
// *DamagedError.
func openBolt(path string, o *Options) (*bolt.DB, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	if fi.Size() == 0 {
		return nil, damaged(path, "the file is empty (0 bytes)")
	}
	// The data file bolt.Open opened, so that a panic half-way through
	// (after the file lock was taken) can release it.
	var file *os.File
	openFile := func(name string, flag int, perm os.FileMode) (*os.File, error) {
		f, err := os.OpenFile(name, flag, perm)
		if err == nil && file == nil {
			file = f
		}
		return f, err
	}
	var bdb *bolt.DB
	err = guard(path, func() {
		if file != nil {
			file.Close()
		}
	}, func() error {
		var err error
		bdb, err = bolt.Open(path, fileMode, &bolt.Options{Timeout: o.Timeout, NoSync: o.NoSync, ReadOnly: o.ReadOnly, OpenFile: openFile})
		return err
	})
	var dmg *DamagedError
	switch {
	case err == nil:
		return bdb, nil
	case errors.As(err, &dmg):
		return nil, err
	case errors.Is(err, bolterrors.ErrTimeout):
		return nil, fmt.Errorf("store: open %s: waited %v: %w", path, o.Timeout, ErrLocked)
	case errors.Is(err, bolterrors.ErrInvalid), errors.Is(err, bolterrors.ErrChecksum),
		errors.Is(err, bolterrors.ErrVersionMismatch):
		return nil, damaged(path, "%v (not a bbolt database, or both of its meta pages are damaged)", err)
	case strings.Contains(err.Error(), "file size too small"):
		// bbolt's mmap refuses a file shorter than its two meta pages with
		// an unexported error.
		return nil, damaged(path, "truncated to %d bytes (%v)", fi.Size(), err)
	}
	return nil, fmt.Errorf("store: open %s: %w", path, err)
}

// verifyFile checks an opened file before anything is written to it: it is
// not shorter than its pages reach, it has trit's schema, every page
// reachable from its buckets has a sound header, keys are in order, and
// bbolt's own consistency check (Tx.Check: pages referenced twice, pages
// both used and free, ...) finds nothing.
//
// The walk runs first, inside guard, and reads every key and value: bbolt
// runs Tx.Check on a goroutine of its own, where a panic could not be
// recovered, so it only sees pages the walk already found sound.
func verifyFile(bdb *bolt.DB, path string) error {
	return guard(path, nil, func() error {
		return bdb.View(func(tx *bolt.Tx) error {
			fi, err := os.Stat(path)
			if err != nil {
				return fmt.Errorf("store: open %s: %w", path, err)
			}
			if fi.Size() < tx.Size() {
				return damaged(path, "truncated: the file has %d bytes, its pages reach %d", fi.Size(), tx.Size())
			}
			if tx.Bucket(bucketMeta) == nil {
				return damaged(path, "it has no trit schema (not a trit database, or its creation was interrupted)")
			}
			if err := tx.ForEach(func(name []byte, b *bolt.Bucket) error {
				return walkBucket(path, string(name), b)
			}); err != nil {
				return err
			}
			var problems []string
			n := 0
			for err := range tx.Check() {
				if n++; n <= maxCheckErrors {
					problems = append(problems, err.Error())
				}
			}
			if n > 0 {
				if n > maxCheckErrors {
					problems = append(problems, fmt.Sprintf("and %d more", n-maxCheckErrors))
				}
				return damaged(path, "bbolt consistency check: %s", strings.Join(problems, "; "))
			}
			return nil
		})
	})
}

// walkBucket reads every key and value of b and its nested buckets, and
// checks that keys are strictly increasing.
func walkBucket(path, name string, b *bolt.Bucket) error {
	var prev []byte
	var sum byte
	err := b.ForEach(func(k, v []byte) error {
		if prev != nil && bytes.Compare(prev, k) >= 0 {
			return damaged(path, "bucket %q: keys out of order", name)
		}
		prev = k
		for _, c := range v {
			sum ^= c
		}
		if v == nil {
			if nb := b.Bucket(k); nb != nil {
				return walkBucket(path, name+"/"+string(k), nb)
			}
		}
		return nil
	})
	_ = sum
	return err
}

// WriteTo writes a consistent copy of the whole database to w from one read
// transaction (bbolt's Tx.WriteTo), while other transactions go on. The
// copy is a database file Open accepts. It implements io.WriterTo.
func (db *DB) WriteTo(w io.Writer) (int64, error) {
	var n int64
	err := db.view(func(tx *bolt.Tx) error {
		var err error
		n, err = tx.WriteTo(w)
		return err
	})
	if err != nil {
		return n, fmt.Errorf("store: copy %s: %w", db.Path(), err)
	}
	return n, nil
}

// Backup writes a consistent copy of the database to path while it is in
// use (see WriteTo). The copy is written to a temporary file next to path
// (mode 0600), synced, checked as Open checks a file, and only then renamed
// to path, replacing an older copy there; path is never left half-written.
func (db *DB) Backup(path string) (int64, error) {
	if fi, err := os.Stat(path); err == nil {
		if live, err := os.Stat(db.Path()); err == nil && os.SameFile(fi, live) {
			return 0, fmt.Errorf("store: backup to %s: that is the database itself: %w", path, ErrInvalid)
		}
	}
	return writeBackup(path, db.WriteTo)
}

// WriteBackup stores a database copy read from r (what WriteTo writes, as
// trit-fleet's API streams it) at path, as Backup does: temporary file,
// mode 0600, synced, checked, renamed.
func WriteBackup(path string, r io.Reader) (int64, error) {
	return writeBackup(path, func(w io.Writer) (int64, error) { return io.Copy(w, r) })
}

func writeBackup(path string, copyTo func(io.Writer) (int64, error)) (int64, error) {
	fail := func(err error) error { return fmt.Errorf("store: backup to %s: %w", path, err) }
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*") // mode 0600
	if err != nil {
		return 0, fail(err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // after a successful rename there is nothing left to remove
	n, err := copyTo(f)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return n, fail(err)
	}
	if n == 0 {
		return 0, fail(errors.New("the copy is empty"))
	}
	check, err := Open(tmp, &Options{ReadOnly: true})
	if err != nil {
		return n, fail(fmt.Errorf("the copy does not check: %w", err))
	}
	check.Close()
	if err := os.Rename(tmp, path); err != nil {
		return n, fail(err)
	}
	if err := syncDir(filepath.Dir(path)); err != nil {
		return n, fail(err)
	}
	return n, nil
}
