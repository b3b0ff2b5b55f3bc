package server

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// Files trit-fleet reads at start — its configuration, the broker's
// password, the API token — are small; a path to a huge file or to an
// endless one (/dev/zero, a pipe that never ends) must fail, not fill the
// memory. A regular file is refused by its size before any read; anything
// else (a pipe such as <(pass show …)) is read up to the cap and one byte.

// maxConfigFile bounds trit-fleet's configuration file in bytes.
const maxConfigFile = 1 << 20

// maxPasswordFile bounds mqtt.password_file in bytes.
const maxPasswordFile = 64 << 10

// errTooLarge is readCapped's error for a file over its cap.
var errTooLarge = errors.New("file too large")

// readCapped reads the open file f (fi its Stat) when it holds at most
// limit bytes, or fails with errTooLarge.
func readCapped(f *os.File, fi fs.FileInfo, limit int64) ([]byte, error) {
	if fi.Mode().IsRegular() && fi.Size() > limit {
		return nil, errTooLarge
	}
	raw, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(raw)) > limit {
		return nil, errTooLarge
	}
	return raw, nil
}

// readFileCapped is readCapped on the file at path; what names the file
// in the error for one too large ("mqtt.password_file").
func readFileCapped(path string, limit int64, what string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	raw, err := readCapped(f, fi, limit)
	if errors.Is(err, errTooLarge) {
		return nil, fmt.Errorf("%s: larger than %d bytes (%d KiB), the most %s may hold", path, limit, limit>>10, what)
	}
	return raw, err
}
