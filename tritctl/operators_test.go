package tritctl

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// operators add writes the new token to -o (mode 0600) and sends the
// request as the API defines it; list prints a row per operator with its
// state; audit forwards its filters as the route's query.
func TestOperatorsAndAuditCommands(t *testing.T) {
	const tok = "bob.0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	f, _ := newFakeFleet(t, map[string]string{
		"POST /v1/operators": `{"operator":{"name":"bob","role":"operator","created":"2026-11-20T10:00:00Z"},"token":"` + tok + `"}`,
		"GET /v1/operators": `[{"name":"ann","role":"admin","created":"2026-11-20T10:00:00Z"},
			{"name":"prom","role":"metrics","machine":true,"created":"2026-11-20T10:00:00Z","expires":"2027-01-01T00:00:00Z"},
			{"name":"bob","role":"operator","disabled":true,"created":"2026-11-20T10:00:00Z","created_by":"ann"}]`,
		"GET /v1/audit": `[{"seq":7,"time":"2026-11-20T10:00:00Z","who":"vera","role":"viewer","remote":"10.0.0.9","agent":"tritctl/0.5.0",
			"action":"rollout.abort","object":"rollout/r1","outcome":"refused","status":403}]`,
	})
	out := filepath.Join(t.TempDir(), "bob.token")
	stdout, stderr, code := runCtl(t, "operators", "add", "bob", "--role", "operator", "--expires", "90d", "-o", out)
	if code != 0 || !strings.Contains(stdout, "written to "+out) {
		t.Fatalf("operators add: %d %q %q", code, stdout, stderr)
	}
	if raw, err := os.ReadFile(out); err != nil || strings.TrimSpace(string(raw)) != tok {
		t.Fatalf("token file: %q %v", raw, err)
	}
	if fi, _ := os.Stat(out); fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file mode %v", fi.Mode().Perm())
	}
	var req map[string]any
	if err := json.Unmarshal([]byte(f.bodies["POST /v1/operators"]), &req); err != nil || req["name"] != "bob" || req["role"] != "operator" || req["expires"] == nil {
		t.Fatalf("request body %s", f.bodies["POST /v1/operators"])
	}
	stdout, _, code = runCtl(t, "operators", "list")
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if code != 0 || len(lines) != 4 || !strings.Contains(lines[2], "machine") || !strings.Contains(lines[3], "disabled") {
		t.Fatalf("operators list:\n%s", stdout)
	}
	if _, stderr, code := runCtl(t, "operators", "add", "eve", "--role", "operator", "--expires", "yesterday"); code != 2 || !strings.Contains(stderr, "--expires") {
		t.Fatalf("a bad --expires: %d %s", code, stderr)
	}
	stdout, _, code = runCtl(t, "audit", "--operator", "vera", "--object", "rollout/r1", "--since", "2026-11-01T00:00:00Z", "--limit", "5")
	if code != 0 || !strings.Contains(stdout, "refused (403)") || !strings.Contains(stdout, "10.0.0.9 tritctl/0.5.0") {
		t.Fatalf("audit:\n%s", stdout)
	}
}
