package tritctl

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const hashA = "3fa1c0de3fa1c0de3fa1c0de3fa1c0de3fa1c0de3fa1c0de3fa1c0de3fa1c0de"

// TestBundlesList: bundles list prints each registered bundle with its full
// hash, model, release, size and the devices running it, from GET
// /v1/bundles; --json prints the API's records.
func TestBundlesList(t *testing.T) {
	newFakeFleet(t, map[string]string{
		"GET /v1/bundles": `[{"hash":"` + hashA + `","model_id":"vib","release":2,"size":9120,"key_id":"00112233","added_at":"2026-11-20T10:00:00Z","devices":3},
			{"hash":"b0b0","model_id":"vib","release":1,"size":9000,"key_id":"00112233","added_at":"2026-11-19T10:00:00Z","devices":0}]`,
	})
	stdout, stderr, code := runCtl(t, "bundles", "list")
	if code != 0 {
		t.Fatalf("bundles list: %d %q", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 3 || strings.Join(strings.Fields(lines[0]), " ") != "MODEL RELEASE SIZE DEVICES ADDED HASH" {
		t.Fatalf("bundles list:\n%s", stdout)
	}
	if f := strings.Fields(lines[1]); len(f) != 7 || f[0] != "vib" || f[1] != "2" || f[2] != "9120" || f[3] != "3" || f[6] != hashA {
		t.Fatalf("first row %q", lines[1])
	}
	stdout, _, code = runCtl(t, "bundles", "list", "--json")
	if code != 0 || !strings.Contains(stdout, `"devices": 3`) || !strings.Contains(stdout, hashA) {
		t.Fatalf("bundles list --json: %d\n%s", code, stdout)
	}
}

// TestBundleInspectHash: inspect prints the SHA-256 of the file, the hash
// the fleet registers a signed bundle by and rollouts name it by.
func TestBundleInspectHash(t *testing.T) {
	model, _ := trainBundle(t, t.TempDir())
	raw, err := os.ReadFile(model)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(raw)
	want := hex.EncodeToString(sum[:])
	if in := inspectJSON(t, model); in["hash"] != want {
		t.Errorf("inspect --json hash %v, want %s", in["hash"], want)
	}
	stdout, _, _ := runCtl(t, "bundle", "inspect", model)
	if !strings.Contains(stdout, "hash") || !strings.Contains(stdout, want) {
		t.Errorf("inspect does not print the hash %s:\n%s", want, stdout)
	}
}

// answerAll starts a fleet that answers every request with status and
// body, and points tritctl at it.
func answerAll(t *testing.T, status int, body string) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	t.Setenv("TRIT_FLEET_URL", srv.URL)
	t.Setenv("TRIT_FLEET_TOKEN", "test-token-0123456789")
}

// TestFleetErrorHints: the fleet's errors are printed once, without a
// doubled prefix (also from a fleet that still sends one), with what to do
// next.
func TestFleetErrorHints(t *testing.T) {
	deadbeef := strings.Repeat("deadbeef", 8)
	for _, c := range []struct {
		args   []string
		status int
		reply  string
		want   string
	}{
		{[]string{"rollout", "create", "--id", "r", "--bundle", deadbeef, "--device", "gw-1"}, 404, `{"error":"not found: bundle ` + deadbeef + `"}`,
			"tritctl: trit-fleet: not found: bundle " + deadbeef + " (HTTP 404); 'tritctl bundles list' lists the registered bundles and their hashes\n"},
		{[]string{"rollout", "create", "--id", "r", "--bundle", "dead", "--device", "gw-1"}, 404, `{"error":"fleet: not found: no registered bundle's hash starts with dead"}`,
			"tritctl: trit-fleet: not found: no registered bundle's hash starts with dead (HTTP 404); 'tritctl bundles list' lists the registered bundles and their hashes\n"},
		{[]string{"rollout", "plan", "--bundle", "dead", "--device", "gw-1"}, 404, `{"error":"not found: no registered bundle's hash starts with dead"}`,
			"tritctl: trit-fleet: not found: no registered bundle's hash starts with dead (HTTP 404); 'tritctl bundles list' lists the registered bundles and their hashes\n"},
		{[]string{"rollout", "status", "nope"}, 404, `{"error":"not found: rollout nope"}`,
			"tritctl: trit-fleet: not found: rollout nope (HTTP 404); 'tritctl rollout list' lists the rollouts\n"},
		{[]string{"devices", "show", "gw-9"}, 404, `{"error":"not found: device gw-9"}`,
			"tritctl: trit-fleet: not found: device gw-9 (HTTP 404); 'tritctl devices list' lists the devices\n"},
		{[]string{"devices", "list"}, 401, `{"error":"missing or wrong API token"}`,
			"tritctl: trit-fleet: missing or wrong API token (HTTP 401); the token (--token-file, $TRIT_FLEET_TOKEN_FILE or $TRIT_FLEET_TOKEN) must be an operator's (trit-fleet operators add), not disabled or expired, or the fleet's api.token_file\n"},
	} {
		answerAll(t, c.status, c.reply)
		_, stderr, code := runCtl(t, c.args...)
		if code != 1 || stderr != c.want {
			t.Errorf("%v:\n got %d %q\nwant 1 %q", c.args, code, stderr, c.want)
		}
	}
}

// TestPublishUnsigned: publishing an unsigned bundle says how to sign it,
// without asking the fleet.
func TestPublishUnsigned(t *testing.T) {
	f, _ := newFakeFleet(t, nil)
	model, _ := trainBundle(t, t.TempDir())
	_, stderr, code := runCtl(t, "publish", model)
	if code != 1 || !strings.Contains(stderr, "is not signed: sign it with 'tritctl bundle sign --key release.key "+model+" -o ") {
		t.Errorf("publish unsigned: %d %q", code, stderr)
	}
	if len(f.calls) != 0 {
		t.Errorf("publish of an unsigned bundle called the fleet: %v", f.calls)
	}
}

// TestNoTokenNamesBothVariables: without a token, the error names every
// way to give one, TRIT_FLEET_TOKEN_FILE (the README's) included.
func TestNoTokenNamesBothVariables(t *testing.T) {
	newFakeFleet(t, nil)
	t.Setenv("TRIT_FLEET_TOKEN", "")
	t.Setenv("TRIT_FLEET_TOKEN_FILE", "")
	_, stderr, code := runCtl(t, "devices", "list")
	for _, w := range []string{"--token-file", "TRIT_FLEET_TOKEN_FILE", "TRIT_FLEET_TOKEN"} {
		if code != 2 || !strings.Contains(stderr, w) {
			t.Errorf("no token: %d %q, want 2 naming %s", code, stderr, w)
		}
	}
	t.Setenv("TRIT_FLEET_TOKEN_FILE", filepath.Join(t.TempDir(), "api-token"))
	if _, stderr, code := runCtl(t, "devices", "list"); code != 1 || !strings.Contains(stderr, "TRIT_FLEET_TOKEN_FILE") {
		t.Errorf("missing token file: %d %q, want 1 naming TRIT_FLEET_TOKEN_FILE", code, stderr)
	}
}

// TestRolloutBundleFile: --bundle takes the published file, sent as its
// hash; an unsigned file is refused before the fleet is asked.
func TestRolloutBundleFile(t *testing.T) {
	dir := t.TempDir()
	model, _ := trainBundle(t, dir)
	key := filepath.Join(dir, "release")
	if _, stderr, code := runCtl(t, "keys", "gen", "--out", key); code != 0 {
		t.Fatal(stderr)
	}
	signed := filepath.Join(dir, "signed.trit")
	if _, stderr, code := runCtl(t, "bundle", "sign", "--key", key+".key", model, "-o", signed); code != 0 {
		t.Fatal(stderr)
	}
	raw, err := os.ReadFile(signed)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(raw)
	f, _ := newFakeFleet(t, map[string]string{"POST /v1/rollouts": `{"id":"r1","bundle":"x","state":"running"}`})
	runCtl(t, "rollout", "create", "--id", "r1", "--bundle", signed, "--device", "gw-1")
	if body := f.bodies["POST /v1/rollouts"]; !strings.Contains(body, `"bundle":"`+hex.EncodeToString(sum[:])+`"`) {
		t.Fatalf("rollout create --bundle FILE sent %s, want the file's hash", body)
	}
	_, stderr, code := runCtl(t, "rollout", "create", "--id", "r2", "--bundle", model, "--device", "gw-1")
	if code == 0 || !strings.Contains(stderr, "not a signed bundle") {
		t.Fatalf("unsigned file: %d %q", code, stderr)
	}
}
