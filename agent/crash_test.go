package agent

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trit-iot/trit/store"
	"github.com/trit-iot/trit/wire"
)

// Environment of the child agent process of TestCrashDuringInstall.
const (
	crashConfigEnv = "TRIT_AGENT_CRASH_CONFIG" // JSON config file
	crashPointEnv  = "TRIT_AGENT_CRASH_POINT"  // where to stop and wait for SIGKILL
)

// crashChild is the child process: a real agent that, on reaching the
// crash point, says so on stdout and waits to be killed.
func crashChild() {
	var cfg Config
	data, err := os.ReadFile(os.Getenv(crashConfigEnv))
	if err == nil {
		err = json.Unmarshal(data, &cfg)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "crash child:", err)
		os.Exit(3)
	}
	point := os.Getenv(crashPointEnv)
	crashHook = func(p string) {
		if p == point {
			fmt.Println("CRASH-POINT", p)
			select {} // SIGKILL comes now
		}
	}
	err = Run(context.Background(), &cfg, &Options{Logger: testLogger(nil)})
	fmt.Fprintln(os.Stderr, "crash child: Run returned:", err)
	os.Exit(4)
}

// TestCrashDuringInstall kills a real agent process with SIGKILL at each
// point of an install, then reopens its database: the old or the new model
// is active with intact bytes, never neither. A restarted agent then
// finishes the job.
func TestCrashDuringInstall(t *testing.T) {
	if os.Getenv(crashConfigEnv) != "" {
		crashChild()
	}
	for _, point := range []string{"before-put", "before-activate", "after-activate", "during-health", "after-commit"} {
		t.Run(point, func(t *testing.T) {
			f, k, cfg, v1 := withRelease1(t)

			v2 := f.publishBundle(makeBundle(t, bundleOpts{release: 2, signer: k.release}))
			c2 := f.deploy(v2, "r2", cmdOpts{})
			runChildUntil(t, cfg, point)

			db, err := store.Open(cfg.DBPath(), nil)
			if err != nil {
				t.Fatalf("reopen after SIGKILL: %v", err)
			}
			active, previous, err := db.Slots()
			if err != nil || active == nil {
				t.Fatalf("after SIGKILL at %s: active %v, err %v: no model", point, active, err)
			}
			if active.Hash != v1 && active.Hash != v2 {
				t.Fatalf("after SIGKILL at %s: active bundle %s is neither v1 nor v2", point, active.Hash)
			}
			for _, s := range []*store.Slot{active, previous} {
				if s == nil {
					continue
				}
				if _, err := db.Bundle(s.Hash); err != nil {
					t.Fatalf("after SIGKILL at %s: bundle of slot %+v: %v", point, s, err)
				}
			}
			which := "v1"
			if active.Hash == v2 {
				which = "v2 (" + string(active.State) + ")"
			}
			t.Logf("SIGKILL at %s: active %s", point, which)
			db.Close()

			startAgent(t, cfg, nil)
			if ev := f.terminal(c2, 20*time.Second); ev.State != wire.JobSucceeded {
				t.Fatalf("after restart: %+v", ev)
			}
			f.waitFor("state with v2 committed", 10*time.Second, func() bool {
				st := latest(f.states)
				return st != nil && st.Online && st.Model != nil && st.Model.Bundle == v2 && st.Model.Install == string(store.InstallCommitted)
			})
		})
	}
}

// runChildUntil runs the child agent until it reports the crash point, then
// SIGKILLs it.
func runChildUntil(t *testing.T, cfg *Config, point string) {
	t.Helper()
	data, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashDuringInstall$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashConfigEnv+"="+path, crashPointEnv+"="+point)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	reached := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "CRASH-POINT") {
				reached <- true
				return
			}
		}
		reached <- false
	}()
	select {
	case ok := <-reached:
		if !ok {
			cmd.Wait()
			t.Fatalf("child exited before reaching %s:\n%s", point, stderr.String())
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child did not reach %s within 30s:\n%s", point, stderr.String())
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
}
