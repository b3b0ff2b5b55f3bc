// Package capped reads the small files a program is given by path — a
// key, a token, a certificate, a configuration, a bundle — up to a cap,
// so that a wrong path (a log, a disk image, /dev/zero, a pipe that never
// ends) fails saying so instead of filling the memory.
//
// Invariants:
//   - At most limit+1 bytes are read, whatever the file.
//   - A regular file larger than limit is refused by its size before a
//     byte is read; anything else (a pipe such as a shell's <(…), a
//     device) is read, and refused once it has given limit+1 bytes.
//   - A file of limit bytes or fewer is read whole.
//
// The errors name no path: callers name the file and what it is for.
// inference/bundle keeps its own copy for its key files: it may import
// the standard library only.
package capped

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// ErrTooLarge means a file holds more than its cap (TooLargeError says
// how much).
var ErrTooLarge = errors.New("larger than its cap")

// TooLargeError is the error for a file over its cap; it wraps
// ErrTooLarge.
type TooLargeError struct {
	Size  int64 // the file's size in bytes, -1 if unknown (not a regular file, or one that grew while read)
	Limit int64 // the cap, in bytes
}

func (e *TooLargeError) Error() string {
	if e.Size < 0 {
		return fmt.Sprintf("larger than %d bytes", e.Limit)
	}
	return fmt.Sprintf("%d bytes, larger than %d", e.Size, e.Limit)
}

func (e *TooLargeError) Unwrap() error { return ErrTooLarge }

// Read reads the open file f up to limit bytes (see the invariants).
func Read(f fs.File, limit int64) ([]byte, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Mode().IsRegular() && fi.Size() > limit {
		return nil, &TooLargeError{Size: fi.Size(), Limit: limit}
	}
	raw, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(raw)) > limit {
		return nil, &TooLargeError{Size: -1, Limit: limit} // not regular, or it grew while read
	}
	return raw, nil
}

// ReadFile reads the file at path up to limit bytes (see the invariants).
func ReadFile(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Read(f, limit)
}
