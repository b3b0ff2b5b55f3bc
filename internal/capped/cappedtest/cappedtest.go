// Package cappedtest gives tests, by path, the files internal/capped
// reads with no size to go by: a pipe, as a shell's <(…) passes one
// (/proc/self/fd/N, so Linux only), fed once or without end, as
// /dev/zero. It imports the standard library only; inference/bundle's
// tests, which may import nothing else, keep their own pipe.
package cappedtest

import (
	"io"
	"os"
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
