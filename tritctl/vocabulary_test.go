package tritctl

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/trit-iot/trit/internal/cli"
	"github.com/trit-iot/trit/internal/cli/clitest"
)

// TestVocabulary: every tritctl command has an example in its help, and
// its flags follow the vocabulary the four programs share (docs/CLI.md).
func TestVocabulary(t *testing.T) {
	if bad := cli.Lint(newRoot(&env{}), true); len(bad) > 0 {
		t.Errorf("the flag vocabulary (docs/CLI.md) is broken:\n  %s", strings.Join(bad, "\n  "))
	}
	if bad := clitest.Check(func() *cobra.Command { return newRoot(&env{}) }); len(bad) > 0 {
		t.Errorf("examples in the help that do not parse:\n  %s", strings.Join(bad, "\n  "))
	}
}
