package agent

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/trit-iot/trit/wire"
	"github.com/trit-iot/trit/wire/mqtttest"
)

// measureEnv turns TestMeasureSteadyState on; it is a measurement for
// docs/BENCHMARKS.md, not a check, so it does not run by default.
const measureEnv = "TRIT_AGENT_MEASURE"

// measureShadowEnv=1 adds a candidate scored in shadow and a sample ring
// that keeps every window (models.sample_every = 1).
const measureShadowEnv = "TRIT_AGENT_MEASURE_SHADOW"

// TestMeasureSteadyState builds cmd/trit-agent, runs it against Mosquitto
// with a 10 Hz replay source and 1 s telemetry, installs a model, and
// reports the time from deployment command to SUCCEEDED, then RSS and CPU
// over TRIT_AGENT_MEASURE seconds (e.g. TRIT_AGENT_MEASURE=60).
func TestMeasureSteadyState(t *testing.T) {
	secs, _ := strconv.Atoi(os.Getenv(measureEnv))
	if secs <= 0 {
		t.Skip("set " + measureEnv + "=<seconds> to measure the agent's steady state")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "trit-agent")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/trit-agent").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	broker := mqtttest.Start(t)
	k := newKeys(t)
	f := newFleet(t, broker.URL(), k)
	conf := strings.NewReplacer("RELEASE", k.releasePub, "COMMAND", k.cmdPub, "REPLAY", writeReplay(t, dir), "DIR", dir,
		"tcp://127.0.0.1:1884", broker.URL(), `interval = "1s"`, "interval = \"1s\"\n[install]\nhealth_cycles = 3").Replace(goodConfig)
	shadow := os.Getenv(measureShadowEnv) == "1"
	if shadow {
		conf += "\n[models]\nsample_every = 1\n"
	}
	path := filepath.Join(dir, "agent.toml")
	os.WriteFile(path, []byte(conf), 0o600)
	cmd := exec.Command(bin, "run", "--config", path)
	logf, _ := os.Create(filepath.Join(dir, "agent.log"))
	cmd.Stderr = logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() }()
	f.waitFor("agent online", 10*time.Second, func() bool { return len(f.states) > 0 })

	h := f.publishBundle(makeBundle(t, bundleOpts{release: 1, signer: k.release}))
	start := time.Now()
	if ev := f.terminal(f.deploy(h, "r1", cmdOpts{}), 30*time.Second); ev.State != wire.JobSucceeded {
		t.Fatalf("install: %+v", ev)
	}
	t.Logf("deployment command → SUCCEEDED: %v (includes %d health-check cycles at 10 Hz)", time.Since(start), 3)
	if shadow {
		c := f.publishBundle(makeBundle(t, bundleOpts{release: 2, signer: k.release}))
		if ev := f.terminal(f.deploy(c, "s2", cmdOpts{mode: wire.ModeShadow}), 30*time.Second); ev.State != wire.JobSucceeded {
			t.Fatalf("shadow: %+v", ev)
		}
		t.Log("a candidate runs in shadow; the sample ring keeps every window")
	}

	time.Sleep(5 * time.Second) // settle
	cpu0, _ := cpuTicks(cmd.Process.Pid)
	t0 := time.Now()
	var maxRSS int
	for time.Since(t0) < time.Duration(secs)*time.Second {
		time.Sleep(time.Second)
		if r := rssKB(cmd.Process.Pid); r > maxRSS {
			maxRSS = r
		}
	}
	cpu1, _ := cpuTicks(cmd.Process.Pid)
	el := time.Since(t0).Seconds()
	const hz = 100 // USER_HZ on Linux
	cpuPct := float64(cpu1-cpu0) / hz / el * 100
	f.mu.Lock()
	n := len(f.telemetry)
	var preds uint64
	for _, tm := range f.telemetry {
		preds += tm.Predictions
	}
	f.mu.Unlock()
	t.Logf("steady state over %.0f s: RSS %d KB (max), CPU %.2f%% of one core; %d telemetry reports, %d predictions received", el, maxRSS, cpuPct, n, preds)
}

func cpuTicks(pid int) (int, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	u, _ := strconv.Atoi(fields[11]) // utime (field 14)
	k, _ := strconv.Atoi(fields[12]) // stime (field 15)
	return u + k, nil
}

func rssKB(pid int) int {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return n
		}
	}
	return 0
}
