package server

// The fleet's systemd unit lives in systemd/ (the Debian package installs
// it); its tests live here, as the agent's live in agent/.

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const unitPath = "../../systemd/trit-fleet.service"

// TestUnitVerifies runs systemd-analyze verify on the unit (skipped only
// where systemd-analyze does not exist), with the binary replaced by
// /bin/true since verify checks that it exists.
func TestUnitVerifies(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze not installed")
	}
	unit, err := os.ReadFile(unitPath)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(unit), "/usr/bin/trit-fleet", "/bin/true")
	path := filepath.Join(t.TempDir(), "trit-fleet.service")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", path).CombinedOutput()
	var ours []string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "trit-fleet.service") {
			ours = append(ours, line)
		}
	}
	if len(ours) > 0 || (err != nil && len(strings.TrimSpace(string(out))) == 0) {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// TestUnitSettings checks what the package and operators rely on: the
// config check before start, reload by SIGHUP, the service user and the
// hardening.
func TestUnitSettings(t *testing.T) {
	unit, err := os.ReadFile(unitPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ExecStartPre=/usr/bin/trit-fleet check-config --config " + DefaultConfigPath,
		"ExecStart=/usr/bin/trit-fleet run --config " + DefaultConfigPath, "ExecReload=/bin/kill -HUP $MAINPID",
		"User=trit-fleet", "StateDirectory=trit-fleet", "ProtectSystem=strict", "NoNewPrivileges=yes"} {
		if !strings.Contains(string(unit), "\n"+want) {
			t.Errorf("unit lacks %q", want)
		}
	}
}
