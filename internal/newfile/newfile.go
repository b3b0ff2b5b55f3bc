// Package newfile writes a file that must not exist yet, for secrets and
// keys that are never replaced: created with O_EXCL (so an existing file,
// or a link planted in its place, is refused), written and synced, and
// removed again if any step fails.
//
// inference/bundle keeps its own copy for its key files: it may import
// the standard library only.
package newfile

import "os"

// Write creates path with mode perm and writes data to it durably. It
// fails, wrapping fs.ErrExist, if path exists; on any failure it leaves no
// file behind.
func Write(path string, perm os.FileMode, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
	}
	return err
}
