package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// helpPage is one command's help: its path ("tritctl rollout create") and
// the lines of its Examples block.
type helpPage struct {
	path     string
	examples []string
}

// helpPages reads the help of program and of every command under it from
// the real binary (PROGRAM … --help), as a user sees it.
func helpPages(t *testing.T, bin, program string) []helpPage {
	t.Helper()
	var pages []helpPage
	var walk func(args []string)
	walk = func(args []string) {
		out, err := exec.Command(filepath.Join(bin, program), append(slices.Clone(args), "--help")...).Output()
		if err != nil {
			t.Fatalf("%s %s --help: %v", program, strings.Join(args, " "), err)
		}
		var examples, subs []string
		section := ""
		sc := bufio.NewScanner(strings.NewReader(string(out)))
		cont := false // the example line before ends with "\": this one goes on it
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "Examples:" || line == "Available Commands:":
				section = line
				continue
			case strings.TrimSpace(line) == "":
				section = ""
				continue
			}
			switch section {
			case "Examples:":
				// A shell line: continuations joined, comment lines left out.
				l := strings.TrimSpace(line)
				switch {
				case cont:
					examples[len(examples)-1] = strings.TrimSpace(strings.TrimSuffix(examples[len(examples)-1], `\`)) + " " + l
				case !strings.HasPrefix(l, "#"):
					examples = append(examples, l)
				}
				cont = strings.HasSuffix(l, `\`)
			case "Available Commands:":
				if name := strings.Fields(line)[0]; name != "help" && name != "completion" {
					subs = append(subs, name)
				}
			}
		}
		pages = append(pages, helpPage{strings.Join(append([]string{program}, args...), " "), examples})
		for _, s := range subs {
			walk(append(slices.Clone(args), s))
		}
	}
	walk(nil)
	return pages
}

// Examples that cannot run here, with why. Every other example line of
// tritctl's help runs, and must succeed; each of these must still be in
// some help (a stale entry fails the test). clitest.Check (each program's
// TestVocabulary) still parses them.
var helpExamplesNotRun = map[string]string{
	"tritctl train --standard usps -o usps.trit":                                                                                  "needs the standard datasets (docs/DATA.md) and minutes",
	"tritctl train --standard mnist --sigma 16 --c 0.01 -o mnist.trit --model-id mnist-digits --release 3":                        "needs the standard datasets and minutes",
	"tritctl eval occupancy.trit --standard occupancy --data-dir ../shared/data":                                                  "needs the standard datasets",
	"tritctl retrain occupancy --active occupancy-3.trit --standard occupancy -o occupancy-4.trit":                                "needs the standard datasets",
	"tritctl retrain vib --active vib-3.trit --data vib-train.csv -o vib-4.trit --json":                                           "needs windows labelled by a person in the fleet's store",
	"tritctl retrain vib --on-fleet vib/train.csv -o vib-4.trit":                                                                  "needs windows labelled by a person in the fleet's store",
	"tritctl remote-train standard:usps --model-id usps --release 8 -o usps-8.trit   # a standard dataset kept on the fleet host": "needs the standard datasets on the fleet host",
	"tritctl remote-train cancel train-3":                                                                                         "needs a training job still queued or running",
	"tritctl rollout approve vib-7 --token-file olga.token":                                                                       "needs the two-person rule on and a second person's token",
	"tritctl samples label gw-1.csv":                                                                                              "needs a person to fill in the label column",
}

// helpPagesFirst are the pages that change the fleet, in the order a
// story runs: publish, roll out, operate, then forget the gateway. Other
// pages run before them, in the order of the command tree.
var helpPagesOrder = []string{
	"tritctl publish", "tritctl bundles", "tritctl bundles list",
	"tritctl rollout", "tritctl rollout create", "tritctl rollout plan", "tritctl rollout status", "tritctl rollout list",
	"tritctl rollout pause", "tritctl rollout resume", "tritctl rollout abort", "tritctl rollout rollback", "tritctl rollout approve",
	"tritctl samples", "tritctl samples pull", "tritctl samples label",
	"tritctl operators", "tritctl operators whoami", "tritctl operators list", "tritctl operators add", "tritctl operators disable",
	"tritctl operators enable", "tritctl operators rotate", "tritctl operators remove",
	"tritctl remote-train", "tritctl remote-train cancel", "tritctl retrain", "tritctl retrain status", "tritctl audit",
	"tritctl devices", "tritctl devices list", "tritctl devices show", "tritctl devices health", "tritctl devices reset", "tritctl devices forget",
}

// helpPageGiven are what a page's examples take as done before them (a
// CA before a certificate), run first in the page's directory; a page in
// helpPageNoKeys starts from the fixtures without their keys and the
// bundles signed with them (its examples make them).
var (
	helpPageGiven = map[string][]string{
		"tritctl bundle verify":    {"tritctl keys gen --out release-2027"},
		"tritctl certs server":     {"tritctl certs ca -o pki"},
		"tritctl certs client":     {"tritctl certs ca -o pki"},
		"tritctl operators whoami": {"tritctl operators add alice --role admin -o alice.token"},
	}
	helpPageNoKeys = map[string]bool{"tritctl keys": true, "tritctl keys gen": true}
)

// helpOtherRun are the examples of the other programs' help that run
// here; the rest need root, /etc/trit, systemd, hardware, PostgreSQL or
// the standard datasets (clitest.Check parses them all).
var helpOtherRun = []string{
	"trit-agent version",
	"trit-agent sensors read --kind synthetic --state bearing_fault --count 2048",
	"trit-fleet credentials list -c fleet.toml --json",
}

// TestHelpExamples runs every example of every tritctl command's --help
// (and helpOtherRun of the other programs'), as written, against the real
// binaries, each page in a copy of a directory of fixtures — the README's
// keys and configurations, room.csv, an unsigned vib.trit trained through
// agent.toml's pipeline, vib-1.trit and vib-2.trit signed with the
// release key — beside a running trit-fleet (embedded broker, remote
// training on data/) and a trit-agent (gw-1, site=lab). Each must exit 0.
// "watch -n 2 CMD" runs CMD once.
func TestHelpExamples(t *testing.T) {
	if testing.Short() {
		t.Skip("builds four programs, starts a fleet and an agent and runs about 100 examples (a few minutes); skipped with -short")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash not installed")
	}
	_, errJQ := exec.LookPath("jq")
	root := repoRoot(t)
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", bin+"/", "./cmd/tritctl", "./cmd/trit-fleet", "./cmd/trit-agent", "./cmd/trit-bench")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	env := append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "TRIT_DATA="+t.TempDir())
	sh := func(dir, line string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "bash", "-c", "set -eo pipefail\n"+line)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	// The fixtures, made as the README makes them.
	fix := t.TempDir()
	apiAddr, mqttAddr := loopbackPort(t), loopbackPort(t)
	for _, name := range []string{"fleet.toml", "agent.toml", "room.csv", "room-next-week.csv"} {
		b, err := os.ReadFile(filepath.Join(root, "docs", "examples", name))
		if err != nil {
			t.Fatal(err)
		}
		text := strings.NewReplacer("127.0.0.1:8080", apiAddr, "127.0.0.1:1884", mqttAddr, "# [training]\n# data_dir", "[training]\ndata_dir").Replace(string(b))
		if name == "agent.toml" {
			// Windows kept and history, for samples pull and rollout plan.
			text = strings.Replace(text, "[telemetry]", "[models]\nsample_every = 5\nhistory_max_bytes = 65536\n\n[telemetry]", 1)
		}
		if err := os.WriteFile(filepath.Join(fix, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// eu.csv: decimal commas that the first rows, all integers, do not show.
	var eu strings.Builder
	eu.WriteString("temp;humidity;light;state\n20;45;300;a\n21;44;310;b\n")
	for i := range 60 {
		fmt.Fprintf(&eu, "%d,%d;%d,5;%d;%c\n", 18+i%6, i%10, 40+i%9, 200+i, "ab"[i%6/3])
	}
	if err := os.WriteFile(filepath.Join(fix, "eu.csv"), []byte(eu.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	setup := `tritctl keys gen --out release >/dev/null
tritctl keys gen --out command >/dev/null
(umask 077 && head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >api-token)
trit-fleet credentials add gw-1 --config fleet.toml -o gw-1.password >/dev/null
mkdir -p data && cp room.csv data/
tritctl train room.csv --label-column Occupancy -o room.trit 2>/dev/null >/dev/null
tritctl train --synthetic machine --features-from agent.toml -o vib.trit 2>/dev/null >/dev/null
tritctl bundle sign --key release.key vib.trit -o vib-1.trit --release 1 >/dev/null
tritctl bundle sign --key release.key vib.trit -o vib-2.trit --release 2 >/dev/null`
	if out, err := sh(fix, setup); err != nil {
		t.Fatalf("fixtures: %v\n%s", err, out)
	}

	// The services, in a copy of the fixtures of their own, on ports
	// picked just before they start: the fixtures take a minute, and a
	// port free when they began can be another process's by then (seen
	// beside other tests: the embedded broker's "address already in use",
	// and the agent talking to whatever held the port). Such a start is
	// tried again on new ports, in both copies of the configuration.
	srv := copyDir(t, fix)
	logPath := filepath.Join(srv, "services.log")
	var services *exec.Cmd
	stop := func() {
		if services != nil {
			syscall.Kill(-services.Process.Pid, syscall.SIGTERM)
			services.Wait()
		}
	}
	defer func() { stop() }()
	tokenEnv := "TRIT_FLEET_TOKEN_FILE=" + filepath.Join(srv, "api-token")
	baseEnv := env
	for attempt := 1; ; attempt++ {
		newAPI, newMQTT := loopbackPort(t), loopbackPort(t)
		for _, dir := range []string{fix, srv} {
			for _, name := range []string{"fleet.toml", "agent.toml"} {
				path := filepath.Join(dir, name)
				b, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				text := strings.NewReplacer(apiAddr, newAPI, mqttAddr, newMQTT).Replace(string(b))
				if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
		apiAddr, mqttAddr = newAPI, newMQTT
		logFile, err := os.Create(logPath)
		if err != nil {
			t.Fatal(err)
		}
		services = exec.Command("bash", "-c", "trit-fleet run -c fleet.toml & sleep 1; trit-agent run -c agent.toml & wait")
		services.Dir, services.Env = srv, baseEnv
		services.Stdout, services.Stderr = logFile, logFile
		services.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := services.Start(); err != nil {
			t.Fatal(err)
		}
		logFile.Close() // the services hold their own descriptor
		env = append(slices.Clip(baseEnv), "TRIT_FLEET_URL=http://"+apiAddr, tokenEnv)
		online, taken := false, false
		for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(500 * time.Millisecond) {
			out, err := sh(srv, "tritctl devices list --json")
			if err == nil && strings.Contains(out, `"online": true`) {
				online = true
				break
			}
			log, _ := os.ReadFile(logPath)
			if taken = strings.Contains(string(log), "address already in use"); taken && attempt < 3 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("gw-1 not online after 90 s: %v %s\n%s", err, out, log)
			}
		}
		if online {
			break
		}
		t.Logf("services: a port was taken (attempt %d); again on new ports", attempt)
		stop()
		services = nil
	}

	pages := helpPages(t, bin, "tritctl")
	slices.SortStableFunc(pages, func(a, b helpPage) int {
		return slices.Index(helpPagesOrder, a.path) - slices.Index(helpPagesOrder, b.path)
	})
	for _, p := range []string{"trit-fleet", "trit-agent", "trit-bench"} {
		pages = append(pages, helpPages(t, bin, p)...)
	}
	used := map[string]bool{}
	watch := regexp.MustCompile(`^watch -n [0-9]+ `)
	ran := 0
	for _, p := range pages {
		var run []string
		for _, l := range p.examples {
			switch {
			case helpExamplesNotRun[l] != "":
				used[l] = true
				t.Logf("not run: %s (%s)", l, helpExamplesNotRun[l])
			case !strings.HasPrefix(p.path, "tritctl") && !slices.Contains(helpOtherRun, l):
			case errJQ != nil && strings.Contains(l, "| jq"):
				t.Logf("not run: %s (jq not installed)", l)
			default:
				run = append(run, watch.ReplaceAllString(l, ""))
			}
		}
		if len(run) == 0 {
			continue
		}
		dir := copyDir(t, fix)
		if helpPageNoKeys[p.path] {
			for _, k := range []string{"release.key", "release.pub", "command.key", "command.pub", "vib-1.trit", "vib-2.trit"} {
				os.Remove(filepath.Join(dir, k))
			}
		}
		for _, l := range helpPageGiven[p.path] {
			if out, err := sh(dir, l); err != nil {
				t.Fatalf("%s: given %q: %v\n%s", p.path, l, err, out)
			}
		}
		for _, l := range run {
			start := time.Now()
			out, err := sh(dir, l)
			if err != nil {
				t.Errorf("%s --help: the example\n    %s\nfails (%v):\n%s", p.path, l, err, out)
				continue
			}
			ran++
			t.Logf("%5.1f s  %s", time.Since(start).Seconds(), l)
		}
	}
	for l := range helpExamplesNotRun {
		if !used[l] {
			t.Errorf("helpExamplesNotRun names %q, which no help shows any more", l)
		}
	}
	for _, l := range helpOtherRun {
		found := false
		for _, p := range pages {
			found = found || slices.Contains(p.examples, l)
		}
		if !found {
			t.Errorf("helpOtherRun names %q, which no help shows any more", l)
		}
	}
	t.Logf("%d examples ran", ran)
}

// copyDir copies the regular files and directories of src into a new
// temporary directory and returns it.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		to := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.MkdirAll(to, info.Mode().Perm()|0o700)
		case info.Mode().IsRegular():
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			return os.WriteFile(to, b, info.Mode().Perm())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// loopbackPort returns a loopback address with a port free now.
func loopbackPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
