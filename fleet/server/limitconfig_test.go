package server

import (
	"strings"
	"testing"
)

// TestParseConfigDeviceLimits: the per-device limit keys, their defaults,
// bounds named by key, and a refusal with Mosquitto (which has no such
// limit: the keys would silently do nothing).
func TestParseConfigDeviceLimits(t *testing.T) {
	embedded := strings.Replace(minimalConfig, `broker = "ssl://broker.example:8883"`, `broker = "embedded"`, 1)
	c, err := ParseConfig("fleet.toml", embedded)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.MQTT.deviceLimit(); got != defaultDeviceLimit {
		t.Errorf("default limit %+v, want %+v", got, defaultDeviceLimit)
	}
	set := strings.Replace(embedded, `broker = "embedded"`, "broker = \"embedded\"\ndevice_rate = 5\ndevice_burst = 20\ndevice_byte_rate = 4096\ndevice_byte_burst = 65536", 1)
	if c, err = ParseConfig("fleet.toml", set); err != nil {
		t.Fatal(err)
	}
	if got, want := c.MQTT.deviceLimit(), (Limit{Rate: 5, Burst: 20, ByteRate: 4096, ByteBurst: 65536}); got != want {
		t.Errorf("limit %+v, want %+v", got, want)
	}
	for _, bad := range []string{"device_byte_burst = 1000", "device_rate = -1", "device_burst = -3"} {
		text := strings.Replace(embedded, `broker = "embedded"`, "broker = \"embedded\"\n"+bad, 1)
		if _, err := ParseConfig("fleet.toml", text); err == nil || !strings.Contains(err.Error(), "mqtt.device_rate") {
			t.Errorf("%s: %v", bad, err)
		}
	}
	mosq := strings.Replace(minimalConfig, `broker = "ssl://broker.example:8883"`, "broker = \"ssl://broker.example:8883\"\ndevice_rate = 5", 1)
	if _, err := ParseConfig("fleet.toml", mosq); err == nil || !strings.Contains(err.Error(), "embedded broker only") {
		t.Errorf("device_rate with Mosquitto: %v", err)
	}
}
