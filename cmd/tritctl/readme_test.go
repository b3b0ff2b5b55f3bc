package main

import (
	"bufio"
	"context"
	"net"
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

// readmeSections are the README sections whose shell blocks a newcomer
// copies first: they must run as written, from the repository's root, on
// what a clone has. (make demo and make test have tests of their own; the
// rollout block is TestREADMEShipAModel's.)
var readmeSections = []string{"## Quick start", "### Train and evaluate on your own data"}

// readmeScript returns the shell lines of the indented code blocks in
// the README's readmeSections, without the make lines, continuation lines
// joined.
func readmeScript(t *testing.T, readme string) []string {
	return readmeBlocks(t, readme, readmeSections)
}

// readmeBlocks is readmeScript for the given sections.
func readmeBlocks(t *testing.T, readme string, readmeSections []string) []string {
	t.Helper()
	var lines []string
	found := map[string]bool{}
	in, blank, code := false, true, false
	sc := bufio.NewScanner(strings.NewReader(readme))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "#"):
			in, code = false, false
			for _, s := range readmeSections {
				if strings.TrimSpace(line) == s {
					in, found[s] = true, true
				}
			}
		case strings.TrimSpace(line) == "":
			blank = true
			continue
		case strings.HasPrefix(line, "    ") && (blank || code):
			code = true // an indented block starts after a blank line
		default:
			code = false
		}
		blank = false
		if !in || !code {
			continue
		}
		cmd := strings.TrimSpace(line)
		if strings.HasPrefix(cmd, "make ") {
			continue
		}
		if n := len(lines); n > 0 && strings.HasSuffix(lines[n-1], "\\") {
			lines[n-1] = strings.TrimSuffix(lines[n-1], "\\") + cmd
			continue
		}
		lines = append(lines, cmd)
	}
	for _, s := range readmeSections {
		if !found[s] {
			t.Fatalf("README.md has no section %q", s)
		}
	}
	return lines
}

// TestREADMEOwnData runs the README's quick-start and own-data blocks as
// a newcomer would, copy-pasted into bash from the repository's root: in a
// copy of the root made of symbolic links (so that what the commands
// write, bin/ and the model, stays out of the checkout). Each command's
// time is logged: the README's estimates come from them.
func TestREADMEOwnData(t *testing.T) {
	if testing.Short() {
		t.Skip("builds tritctl and trains on the example (about 20 s); skipped with -short")
	}
	for _, tool := range []string{"bash", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
	root := repoRoot(t)
	raw, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	lines := readmeScript(t, string(raw))
	script := strings.Join(lines, "\n")
	for _, want := range []string{"bin/tritctl train ", "bin/tritctl eval "} {
		if !strings.Contains(script, want) {
			t.Fatalf("the README's own-data block has no %q line:\n%s", want, script)
		}
	}

	// The copy: every entry of the root but .git and bin/, linked.
	dir := t.TempDir()
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if n := e.Name(); n != ".git" && n != "bin" {
			if err := os.Symlink(filepath.Join(root, n), filepath.Join(dir, n)); err != nil {
				t.Fatal(err)
			}
		}
	}
	// bash -e stops at the first failing line; -x with the time in PS4
	// marks where each line starts.
	cmd := exec.Command("bash", "-c", "set -eo pipefail\nPS4='+ [$EPOCHREALTIME] '\nset -x\n"+script+"\n: done")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TRIT_DATA=")
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the README's block failed (%v) after %.1f s:\n%s", err, time.Since(start).Seconds(), out)
	}
	logTimes(t, string(out))
	text := string(out)
	for _, want := range []string{"result: accuracy ", "weakest class: ", "on room-next-week.csv: accuracy "} {
		if !strings.Contains(text, want) {
			t.Errorf("the README's block printed no %q:\n%s", want, text)
		}
	}
	if m := regexp.MustCompile(`on room-next-week.csv: accuracy ([0-9.]+)%`).FindStringSubmatch(text); m != nil {
		if acc, _ := strconv.ParseFloat(m[1], 64); acc < 90 {
			t.Errorf("the example model is right on %.1f%% of the next week's readings; the README promises better", acc)
		}
	}
}

// logTimes logs how long each traced line of bash -x output took.
func logTimes(t *testing.T, out string) {
	re := regexp.MustCompile(`(?m)^\+ \[([0-9.]+)\] (.*)$`)
	ms := re.FindAllStringSubmatch(out, -1)
	for i := 0; i+1 < len(ms); i++ {
		a, _ := strconv.ParseFloat(ms[i][1], 64)
		b, _ := strconv.ParseFloat(ms[i+1][1], 64)
		t.Logf("%6.1f s  %s", b-a, ms[i][2])
	}
}

// TestREADMEShipAModel runs the README's "Ship a model to gateways" block
// as written — trit-fleet, a trit-agent, training, signing, publishing,
// the rollout and its watch — in a copy of the repository's root. Only
// when the example's ports (8080, 1884) are taken on this machine are
// they moved, in the copied example configurations and the one line that
// names the API's address.
func TestREADMEShipAModel(t *testing.T) {
	if testing.Short() {
		t.Skip("builds three programs and trains a model (about a minute); skipped with -short")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash not installed")
	}
	root := repoRoot(t)
	raw, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	script := strings.Join(readmeBlocks(t, string(raw), []string{"### Ship a model to gateways"}), "\n")
	dir := t.TempDir()
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if n := e.Name(); n != ".git" && n != "bin" && n != "docs" && n != "try" {
			if err := os.Symlink(filepath.Join(root, n), filepath.Join(dir, n)); err != nil {
				t.Fatal(err)
			}
		}
	}
	// docs/ as links but for examples/, copied with free ports if needed.
	docs := filepath.Join(dir, "docs")
	if err := os.MkdirAll(filepath.Join(docs, "examples"), 0o755); err != nil {
		t.Fatal(err)
	}
	des, err := os.ReadDir(filepath.Join(root, "docs"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range des {
		if e.Name() != "examples" {
			if err := os.Symlink(filepath.Join(root, "docs", e.Name()), filepath.Join(docs, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
	ports := map[string]string{"127.0.0.1:8080": freeAddr(t, "127.0.0.1:8080"), "127.0.0.1:1884": freeAddr(t, "127.0.0.1:1884")}
	exs, err := os.ReadDir(filepath.Join(root, "docs", "examples"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range exs {
		b, err := os.ReadFile(filepath.Join(root, "docs", "examples", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		for from, to := range ports {
			text = strings.ReplaceAll(text, from, to)
		}
		if err := os.WriteFile(filepath.Join(docs, "examples", e.Name()), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for from, to := range ports {
		script = strings.ReplaceAll(script, from, to)
	}
	if !strings.Contains(script, "rollout status --watch") || !strings.Contains(script, "kill %1 %2") {
		t.Fatalf("the README's ship-a-model block has changed shape:\n%s", script)
	}
	// The block starts servers in the background: its output goes to a
	// file (a pipe would stay open while they live), it runs in a process
	// group of its own, and the group is killed at the end whatever
	// happened, so a failed line leaves nothing running.
	logPath := filepath.Join(t.TempDir(), "out")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", "set -eo pipefail\nPS4='+ [$EPOCHREALTIME] '\nset -x\n"+script+"\n: done")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TRIT_DATA=")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	start := time.Now()
	err = cmd.Run()
	if cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	out, _ := os.ReadFile(logPath)
	if err != nil {
		t.Fatalf("the README's block failed (%v) after %.1f s:\n%s", err, time.Since(start).Seconds(), out)
	}
	logTimes(t, string(out))
	text := string(out)
	for _, want := range []string{"bundle ", "completed", "vibration"} {
		if !strings.Contains(text, want) {
			t.Errorf("the README's block printed no %q:\n%s", want, text)
		}
	}
}

// freeAddr returns addr if nothing listens there, else a free loopback
// address.
func freeAddr(t *testing.T, addr string) string {
	t.Helper()
	if l, err := net.Listen("tcp", addr); err == nil {
		l.Close()
		return addr
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
