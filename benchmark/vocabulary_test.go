package benchmark

import (
	"strings"
	"testing"

	"github.com/trit-iot/trit/internal/cli"
)

// TestVocabulary: trit-bench's flags follow the vocabulary the four
// programs share (docs/CLI.md): --json is a switch, a file to write is -o
// --out; every command has an example.
func TestVocabulary(t *testing.T) {
	if bad := cli.Lint(newRoot(&env{}), true); len(bad) > 0 {
		t.Errorf("the flag vocabulary (docs/CLI.md) is broken:\n  %s", strings.Join(bad, "\n  "))
	}
}
