package tritctl

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trit-iot/trit/inference/bundle"
	"github.com/trit-iot/trit/internal/capped/cappedtest"
	"github.com/trit-iot/trit/wire"
)

// TestPublishAndCAReadsBounded: publish, rollout create --bundle FILE and
// the certs commands' CA files read whole whatever they were given (a
// wrong path, /dev/zero: memory without end). Now publish and --bundle
// read up to the 30 KiB trit-fleet accepts (bundle.DefaultMaxSize), ca.crt
// up to 1 MiB and ca.key up to 64 KiB (bundle.MaxKeyFile), refusing more
// naming the file and the bound, and nothing is sent.
func TestPublishAndCAReadsBounded(t *testing.T) {
	f, _ := newFakeFleet(t, map[string]string{"POST /v1/bundles": `{"hash":"cafe","model_id":"vib","release":3}`, "POST /v1/rollouts": `{"id":"r1"}`})
	dir := t.TempDir()
	write := func(name string, n int) string { return cappedtest.File(t, dir, name, n) }
	big := write("big.trit", bundle.DefaultMaxSize+1)
	want := big + ": 30721 bytes, larger than the 30720-byte limit for a bundle trit-fleet accepts"
	if _, stderr, code := runCtl(t, "publish", big); code != 1 || !strings.Contains(stderr, want) {
		t.Errorf("publish of 30 KiB + 1: %d %q; want 1 saying %q", code, stderr, want)
	}
	if _, stderr, code := runCtl(t, "rollout", "create", "--id", "r1", "--bundle", big, "--device", "gw-1"); code != 1 || !strings.Contains(stderr, "--bundle: "+want) {
		t.Errorf("rollout create --bundle of 30 KiB + 1: %d %q; want 1 saying %q", code, stderr, want)
	}
	if _, err := os.Stat("/dev/zero"); err == nil {
		if _, stderr, code := runCtl(t, "publish", "/dev/zero"); code != 1 || !strings.Contains(stderr, "/dev/zero: larger than the 30720-byte limit for a bundle trit-fleet accepts") {
			t.Errorf("publish /dev/zero: %d %q", code, stderr)
		}
	}
	if len(f.calls) != 0 {
		t.Errorf("calls %v; want none", f.calls)
	}
	if _, stderr, code := runCtl(t, "publish", write("full.trit", bundle.DefaultMaxSize)); code != 0 || f.bodies["POST /v1/bundles"] != strings.Repeat("a", bundle.DefaultMaxSize) {
		t.Errorf("publish of 30 KiB: %d %q; want it sent whole", code, stderr)
	}

	pki := filepath.Join(dir, "pki")
	if _, stderr, code := runCtl(t, "certs", "ca", "--out", pki); code != 0 {
		t.Fatal(stderr)
	}
	// ca.crt padded past 1 MiB after its PEM block: read, it would parse.
	crt := filepath.Join(pki, "ca.crt")
	good, _ := os.ReadFile(crt)
	cappedtest.Pad(t, crt, wire.MaxCertFile+1)
	_, stderr, code := runCtl(t, "certs", "client", "--ca-dir", pki, "--out", pki, "--id", "gw-1")
	if want := "fleet CA: " + crt + ": 1048577 bytes, larger than the 1048576-byte limit for a certificate file"; code != 1 || !strings.Contains(stderr, want) {
		t.Errorf("ca.crt of 1 MiB + 1: %d %q; want 1 saying %q", code, stderr, want)
	}
	os.WriteFile(crt, good, 0o644)
	key := filepath.Join(pki, "ca.key")
	goodKey, _ := os.ReadFile(key)
	cappedtest.Pad(t, key, bundle.MaxKeyFile+1)
	_, stderr, code = runCtl(t, "certs", "client", "--ca-dir", pki, "--out", pki, "--id", "gw-1")
	if want := "fleet CA: " + key + ": 65537 bytes, larger than the 65536-byte limit for a key file"; code != 1 || !strings.Contains(stderr, want) {
		t.Errorf("ca.key of 64 KiB + 1: %d %q; want 1 saying %q", code, stderr, want)
	}
	os.WriteFile(key, goodKey, 0o600)
	if _, stderr, code := runCtl(t, "certs", "client", "--ca-dir", pki, "--out", pki, "--id", "gw-1"); code != 0 {
		t.Errorf("the CA as written: %d %q", code, stderr)
	}
}
