package agent

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/trit-iot/trit/internal/buildinfo"
	"github.com/trit-iot/trit/internal/cli"
	"github.com/trit-iot/trit/internal/cli/clitest"
	"github.com/trit-iot/trit/sensors/sensorcmd"
)

// TestCLIPolicy: trit-agent follows the binaries' one command-line policy
// (internal/cli). --version was unknown, and the sensors tool's usage
// errors exited 1 where the docs say 2.
func TestCLIPolicy(t *testing.T) {
	main := func(args ...string) (int, string) {
		var out bytes.Buffer
		code := Main(args, &out, &out, sensorcmd.New(&out, &out))
		return code, out.String()
	}
	if code, out := main("--version"); code != 0 || !strings.Contains(out, buildinfo.Version) {
		t.Errorf("--version: exit %d %q", code, out)
	}
	for _, args := range [][]string{
		{"sensors", "read", "--count", "-1", "--kind", "synthetic"}, // the sensors tool's own usage error
		{"sensors", "read"},  // neither --config nor --kind
		{"run", "--nope"},    // unknown flag
		{"version", "extra"}, // argument count
		{"nosuch"},           // unknown command
		{"check-config", "--config", "/nonexistent/agent.toml"}, // unusable configuration
	} {
		if code, out := main(args...); code != 2 || !strings.HasPrefix(out, "trit-agent: ") {
			t.Errorf("%q: exit %d %q, want 2", args, code, out)
		}
	}
}

// TestVersionTexts: `trit-agent version` and `trit-agent --version` print
// the same line, the one the packaging scripts check.
func TestVersionTexts(t *testing.T) {
	var a, b bytes.Buffer
	if code := Main([]string{"version"}, &a, &a); code != 0 {
		t.Fatalf("version: exit %d %q", code, a.String())
	}
	if code := Main([]string{"--version"}, &b, &b); code != 0 {
		t.Fatalf("--version: exit %d %q", code, b.String())
	}
	if want := "trit-agent version " + buildinfo.Version + "\n"; a.String() != want || b.String() != want {
		t.Errorf("version %q, --version %q, want both %q", a.String(), b.String(), want)
	}
}

// TestVocabulary: every trit-agent command, the sensors tool's included,
// has an example in its help, and its flags follow the vocabulary the four
// programs share (docs/CLI.md).
func TestVocabulary(t *testing.T) {
	root := NewCommand(io.Discard, io.Discard)
	root.AddCommand(sensorcmd.New(io.Discard, io.Discard))
	if bad := cli.Lint(root, true); len(bad) > 0 {
		t.Errorf("the flag vocabulary (docs/CLI.md) is broken:\n  %s", strings.Join(bad, "\n  "))
	}
	newRoot := func() *cobra.Command {
		root := NewCommand(io.Discard, io.Discard)
		root.AddCommand(sensorcmd.New(io.Discard, io.Discard))
		return root
	}
	if bad := clitest.Check(newRoot); len(bad) > 0 {
		t.Errorf("examples in the help that do not parse:\n  %s", strings.Join(bad, "\n  "))
	}
}
