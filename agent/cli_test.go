package agent

import (
	"bytes"
	"strings"
	"testing"

	"github.com/trit-iot/trit/internal/buildinfo"
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
