package console

import (
	"strings"
	"testing"

	"github.com/trit-iot/trit/wire"
)

// TestDeviceHealthSaysWhy: a degraded device's page says which sensor
// and why next to its health (a sensor below its configured rate, a
// failed one), not only "degraded".
func TestDeviceHealthSaysWhy(t *testing.T) {
	f := newFixture(t)
	populate(f)
	f.deliver(f.svc.Topics().State("gw-7"), &wire.State{Device: "gw-7", Session: 1, Online: true, Health: "degraded", AgentVersion: "0.2.0",
		Sensors: []wire.SensorHealth{
			{Sensor: "accel", State: "slow", Since: f.clk.now().Unix(), LastError: "reads 1.8 kHz of the configured 20 kHz"},
			{Sensor: "env", State: "failed", Since: f.clk.now().Unix(), LastError: "device did not respond", Failures: 2},
			{Sensor: "flow", State: "ok"},
		}})
	c := f.client().login()
	page := c.get("/console/devices/gw-7").body
	_, health, _ := strings.Cut(page, "<dt>Health</dt>")
	health, _, _ = strings.Cut(health, "</dd>")
	for _, w := range []string{"degraded", "accel reads 1.8 kHz of the configured 20 kHz", "env failed: device did not respond"} {
		if !strings.Contains(health, w) {
			t.Errorf("the device's health %q does not say %q", health, w)
		}
	}
	if strings.Contains(health, "flow") {
		t.Errorf("the device's health %q names a sensor that is ok", health)
	}
}

// TestDeviceUnloadableModelSaysWhy: a device whose committed model does
// not load says so next to its health, with the release it runs instead,
// and its page shows that release as its model.
func TestDeviceUnloadableModelSaysWhy(t *testing.T) {
	f := newFixture(t)
	populate(f)
	h1, h2 := strings.Repeat("1", 64), strings.Repeat("2", 64)
	f.deliver(f.svc.Topics().State("gw-7"), &wire.State{Device: "gw-7", Session: 1, Online: true, Health: "degraded", AgentVersion: "0.5.0",
		Model:      &wire.ModelRef{ID: "vib", Release: 1, Bundle: h1, Install: "committed"},
		Unloadable: &wire.UnloadableModel{ModelRef: wire.ModelRef{ID: "vib", Release: 2, Bundle: h2, Install: "committed"}, Error: "content does not match its hash"},
		Sensors:    []wire.SensorHealth{{Sensor: "accel", State: "ok"}}})
	c := f.client().login()
	page := c.get("/console/devices/gw-7").body
	_, health, _ := strings.Cut(page, "<dt>Health</dt>")
	health, _, _ = strings.Cut(health, "</dd>")
	if w := "runs release 1 instead: model vib release 2 (bundle 222222222222) does not load: content does not match its hash"; !strings.Contains(health, w) {
		t.Errorf("the device's health %q does not say %q", health, w)
	}
}
