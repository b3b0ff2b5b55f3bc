package tritctl

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestDevicesShowHealth: devices show prints the fleet's JSON on stdout,
// unchanged, and says why a device is degraded on stderr.
func TestDevicesShowHealth(t *testing.T) {
	newFakeFleet(t, map[string]string{
		"GET /v1/devices/gw-1": `{"id":"gw-1","online":true,"health":"degraded","sensors":[` +
			`{"sensor":"accel","state":"slow","since":1750000000,"last_error":"reads 1.8 kHz of the configured 20 kHz"},` +
			`{"sensor":"env","state":"ok","since":1750000000}]}`,
		"GET /v1/devices/gw-2": `{"id":"gw-2","online":true,"health":"ok","sensors":[{"sensor":"accel","state":"ok","since":1750000000}]}`,
		"GET /v1/devices/gw-3": `{"id":"gw-3","online":true,"health":"degraded",` +
			`"model":{"id":"vib","release":1,"bundle":"` + strings.Repeat("1", 64) + `","install":"committed"},` +
			`"unloadable":{"id":"vib","release":2,"bundle":"` + strings.Repeat("2", 64) + `","install":"committed","error":"content does not match its hash"},` +
			`"sensors":[{"sensor":"accel","state":"ok","since":1750000000}]}`,
	})
	stdout, stderr, code := runCtl(t, "devices", "show", "gw-1")
	var v map[string]any
	if code != 0 || json.Unmarshal([]byte(stdout), &v) != nil || v["health"] != "degraded" {
		t.Fatalf("devices show: %d, stdout %q", code, stdout)
	}
	if want := "gw-1: degraded: accel reads 1.8 kHz of the configured 20 kHz"; !strings.Contains(stderr, want) || strings.Contains(stderr, "env") {
		t.Errorf("devices show says %q on stderr, want %q", stderr, want)
	}
	if _, stderr, code := runCtl(t, "devices", "show", "gw-2"); code != 0 || stderr != "" {
		t.Errorf("a healthy device: %d, stderr %q, want nothing", code, stderr)
	}
	// A committed model that does not load: one line says which, why, and
	// what runs instead (not a bare "degraded" too).
	_, stderr, code = runCtl(t, "devices", "show", "gw-3")
	if want := "gw-3: model vib release 2 (bundle 222222222222) does not load: content does not match its hash; it runs vib release 1 instead\n"; code != 0 || stderr != want {
		t.Errorf("devices show gw-3: %d, stderr %q, want %q", code, stderr, want)
	}
}
