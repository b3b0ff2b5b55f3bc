package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// syncBuffer is a log sink safe for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestReloadBySIGHUP runs the real trit-agent and trit-fleet binaries and
// sends them SIGHUP, as `systemctl reload` does (ExecReload in systemd/):
// a valid edit is applied, an invalid file is refused with a log line
// naming the fault, and the process keeps running.
func TestReloadBySIGHUP(t *testing.T) {
	w := newWorld(t)
	bin := t.TempDir()
	for _, p := range []string{"trit-agent", "trit-fleet"} {
		build := exec.Command("go", "build", "-o", filepath.Join(bin, p), "github.com/trit-iot/trit/cmd/"+p)
		build.Stderr = os.Stderr
		if err := build.Run(); err != nil {
			t.Fatalf("building %s: %v", p, err)
		}
	}
	agentConf := func(level, site string) string {
		return fmt.Sprintf(`device_id = "hup-1"
fleet = %q
state_dir = %q
log_level = %q
labels = { site = %q }
release_keys = [%q]
command_keys = [%q]
[mqtt]
broker = %q
[[sensor]]
kind = "replay"
name = "vib"
file = %q
rate = 10.0
loop = true
`, fleetName, filepath.Join(w.dir, "hup-agent"), level, site, w.releasePub, w.cmdPub, w.broker.URL(), w.replay)
	}
	for _, c := range []struct {
		name, ready, valid, edited string
	}{
		{"trit-agent", "trit-agent ready", agentConf("info", "north"), agentConf("debug", "south")},
		{"trit-fleet", "trit-fleet serving", w.fleetConfig("127.0.0.1:0"), strings.Replace(w.fleetConfig("127.0.0.1:0"), "[mqtt]", "log_level = \"debug\"\n[mqtt]", 1)},
	} {
		t.Run(c.name, func(t *testing.T) {
			conf := filepath.Join(t.TempDir(), "config.toml")
			write := func(text string) {
				if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			write(c.valid)
			var logs syncBuffer
			cmd := exec.Command(filepath.Join(bin, c.name), "run", "--config", conf)
			cmd.Stderr = &logs
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			t.Cleanup(func() { cmd.Process.Signal(syscall.SIGTERM); <-exited })
			wait := func(what, text string, n int) {
				t.Helper()
				for deadline := time.Now().Add(30 * time.Second); strings.Count(logs.String(), text) < n; time.Sleep(50 * time.Millisecond) {
					select {
					case err := <-exited:
						t.Fatalf("%s exited (%v) waiting for %s; log:\n%s", c.name, err, what, logs.String())
					default:
					}
					if time.Now().After(deadline) {
						t.Fatalf("%s: no %s; log:\n%s", c.name, what, logs.String())
					}
				}
			}
			wait("start", c.ready, 1)
			write(c.edited)
			cmd.Process.Signal(syscall.SIGHUP)
			wait("reload", "configuration reloaded", 1)
			if !strings.Contains(logs.String(), "log_level") {
				t.Errorf("the reload does not report the new log_level; log:\n%s", logs.String())
			}
			write(c.edited + "\nnot_a_key = 1\n")
			cmd.Process.Signal(syscall.SIGHUP)
			wait("refusal", "configuration reload refused", 1)
			if !strings.Contains(logs.String(), "not_a_key") {
				t.Errorf("the refusal does not name the bad key; log:\n%s", logs.String())
			}
			// Still running: the next valid file is applied.
			write(c.edited)
			cmd.Process.Signal(syscall.SIGHUP)
			wait("a reload after the refusal", "configuration reloaded", 2)
		})
	}
}
