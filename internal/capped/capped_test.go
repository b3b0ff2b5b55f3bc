package capped

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/trit-iot/trit/internal/capped/cappedtest"
)

// TestReadFile: a file of the cap is read whole; one byte more is refused
// with its size, before any read; a missing file is fs.ErrNotExist.
func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, n int) string { return cappedtest.File(t, dir, name, n) }
	if raw, err := ReadFile(write("full", 1000), 1000); err != nil || len(raw) != 1000 {
		t.Fatalf("at the cap: %d bytes, %v", len(raw), err)
	}
	if raw, err := ReadFile(write("empty", 0), 1000); err != nil || len(raw) != 0 {
		t.Fatalf("empty: %d bytes, %v", len(raw), err)
	}
	_, err := ReadFile(write("big", 1001), 1000)
	var tl *TooLargeError
	if !errors.Is(err, ErrTooLarge) || !errors.As(err, &tl) || tl.Size != 1001 || tl.Limit != 1000 || err.Error() != "1001 bytes, larger than 1000" {
		t.Fatalf("over the cap: %v", err)
	}
	if _, err := ReadFile(filepath.Join(dir, "none"), 1000); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a missing file: %v", err)
	}
}

// TestReadRegularBySize: a regular file over the cap is refused by its
// size: not a byte of it is read.
func TestReadRegularBySize(t *testing.T) {
	f := &unreadable{fstest.MapFile{Data: make([]byte, 10), Mode: 0o600, ModTime: time.Now()}}
	if _, err := Read(f, 9); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Read = %v, want ErrTooLarge", err)
	}
}

// unreadable is a regular file whose Read fails.
type unreadable struct{ fstest.MapFile }

func (u *unreadable) Stat() (fs.FileInfo, error) {
	fsys := fstest.MapFS{"f": &u.MapFile}
	return fs.Stat(fsys, "f")
}
func (u *unreadable) Read([]byte) (int, error) {
	return 0, errors.New("read a file refused by its size")
}
func (u *unreadable) Close() error { return nil }

// TestReadPipe: what is not a regular file has no size; it is read up to
// the cap, whole if it ends there, and refused once it gives one byte
// more, even if it never ends.
func TestReadPipe(t *testing.T) {
	pipe := func(feed func(w *os.File)) *os.File {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		go func() { feed(w); w.Close() }()
		return r
	}
	r := pipe(func(w *os.File) { w.WriteString(strings.Repeat("a", 1<<16)) })
	if raw, err := Read(r, 1<<16); err != nil || len(raw) != 1<<16 {
		t.Fatalf("a pipe of the cap: %d bytes, %v", len(raw), err)
	}
	r = pipe(func(w *os.File) { cappedtest.Endless(w) })
	_, err := Read(r, 1<<16)
	var tl *TooLargeError
	if !errors.As(err, &tl) || tl.Size != -1 || err.Error() != "larger than 65536 bytes" {
		t.Fatalf("an endless pipe: %v", err)
	}
	r.Close() // stops the writer
}
