package tritctl

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/trit-iot/trit/inference"
	"github.com/trit-iot/trit/inference/bundle"
	"github.com/trit-iot/trit/internal/capped"
)

// Models on disk are bundles (package inference/bundle, docs/BUNDLE.md):
// `tritctl train` writes an unsigned one, `tritctl bundle sign` signs it,
// and `tritctl eval` reads either. There is no other model format, so what
// is evaluated on the workstation is byte for byte what a gateway runs.

// maxFileSize caps how much of a file tritctl reads as a bundle. It is far
// above the agents' 30 KB default (a large-p model is legitimate on a
// workstation) but keeps a wrong path from being read whole.
const maxFileSize = 16 << 20

// modelIDFromPath derives a model ID from a file name: the base name up to
// its first dot, or "model" if that is empty.
func modelIDFromPath(path string) string {
	base := filepath.Base(path)
	if i := strings.IndexByte(base, '.'); i >= 0 {
		base = base[:i]
	}
	if len(base) > bundle.MaxModelID {
		base = base[:bundle.MaxModelID]
	}
	if base == "" || base == "/" {
		return "model"
	}
	return base
}

// readModelSized loads the bundle at path, builds its model and runs the
// bundle's self-test, and returns the model with the file's size in bytes.
// The signature is not checked: this is for evaluating a model on the
// operator's own machine (`tritctl bundle verify` checks signatures).
func readModelSized(path string) (*inference.Model, int, error) {
	raw, err := readFileCapped(path, "bundle file", maxFileSize)
	if err != nil {
		return nil, 0, err
	}
	m, _, err := decodeModel(path, raw)
	return m, len(raw), err
}

// decodeModel parses a bundle without checking its signature, builds the
// model and runs the self-test.
func decodeModel(path string, raw []byte) (*inference.Model, *bundle.Breakdown, error) {
	br, err := bundle.Inspect(raw)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: not a trit model bundle: %w", path, err)
	}
	m, err := inference.New(br.Bundle.Spec)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := bundle.SelfTest(m, br.Bundle); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, br, nil
}

// readFileCapped reads path, a regular file, refusing one larger than max
// bytes before reading it (and one that grows past max while it is read).
// what names the kind of file in the error ("bundle file").
func readFileCapped(path, what string, max int64) ([]byte, error) {
	f, fi, err := openStat(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	return readCapped(f, path, what, max)
}

// readSmallFile is readFileCapped for a file that need not be regular (a
// token file given as a shell's <(…), /dev/stdin): one that is not is read
// up to max bytes too, and refused if it holds more.
func readSmallFile(path, what string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readCapped(f, path, what, max)
}

func openStat(path string) (*os.File, os.FileInfo, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// readCapped reads f, opened from path, refusing more than max bytes
// (internal/capped): a regular file by its size before reading, anything
// else once it has given one byte more.
func readCapped(f *os.File, path, what string, max int64) ([]byte, error) {
	b, err := capped.Read(f, max)
	var tl *capped.TooLargeError
	switch {
	case errors.As(err, &tl) && tl.Size >= 0:
		return nil, fmt.Errorf("%s: %d bytes, larger than the %d-byte limit for a %s", path, tl.Size, max, what)
	case errors.As(err, &tl):
		return nil, fmt.Errorf("%s: larger than the %d-byte limit for a %s", path, max, what)
	case err != nil:
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return b, nil
}

// errExists reports an output file that is there already.
var errExists = errors.New("file exists")

// writeFileAtomic writes data to path through a temporary file in the same
// directory, synced and renamed into place, so a reader never sees half a
// bundle and a failed write leaves any old file intact. Unless overwrite is
// set, an existing path is an error wrapping errExists.
func writeFileAtomic(path string, data []byte, perm os.FileMode, overwrite bool) error {
	if !overwrite {
		if _, err := os.Lstat(path); err == nil {
			return fmt.Errorf("%s: %w (use --force to replace it)", path, errExists)
		}
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	name := tmp.Name()
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Chmod(perm)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		if !overwrite {
			// Link fails if path appeared meanwhile; rename would replace it.
			if err = os.Link(name, path); err == nil {
				os.Remove(name)
				return nil
			}
		} else if err = os.Rename(name, path); err == nil {
			return nil
		}
	}
	os.Remove(name)
	return fmt.Errorf("writing %s: %w", path, err)
}
