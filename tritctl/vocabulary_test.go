package tritctl

import (
	"strings"
	"testing"

	"github.com/trit-iot/trit/internal/cli"
)

// TestVocabulary: every tritctl command has an example in its help, and
// its flags follow the vocabulary the four programs share (docs/CLI.md).
func TestVocabulary(t *testing.T) {
	if bad := cli.Lint(newRoot(&env{}), true); len(bad) > 0 {
		t.Errorf("the flag vocabulary (docs/CLI.md) is broken:\n  %s", strings.Join(bad, "\n  "))
	}
}
