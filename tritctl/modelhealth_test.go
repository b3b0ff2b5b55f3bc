package tritctl

import (
	"strings"
	"testing"
)

// TestDevicesHealthHistory: devices health prints the fleet's history of a
// device by hour, or by minute, with the unknown share, mean confidence,
// drift, agreement and latency; devices list has the latest interval's
// unknown share, with the alert.
func TestDevicesHealthHistory(t *testing.T) {
	newFakeFleet(t, map[string]string{
		"GET /v1/devices/gw-1/health": `{"device":"gw-1",` +
			`"minutes":[{"t":1795676400,"n":600,"windows":600,"unknown":30,"confidence_sum":510,"drift":0.012,"latency_p50_us":41}],` +
			`"hours":[{"t":1795672800,"n":36000,"windows":36000,"unknown":720,"confidence_sum":30600,"agreement":0.97,"latency_p50_us":44},{"t":1795676400,"n":600}]}`,
		"GET /v1/devices": `[{"id":"gw-1","online":true,"confidence":{"unknown":3,"histogram":[0,0,0,0,0,0,0,0,10,10],"mean":0.9},"uncertain":true},{"id":"gw-2","online":true}]`,
	})
	stdout, stderr, code := runCtl(t, "devices", "health", "gw-1")
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if code != 0 || len(lines) != 3 {
		t.Fatalf("devices health: %d %q %q", code, stdout, stderr)
	}
	for i, want := range [][]string{
		{"TIME (UTC)", "UNKNOWN", "CONFIDENCE", "AGREEMENT"},
		{"2026-11-26 06:00", "36000", "2.0% (720)", "85.0%", "97.0%", "44 µs"},
		{"2026-11-26 07:00", "600", "-"},
	} {
		for _, w := range want {
			if !strings.Contains(lines[i], w) {
				t.Errorf("line %d %q lacks %q", i, lines[i], w)
			}
		}
	}
	stdout, _, code = runCtl(t, "devices", "health", "gw-1", "--minutes")
	if code != 0 || !strings.Contains(stdout, "2026-11-26 07:00") || !strings.Contains(stdout, "5.0% (30)") || !strings.Contains(stdout, "0.012") {
		t.Errorf("devices health --minutes: %d %q", code, stdout)
	}
	stdout, _, code = runCtl(t, "devices", "list")
	if code != 0 || !strings.Contains(stdout, "UNKNOWN") || !strings.Contains(stdout, "15.0% (alert)") {
		t.Errorf("devices list: %d %q", code, stdout)
	}
}

// TestGroupHealthHistory: devices health --selector asks for the group's
// summed history with the selector in the query, prints it like a
// device's and says on stderr how many devices matched; an ID and a
// selector together, or neither, is a usage error.
func TestGroupHealthHistory(t *testing.T) {
	f, _ := newFakeFleet(t, map[string]string{
		"GET /v1/health": `{"selector":{"site":"north","tier":"a"},"devices":["gw-1","gw-2"],` +
			`"minutes":[{"t":1795676400,"n":1200,"windows":1200,"unknown":120,"confidence_sum":960,"drift":0.2,"agreement":0.8}],"hours":[]}`,
	})
	stdout, stderr, code := runCtl(t, "devices", "health", "--selector", "tier=a,site=north", "--minutes")
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if code != 0 || len(lines) != 2 {
		t.Fatalf("devices health --selector: %d %q %q", code, stdout, stderr)
	}
	for _, w := range []string{"2026-11-26 07:00", "1200", "10.0% (120)", "80.0%", "0.200"} {
		if !strings.Contains(lines[1], w) {
			t.Errorf("line %q lacks %q", lines[1], w)
		}
	}
	if !strings.Contains(stderr, "2 devices match the selector") {
		t.Errorf("stderr %q does not say how many devices matched", stderr)
	}
	f.mu.Lock()
	q := f.queries["GET /v1/health"]
	f.mu.Unlock()
	if q != "selector=site%3Dnorth%2Ctier%3Da" {
		t.Errorf("query %q, want the selector sorted and escaped", q)
	}
	for _, args := range [][]string{{"devices", "health"}, {"devices", "health", "gw-1", "--selector", "site=north"}} {
		if _, stderr, code := runCtl(t, args...); code == 0 || !strings.Contains(stderr, "not both") {
			t.Errorf("%v: %d %q, want a usage error", args, code, stderr)
		}
	}
}
