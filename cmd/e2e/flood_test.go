package e2e

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	mqtt "github.com/eclipse/paho.mqtt.golang"

	"github.com/trit-iot/trit/fleet/inventory"
	"github.com/trit-iot/trit/wire"
)

// productionQueueSettings returns the lines of fleet/mosquitto/mosquitto.conf
// that bound what Mosquitto holds for a client (max_queued_*,
// max_inflight_*), for a test broker to run with them.
func productionQueueSettings(t *testing.T) string {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "fleet", "mosquitto", "mosquitto.conf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); strings.HasPrefix(l, "max_queued_") || strings.HasPrefix(l, "max_inflight_") {
			out = append(out, l)
		}
	}
	if len(out) == 0 {
		t.Fatal("fleet/mosquitto/mosquitto.conf sets no max_queued_* or max_inflight_*")
	}
	return strings.Join(out, "\n") + "\n"
}

// TestHonestTelemetrySurvivesAQoS1Flood: one device publishes 30,000 QoS 1
// messages on its telemetry topic as fast as Mosquitto takes them, while
// three honest agents report every 200 ms. Mosquitto runs with the queue
// settings of fleet/mosquitto/mosquitto.conf. With max_queued_messages
// 1000, Mosquitto's queue for trit-fleet overflowed and dropped honest
// reports (16 of 286 measured), and nothing said so; now the settings
// hold the flood, the honest devices lose no report, and trit-fleet
// counts the reports missing from each device's sequence
// (telemetry_missing), which stays 0 for them.
func TestHonestTelemetrySurvivesAQoS1Flood(t *testing.T) {
	queue := productionQueueSettings(t)
	t.Logf("Mosquitto's queue settings:\n%s", queue)
	w := newWorldBroker(t, "per_listener_settings false\nlistener {{PORT}} 127.0.0.1\nallow_anonymous true\npersistence false\n"+queue)
	w.startFleet()
	honest := w.startAgentsTuned("honest", 3, nil, func(a *agentTuning) { a.telemetry = 200 * time.Millisecond })
	w.waitKnown(honest)
	seq0 := map[string]uint64{}
	for id, d := range w.devices() {
		seq0[id] = d.TelemetrySeq
	}

	topics, err := wire.NewTopics(fleetName)
	if err != nil {
		t.Fatal(err)
	}
	flood := mqtt.NewClient(mqtt.NewClientOptions().AddBroker(w.broker.URL()).SetClientID("flooder").SetWriteTimeout(30 * time.Second))
	if tok := flood.Connect(); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("flooder: connect: %v", tok.Error())
	}
	defer flood.Disconnect(100)
	payload := []byte(strings.Repeat("x", 200))
	var last mqtt.Token
	start := time.Now()
	for range 30000 {
		last = flood.Publish(topics.Telemetry("flooder"), 1, false, payload)
	}
	if !last.WaitTimeout(time.Minute) {
		t.Fatal("the flood was not acknowledged within a minute")
	}
	t.Logf("30,000 QoS 1 messages published in %v", time.Since(start).Round(time.Millisecond))

	// Every honest device has reported well past the flood, with no report
	// missing.
	time.Sleep(time.Second)
	after := w.devices()
	target := map[string]uint64{}
	for _, id := range honest {
		target[id] = after[id].TelemetrySeq + 3
	}
	w.waitInventory("the honest devices' reports after the flood", time.Minute, func(ds map[string]inventory.Device) bool {
		for _, id := range honest {
			if ds[id].TelemetrySeq < target[id] {
				return false
			}
		}
		return true
	})
	for id, d := range w.devices() {
		if !strings.HasPrefix(id, "honest") {
			continue
		}
		t.Logf("%s: reports %d … %d, %d missing", id, seq0[id], d.TelemetrySeq, d.TelemetryMissing)
		if d.TelemetryMissing != 0 {
			t.Errorf("%s: %d telemetry reports missing after another device's flood", id, d.TelemetryMissing)
		}
	}
}
