// Package cappedtest gives tests, by path, the files internal/capped
// reads: files at or over a cap (File, Pad), and those with no size to go
// by — a pipe, as a shell's <(…) passes one (/proc/self/fd/N, so Linux
// only), fed once or without end, as /dev/zero. It imports the standard
// library only; inference/bundle's tests, which may import nothing else,
// keep their own pipe.
package cappedtest

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// Pipes reports whether a pipe has a path here (/proc/self/fd).
func Pipes() bool {
	_, err := os.Stat("/proc/self/fd")
	return err == nil
}

// Pipe returns the path of the read end of a new pipe that feed writes
// to; the write end is closed once feed returns. The read end is closed
// when the test ends, which ends a feed that writes without end (Endless).
// Call it only where Pipes reports true.
func Pipe(t testing.TB, feed func(w io.Writer)) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	go func() { feed(w); w.Close() }()
	return "/proc/self/fd/" + strconv.Itoa(int(r.Fd()))
}

// Endless writes zeros to w until a write fails (the pipe's read end
// closed): /dev/zero through a pipe.
func Endless(w io.Writer) {
	zeros := make([]byte, 4096)
	for {
		if _, err := w.Write(zeros); err != nil {
			return
		}
	}
}

// File writes a file of n bytes named name in dir (mode 0600) and returns
// its path: a file just at or just over a cap.
func File(t testing.TB, dir, name string, n int) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, bytes.Repeat([]byte{'a'}, n), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Pad appends newlines to the file at path until it holds to bytes: a
// valid file (a configuration, a PEM file) brought to or past its cap.
func Pad(t testing.TB, path string, to int) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append(raw, bytes.Repeat([]byte{'\n'}, to-len(raw))...), 0o600); err != nil {
		t.Fatal(err)
	}
}
