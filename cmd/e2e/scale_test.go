package e2e

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet/inventory"
)

// TestScale measures a rollout to many agents, for docs/BENCHMARKS.md:
//
//	TRIT_E2E_SCALE=1000 go test -run TestScale -v -timeout 30m ./cmd/e2e
//
// trit-fleet runs as its own process (the real binary, built here) so its
// peak RSS can be read from /proc; the agents are the real agent code, in
// this process, each with its own database and MQTT connection, reading a
// replay source at 2 Hz and reporting telemetry every 5 s. It reports the
// time from creating a one-phase rollout to its completion, the fleet's
// peak RSS, and the messages per second the fleet handled while the fleet
// was busy. Without TRIT_E2E_SCALE it is skipped: it is a measurement, not
// a check, and takes minutes.
func TestScale(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("TRIT_E2E_SCALE"))
	if n <= 0 {
		t.Skip("set TRIT_E2E_SCALE=<agents> to run the scale measurement")
	}
	w := newWorld(t)
	bin := filepath.Join(w.dir, "trit-fleet")
	build := exec.Command("go", "build", "-o", bin, "github.com/trit-iot/trit/cmd/trit-fleet")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		t.Fatalf("building trit-fleet: %v", err)
	}
	pid := w.startFleetProcess(bin)

	slow := func(c *agentTuning) { c.rate, c.telemetry = 2, 5*time.Second }
	start := time.Now()
	ids := w.startAgentsTuned("gw", n, nil, slow)
	w.waitInventory("every agent online", 10*time.Minute, func(ds map[string]inventory.Device) bool {
		online := 0
		for _, d := range ds {
			if d.Online {
				online++
			}
		}
		return online == n
	})
	t.Logf("%d agents connected and in the inventory after %v", n, time.Since(start).Round(time.Second))

	hash := w.publish(w.bundle("vib", 1))
	msgs0 := w.fleetMessages()
	start = time.Now()
	w.rollout(api.RolloutRequest{ID: "scale", Bundle: hash, Devices: ids, Timeout: 10 * time.Minute})
	r := w.waitRollout("scale", 15*time.Minute, nil)
	elapsed := time.Since(start)
	msgs := w.fleetMessages() - msgs0
	if r.State != api.RolloutCompleted || r.Successes != n {
		t.Fatalf("rollout %s with %d of %d successes: %v", r.State, r.Successes, n, r.Counts())
	}
	rss := peakRSS(t, pid)
	t.Logf("rollout to %d agents: %v; fleet peak RSS %.1f MB; fleet handled %.0f messages in that time (%.0f/s); GOMAXPROCS %d",
		n, elapsed.Round(time.Millisecond), float64(rss)/(1<<20), msgs, msgs/elapsed.Seconds(), runtime.GOMAXPROCS(0))
}

// fleetMessages returns the messages the fleet has handled so far, from
// its Prometheus metrics: commands sent, telemetry reports and finished jobs
// (each a chain of four events, acknowledged one by one).
func (w *world) fleetMessages() float64 {
	w.t.Helper()
	var total float64
	raw := w.rawCall("/metrics")
	sc := bufio.NewScanner(strings.NewReader(raw))
	for sc.Scan() {
		line := sc.Text()
		for _, name := range []string{"trit_fleet_commands_sent_total", "trit_fleet_telemetry_reports_total"} {
			if strings.HasPrefix(line, name+" ") {
				v, _ := strconv.ParseFloat(strings.TrimPrefix(line, name+" "), 64)
				total += v
			}
		}
		if strings.HasPrefix(line, "trit_fleet_jobs_finished_total{") {
			f := strings.Fields(line)
			v, _ := strconv.ParseFloat(f[len(f)-1], 64)
			total += 4 * 2 * v // QUEUED, DOWNLOADING, INSTALLING, final: each an event and an ack
		}
	}
	return total
}

// peakRSS reads VmHWM of a process, in bytes.
func peakRSS(t testing.TB, pid int) int64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc status")
	return 0
}
