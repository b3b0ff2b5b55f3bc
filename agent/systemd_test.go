package agent

// The systemd unit lives in systemd/; its tests live here because the
// package-boundary rules have no folder for a systemd Go package.

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// unitPath is the agent's systemd unit.
const unitPath = "../systemd/trit-agent.service"

// TestUnitVerifies runs systemd-analyze verify on the unit (skipped only
// where systemd-analyze does not exist). The ExecStart binary is replaced by
// /bin/true, since verify checks that it exists.
func TestUnitVerifies(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze not installed")
	}
	unit, err := os.ReadFile(unitPath)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(unit), "/usr/bin/trit-agent", "/bin/true")
	path := filepath.Join(t.TempDir(), "trit-agent.service")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", path).CombinedOutput()
	// verify prints problems of other units on some hosts; only ours count.
	var ours []string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "trit-agent.service") {
			ours = append(ours, line)
		}
	}
	if len(ours) > 0 || (err != nil && len(strings.TrimSpace(string(out))) == 0) {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
	t.Logf("systemd-analyze verify: ok")
}

// TestUnitHardening checks the settings the agent's security relies on, so
// a careless edit cannot drop them silently.
func TestUnitHardening(t *testing.T) {
	unit, err := os.ReadFile(unitPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Type=notify", "WatchdogSec=", "Restart=on-failure", "DynamicUser=yes", "StateDirectory=trit-agent",
		"ProtectSystem=strict", "NoNewPrivileges=yes", "DeviceAllow=char-i2c", "DeviceAllow=char-spi", "DeviceAllow=char-gpiochip", "SupplementaryGroups=", "ExecReload=/bin/kill -HUP $MAINPID", "ExecStartPre=/usr/bin/trit-agent check-config"} {
		if !strings.Contains(string(unit), "\n"+want) {
			t.Errorf("unit lacks %q", want)
		}
	}
}
