package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/store/postgres/pgtest"
)

// TestOperatorDisabledOnEveryReplica: two trit-fleet processes on one
// PostgreSQL database (and one Mosquitto). An operator made with
// `trit-fleet operators add` (straight into PostgreSQL, while both run)
// works on both; the admin disables it through replica a, and its very
// next request to replica b is refused. Both replicas read the same audit
// trail.
func TestOperatorDisabledOnEveryReplica(t *testing.T) {
	dsn := pgtest.Database(t)
	w := newWorld(t)
	bin := t.TempDir()
	for _, p := range []string{"trit-fleet", "tritctl"} {
		build := exec.Command("go", "build", "-o", filepath.Join(bin, p), "github.com/trit-iot/trit/cmd/"+p)
		build.Stderr = os.Stderr
		if err := build.Run(); err != nil {
			t.Fatalf("building %s: %v", p, err)
		}
	}
	start := func(name string) (addr, conf string) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr = l.Addr().String()
		l.Close()
		conf = filepath.Join(w.dir, "fleet-"+name+".toml")
		text := fmt.Sprintf(`fleet = %q
database = %q
replica = %q
[mqtt]
broker = %q
client_id = "trit-fleet-%s"
[api]
listen = %q
token_file = %q
[keys]
command_key = %q
release_keys = [%q]
`, fleetName, dsn, name, w.broker.URL(), name, addr, filepath.Join(w.dir, "token"), w.cmdKey, w.releasePub)
		if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(filepath.Join(bin, "trit-fleet"), "run", "--config", conf)
		if os.Getenv("TRIT_E2E_LOG") != "" {
			cmd.Stderr = os.Stderr
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() })
		eventually(t, "replica "+name+" listening", 30*time.Second, func() bool {
			c, err := net.Dial("tcp", addr)
			if err == nil {
				c.Close()
			}
			return err == nil
		})
		return addr, conf
	}
	a, confA := start("a")
	b, _ := start("b")
	ctl := func(addr, tokenFile string, args ...string) (string, string, int) {
		t.Helper()
		cmd := exec.Command(filepath.Join(bin, "tritctl"), append(args, "--fleet", "http://"+addr, "--token-file", tokenFile)...)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return stdout.String(), stderr.String(), code
	}
	otto := filepath.Join(w.dir, "otto.token")
	if out, err := exec.Command(filepath.Join(bin, "trit-fleet"), "operators", "add", "otto", "--role", "operator", "-o", otto, "-c", confA).CombinedOutput(); err != nil {
		t.Fatalf("trit-fleet operators add on PostgreSQL while the replicas run: %v\n%s", err, out)
	}
	for _, addr := range []string{a, b} {
		if stdout, stderr, code := ctl(addr, otto, "operators", "whoami"); code != 0 || strings.TrimSpace(stdout) != "otto (operator)" {
			t.Fatalf("otto on %s: %d %q %q", addr, code, stdout, stderr)
		}
	}
	admin := filepath.Join(w.dir, "token")
	if _, stderr, code := ctl(a, admin, "operators", "disable", "otto"); code != 0 {
		t.Fatalf("disable otto through replica a: %s", stderr)
	}
	for _, addr := range []string{b, a} {
		if _, stderr, code := ctl(addr, otto, "operators", "whoami"); code == 0 || !strings.Contains(stderr, "HTTP 401") {
			t.Fatalf("otto on %s right after he was disabled: exit %d: %s", addr, code, stderr)
		}
	}
	stdout, stderr, code := ctl(b, admin, "audit", "--json", "--object", "operator/otto")
	var es []api.AuditEntry
	if code != 0 || json.Unmarshal([]byte(stdout), &es) != nil || len(es) != 2 || es[0].Action != "operator.add" || es[1].Action != "operator.disable" {
		t.Fatalf("the audit trail read on replica b: %d %s %s", code, stdout, stderr)
	}
}
