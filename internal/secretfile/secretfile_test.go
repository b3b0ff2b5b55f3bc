package secretfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckMode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(path, []byte("s"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		mode  os.FileMode
		group bool
		want  string // "" accepted
	}{
		{0o600, false, ""},
		{0o600, true, ""},
		{0o400, false, ""},
		{0o640, true, ""},
		{0o640, false, "mode 0640; a secret must not be readable by group or others (chmod 600)"},
		{0o604, true, "mode 0604; a secret must not be accessible by others (chmod 600, or 640 with the service's group)"},
		{0o602, true, "mode 0602"},
		{0o620, false, "mode 0620"},
	} {
		if err := os.Chmod(path, c.mode); err != nil {
			t.Fatal(err)
		}
		err := CheckMode(path, c.group)
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("mode %04o, group %v: %v, want %q", c.mode, c.group, err, c.want)
		}
	}
	if err := CheckMode("", false); err != nil {
		t.Errorf("no file: %v", err)
	}
	if err := CheckMode(filepath.Join(t.TempDir(), "none"), false); err == nil {
		t.Error("a missing file passed")
	}
}
