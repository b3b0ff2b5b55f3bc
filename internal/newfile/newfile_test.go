package newfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "secret")
	if err := Write(path, 0o600, []byte("s3cret\n")); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "s3cret\n" {
		t.Fatalf("%q %v", b, err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", fi.Mode().Perm())
	}
	// Never replaced, not even through a link.
	if err := Write(path, 0o600, []byte("other")); !errors.Is(err, fs.ErrExist) {
		t.Errorf("existing file: %v", err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(filepath.Join(dir, "elsewhere"), link); err != nil {
		t.Skip(err)
	}
	if err := Write(link, 0o600, []byte("x")); !errors.Is(err, fs.ErrExist) {
		t.Errorf("dangling link: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "elsewhere")); !errors.Is(err, fs.ErrNotExist) {
		t.Error("wrote through the link")
	}
	if b, _ := os.ReadFile(path); string(b) != "s3cret\n" {
		t.Errorf("replaced: %q", b)
	}
}
