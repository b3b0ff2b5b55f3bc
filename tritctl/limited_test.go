package tritctl

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestDevicesShowLimited: devices show keeps the fleet's JSON (with the
// device's limited counts) on stdout and says on stderr how many of its
// messages its per-device limits dropped or delayed.
func TestDevicesShowLimited(t *testing.T) {
	newFakeFleet(t, map[string]string{
		"GET /v1/devices/flood": `{"id":"flood","online":true,"health":"ok",` +
			`"limited":{"rate":44552,"queue":3,"throttled":7,"last":"2026-11-26T02:00:00Z"}}`,
	})
	stdout, stderr, code := runCtl(t, "devices", "show", "flood")
	var v map[string]any
	if code != 0 || json.Unmarshal([]byte(stdout), &v) != nil || v["limited"] == nil {
		t.Fatalf("devices show: %d, stdout %q", code, stdout)
	}
	want := "flood: 44555 messages dropped by its per-device limits (rate 44552, bytes 0, queue 3), 7 delayed; the latest at 2026-11-26 02:00:00 UTC"
	if !strings.Contains(stderr, want) {
		t.Errorf("devices show says %q on stderr, want %q", stderr, want)
	}
}
