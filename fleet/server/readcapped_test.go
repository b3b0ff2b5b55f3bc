package server

import (
	"errors"
	"strings"
	"testing"

	"github.com/trit-iot/trit/internal/capped/cappedtest"
)

// TestReadFileCapped: a file over its cap is refused naming it — by its
// size when regular, after cap+1 bytes when endless — and one at the cap
// is read whole (internal/capped holds the reading; this, the message).
// LoadConfig and the broker's password file go through it.
func TestReadFileCapped(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, n int) string { return cappedtest.File(t, dir, name, n) }
	if raw, err := readFileCapped(write("full", 1000), 1000, "a test file"); err != nil || len(raw) != 1000 {
		t.Fatalf("at the cap: %d bytes, %v", len(raw), err)
	}
	big := write("big", 1001)
	if _, err := readFileCapped(big, 1000, "a test file"); err == nil || err.Error() != big+": larger than 1000 bytes (0 KiB), the most a test file may hold" {
		t.Fatalf("over the cap: %v", err)
	}
	if cappedtest.Pipes() {
		path := cappedtest.Pipe(t, cappedtest.Endless)
		if _, err := readFileCapped(path, 1<<16, "a test file"); err == nil || err.Error() != path+": larger than 65536 bytes (64 KiB), the most a test file may hold" {
			t.Fatalf("an endless pipe: %v", err)
		}
	}
	cfg := write("fleet.toml", maxConfigFile+1)
	if _, err := LoadConfig(cfg); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), cfg+": larger than 1048576 bytes") {
		t.Fatalf("LoadConfig of a 1 MiB + 1 file: %v", err)
	}
}
