package main

// These tests run scripts/demo.sh, the whole product on one machine (what
// `make demo` runs), with the real binaries: trit-fleet with its embedded
// broker, three trit-agents on simulated machines, and tritctl training,
// signing, publishing and rolling out. They keep the script from rotting
// and check that it cleans up after itself, also when interrupted.

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// buildDemoBinaries builds trit-fleet, trit-agent and tritctl once for
// both tests.
func buildDemoBinaries(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the whole product for about 20 s; skipped with -short")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash not installed")
	}
	bin := t.TempDir()
	cmd := exec.Command("go", "build", "-o", bin+"/", "./cmd/trit-fleet", "./cmd/trit-agent", "./cmd/tritctl")
	cmd.Dir = repoRoot(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// demoCmd returns the demo script's command with its temporary files in
// tmp. It runs in its own process group, as from a terminal, so that a
// test can send Ctrl-C's SIGINT to the whole group.
func demoCmd(t *testing.T, bin, tmp string, env ...string) *exec.Cmd {
	cmd := exec.Command("bash", filepath.Join(repoRoot(t), "scripts", "demo.sh"))
	cmd.Env = append(os.Environ(), append([]string{"DEMO_BIN=" + bin, "TMPDIR=" + tmp, "DEMO_KEEP="}, env...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd
}

// checkCleanedUp fails unless the demo removed its temporary directory
// and left no process behind (every process it starts names a file in it).
func checkCleanedUp(t *testing.T, tmp string) {
	t.Helper()
	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		t.Errorf("temporary directory not removed: %s/%s", tmp, left[0].Name())
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		raw, err := os.ReadFile(p)
		if err == nil && bytes.Contains(raw, []byte(tmp)) {
			t.Errorf("stray process %s: %s", filepath.Dir(p), bytes.ReplaceAll(raw, []byte{0}, []byte{' '}))
		}
	}
}

func TestDemoScript(t *testing.T) {
	bin := buildDemoBinaries(t)
	t.Run("complete", func(t *testing.T) {
		tmp := t.TempDir()
		cmd := demoCmd(t, bin, tmp, "DEMO_LIVE_SECONDS=6", "DEMO_STRICT=1")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		start := time.Now()
		if err := cmd.Run(); err != nil {
			t.Fatalf("demo.sh: %v\n%s", err, out.String())
		}
		text := out.String()
		for _, want := range []string{
			"$ tritctl train --synthetic machine --features-from $DEMO/agents/gw-1/agent.toml",
			"16 features, 3 classes",
			"registered vibration release 1",
			"rollout vibration-r1 created: vibration release 1 to 3 devices",
			"state: completed",
			"devices: succeeded 3 (of 3)",
			"3 of 3 gateways predicting",
			"rollout vibration-r2 created: vibration release 2 to 3 devices",
			"SHADOW  STATE",
		} {
			if !strings.Contains(text, want) {
				t.Errorf("output lacks %q", want)
			}
		}
		// The canary phase: the rollout runs with one device done (a
		// phase-2 install takes at least three 0.256 s windows, longer
		// than the 0.5 s polling interval).
		if !regexp.MustCompile(`running: .*succeeded 1 \(of 3\)`).MatchString(text) {
			t.Errorf("no sign of the one-device canary phase in the rollout status")
		}
		// The second model's shadow on the canary: its agreement is printed.
		if !regexp.MustCompile(`gw-1 +\S+ +\d+ +\d+\.\d%`).MatchString(text) {
			t.Errorf("no shadow agreement of gw-1 in the output")
		}
		// The result's prediction counts are those of the last table it
		// shows, not of an earlier one.
		if i := strings.LastIndex(text, "\n== result"); i < 0 {
			t.Errorf("no result step")
		} else {
			last := map[string]string{}
			for _, line := range strings.Split(text[:i], "\n") {
				if f := strings.Fields(line); len(f) > 6 && regexp.MustCompile(`^gw-\d$`).MatchString(f[0]) && (f[1] == "true" || f[1] == "false") {
					last[f[0]] = f[5]
				}
			}
			res := regexp.MustCompile(`(gw-\d)  machine \S+ +(\d+) predictions \(the table above\)`).FindAllStringSubmatch(text[i:], -1)
			if len(res) != 3 {
				t.Errorf("result lines: %q", res)
			}
			for _, r := range res {
				if last[r[1]] != r[2] {
					t.Errorf("the result says %s made %s predictions, the last table %q", r[1], r[2], last[r[1]])
				}
			}
		}
		m := regexp.MustCompile(`demo finished in ([0-9.]+) s`).FindStringSubmatch(text)
		if m == nil {
			t.Errorf("no run time in the output")
		} else {
			secs, _ := strconv.ParseFloat(m[1], 64)
			t.Logf("demo (without build) %.1f s; whole script %.1f s", secs, time.Since(start).Seconds())
		}
		if t.Failed() {
			t.Log(text)
		}
		checkCleanedUp(t, tmp)
	})
	t.Run("interrupted", func(t *testing.T) {
		tmp := t.TempDir()
		cmd := demoCmd(t, bin, tmp)
		pr, pw := io.Pipe()
		cmd.Stdout, cmd.Stderr = pw, pw
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait(); pw.Close() }()
		// Interrupt once the fleet and the agents run.
		var seen strings.Builder
		sc := bufio.NewScanner(pr)
		interrupted := false
		for sc.Scan() {
			seen.WriteString(sc.Text() + "\n")
			if !interrupted && strings.HasPrefix(sc.Text(), "== train the model") {
				time.Sleep(500 * time.Millisecond)
				syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
				interrupted = true
			}
		}
		var err error
		select {
		case err = <-done:
		case <-time.After(30 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			t.Fatalf("demo.sh did not stop within 30 s of SIGINT:\n%s", seen.String())
		}
		if !interrupted {
			t.Fatalf("the demo never reached training:\n%s", seen.String())
		}
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 {
			t.Errorf("demo.sh after SIGINT: %v, want exit status 130", err)
		}
		// Quietly: Ctrl-C is no crash, so no log tails (they held
		// kilobyte-long broker struct dumps), and a line that says so.
		_, after, _ := strings.Cut(seen.String(), "== train the model")
		if strings.Contains(after, "--- last lines of") || !strings.Contains(after, "demo stopped") {
			t.Errorf("output after SIGINT:\n%s", after)
		}
		for _, line := range strings.Split(after, "\n") {
			if len(line) > 300 {
				t.Errorf("a %d-byte line after SIGINT: %.200s…", len(line), line)
			}
		}
		checkCleanedUp(t, tmp)
		if t.Failed() {
			t.Log(seen.String())
		}
	})
}
