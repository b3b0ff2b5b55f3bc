package e2e

import (
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/trit-iot/trit/fleet"
)

// TestDeviceListenerSurvivesFDExhaustion: trit-fleet with its embedded
// broker runs with 64 open files at most; someone local (no credentials)
// opens 300 connections to the broker's device port and holds them, so
// its accepts fail with EMFILE (too many open files). Then they let go,
// and a gateway connects: the listener retried with backoff instead of
// dying on the first error (mochi's listener returns on any error), and
// counted the errors. Issue 42's first item.
func TestDeviceListenerSurvivesFDExhaustion(t *testing.T) {
	w := newWorld(t)
	e := prepareEmbeddedFleet(w, []string{"gw-1"})
	e.nofile = 64
	e.start()
	addr := strings.TrimPrefix(e.broker, "tcp://")

	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	for range 300 {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			break // the kernel's backlog is full: the fleet accepts nothing more
		}
		held = append(held, c)
	}
	t.Logf("%d connections held", len(held))
	// The fleet logs the EMFILE it retries (today's main logs nothing
	// and stops accepting; then the gateway below never connects).
	exhausted := func() bool {
		log, _ := os.ReadFile(e.stderrPath)
		return strings.Contains(string(log), "too many open files")
	}
	for deadline := time.Now().Add(20 * time.Second); !exhausted() && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
	}
	for _, c := range held {
		c.Close()
	}
	held = nil

	e.startAgent("gw-1")
	w.waitInventory("gw-1 online", time.Minute, func(ds map[string]fleet.Device) bool { return ds["gw-1"].Online })
	if !exhausted() {
		t.Error("trit-fleet did not log a too-many-open-files accept error: the test did not exhaust its descriptors")
	}
	errs := w.metric(`trit_fleet_listener_accept_errors_total{listener="mqtt-devices"}`)
	if errs < 1 {
		t.Errorf("trit_fleet_listener_accept_errors_total{listener=\"mqtt-devices\"} = %v; want the EMFILE errors counted", errs)
	}
	if up := w.metric(`trit_fleet_listener_up{listener="mqtt-devices"}`); up != 1 {
		t.Errorf("trit_fleet_listener_up{listener=\"mqtt-devices\"} = %v, want 1", up)
	}
	t.Logf("%v accept errors retried", errs)
}
