package e2e

import (
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet/access"
	"github.com/trit-iot/trit/fleet/inventory"
)

// TestUpgradeFromOneToken: trit-fleet started on a database written by the
// release before operators existed (testdata/fleet-schema1.db.gz: schema 1,
// one device, made with that release's store — commit 1f2c006 — by
// store.Open and a Put of fleet.Device "gw-old") works unchanged with its
// api.token_file: the data is there, tritctl works with the token; and
// the new parts work on the migrated file: an operator added through the
// running service reads the inventory, and the audit trail has the change.
func TestUpgradeFromOneToken(t *testing.T) {
	w := newWorld(t)
	bin := t.TempDir()
	for _, p := range []string{"trit-fleet", "tritctl"} {
		build := exec.Command("go", "build", "-o", filepath.Join(bin, p), "github.com/trit-iot/trit/cmd/"+p)
		build.Stderr = os.Stderr
		if err := build.Run(); err != nil {
			t.Fatalf("building %s: %v", p, err)
		}
	}
	gz, err := os.Open(filepath.Join("testdata", "fleet-schema1.db.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer gz.Close()
	zr, err := gzip.NewReader(gz)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(w.fleetDB()), 0o700); err != nil {
		t.Fatal(err)
	}
	db, err := os.OpenFile(w.fleetDB(), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(db, io.LimitReader(zr, 1<<20)); err != nil {
		t.Fatal(err)
	}
	db.Close()

	w.startFleetProcess(filepath.Join(bin, "trit-fleet"))
	ctl := func(tokenFile string, args ...string) string {
		t.Helper()
		out, err := exec.Command(filepath.Join(bin, "tritctl"), append(args, "--fleet", "http://"+w.api, "--token-file", tokenFile)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tritctl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	var ds []inventory.Device
	w.call("GET", "/v1/devices", nil, &ds)
	if len(ds) != 1 || ds[0].ID != "gw-old" || ds[0].Labels["site"] != "before-operators" {
		t.Fatalf("the old release's inventory: %+v", ds)
	}
	if out := ctl(filepath.Join(w.dir, "token"), "devices", "list"); !strings.Contains(out, "gw-old") {
		t.Fatalf("tritctl with the api.token_file's token:\n%s", out)
	}
	vic := filepath.Join(w.dir, "vic.token")
	if out, err := exec.Command(filepath.Join(bin, "trit-fleet"), "operators", "add", "vic", "--role", "viewer", "-o", vic,
		"-c", filepath.Join(w.dir, "fleet.toml")).CombinedOutput(); err != nil {
		t.Fatalf("trit-fleet operators add on the migrated database: %v\n%s", err, out)
	}
	if out := ctl(vic, "devices", "list"); !strings.Contains(out, "gw-old") {
		t.Fatalf("the new viewer's devices list:\n%s", out)
	}
	var es []api.AuditEntry
	if err := json.Unmarshal([]byte(ctl(filepath.Join(w.dir, "token"), "audit", "--json")), &es); err != nil ||
		len(es) != 1 || es[0].Action != "operator.add" || es[0].Object != "operator/vic" || es[0].Who != access.TokenFileOperator {
		t.Fatalf("audit after the upgrade: %+v %v", es, err)
	}
}
