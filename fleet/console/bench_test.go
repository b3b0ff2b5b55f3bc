package console

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/wire"
)

// fleetOf fills a fixture with n devices as agents report them (state with
// labels, sensors and a model; one telemetry interval each), registered
// bundles and a rollout of release 2 to all of them, halfway through.
func fleetOf(b *testing.B, n int) *fixture {
	f := newFixture(b)
	h1 := f.bundle("vib", 1, map[string]string{"train.balanced": "97.50", "train.rows": "2000", "train.class_counts": "1500,500"})
	h2 := f.bundle("vib", 2, nil)
	ids := make([]string, n)
	for i := range n {
		id := fmt.Sprintf("gw-%04d", i)
		ids[i] = id
		st := &wire.State{Device: id, Session: 1, Online: i%10 != 0, AgentVersion: "0.2.0", Hardware: "rpi4",
			Labels: map[string]string{"site": []string{"north", "south"}[i%2], "line": fmt.Sprint(i % 7)}, Health: "ok",
			Model:   &wire.ModelRef{ID: "vib", Release: 1, Bundle: h1, Install: "committed"},
			Sensors: []wire.SensorHealth{{Sensor: "accel", State: "ok"}, {Sensor: "temp", State: "ok"}},
			Outbox:  &wire.OutboxInfo{Count: 1, Bytes: 300, MaxBytes: 1 << 22}}
		tm := &wire.Telemetry{Device: id, Session: 1, Seq: 1, From: 1, To: 2, Predictions: 120,
			Counts: map[string]uint64{"normal": 100, "imbalance": 15, "bearing": 5}, Latency: &wire.Latency{P50: 8, P90: 12, P99: 40, Max: 60},
			Last: &wire.Prediction{Class: "normal", Time: 1}}
		for _, m := range []struct {
			topic string
			m     interface{ Marshal() ([]byte, error) }
		}{{f.svc.Topics().State(id), st}, {f.svc.Topics().Telemetry(id), tm}} {
			raw, err := m.m.Marshal()
			if err != nil {
				b.Fatal(err)
			}
			f.svc.Deliver(m.topic, raw)
		}
		if i%500 == 499 {
			f.svc.Drain()
		}
	}
	f.svc.Drain()
	if _, err := f.svc.CreateRollout(api.RolloutRequest{ID: "r", Bundle: h2, Devices: ids,
		Pace: api.Pace{Phases: []api.Phase{{Count: 10}, {Percent: 50}, {Percent: 100}}}}); err != nil {
		b.Fatal(err)
	}
	f.svc.Tick()
	return f
}

// benchPage measures serving one console page, whole, to a signed-in
// browser: reading the store, building the page and rendering it.
func benchPage(b *testing.B, n int, path string) {
	f := fleetOf(b, n)
	ck := adminCookie(b, f.console)
	req := httptest.NewRequest("GET", path, nil)
	req.AddCookie(ck)
	rec := httptest.NewRecorder()
	f.console.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		b.Fatalf("%s: HTTP %d", path, rec.Code)
	}
	b.SetBytes(int64(rec.Body.Len()))
	b.ResetTimer()
	for b.Loop() {
		rec := httptest.NewRecorder()
		f.console.ServeHTTP(rec, req)
	}
}

func BenchmarkDevicesPage1000(b *testing.B) { benchPage(b, 1000, "/console/devices") }
func BenchmarkDevicesFilter1000(b *testing.B) {
	benchPage(b, 1000, "/console/devices?selector=site%3Dnorth&page=5")
}
func BenchmarkOverview1000(b *testing.B)    { benchPage(b, 1000, "/console/") }
func BenchmarkRolloutPage1000(b *testing.B) { benchPage(b, 1000, "/console/rollouts/r") }
func BenchmarkDevicePage1000(b *testing.B)  { benchPage(b, 1000, "/console/devices/gw-0500") }
func BenchmarkBundlesPage1000(b *testing.B) { benchPage(b, 1000, "/console/bundles") }

// dayOfHealth gives each of f's n devices (fleetOf) a report with
// calibrated confidence, drift and latency in each of the last 24 hours,
// so that the overview and the rollout page read a full day of hour
// points per device (their health charts are by hour past
// minuteChartDevices devices).
func dayOfHealth(b *testing.B, f *fixture, n int) {
	for h := range 24 {
		f.clk.t = f.clk.t.Add(time.Hour)
		for i := range n {
			id := fmt.Sprintf("gw-%04d", i)
			tm := &wire.Telemetry{Device: id, Session: 1, Seq: uint64(2 + h), From: 1, To: 2, Predictions: 120,
				Counts:     map[string]uint64{"normal": 100, "imbalance": 15, "bearing": 5},
				Latency:    &wire.Latency{P50: 8, P90: 12, P99: 40, Max: 60},
				Drift:      &wire.DriftReport{Score: 0.02, Windows: 120},
				Confidence: &wire.ConfidenceReport{Unknown: 3, Histogram: []uint64{0, 0, 0, 0, 0, 0, 0, 20, 40, 60}, Mean: 0.85}}
			raw, err := tm.Marshal()
			if err != nil {
				b.Fatal(err)
			}
			f.svc.Deliver(f.svc.Topics().Telemetry(id), raw)
			if i%500 == 499 {
				f.svc.Drain()
			}
		}
		f.svc.Drain()
	}
}

func benchPageDay(b *testing.B, n int, path string) {
	f := fleetOf(b, n)
	dayOfHealth(b, f, n)
	ck := adminCookie(b, f.console)
	req := httptest.NewRequest("GET", path, nil)
	req.AddCookie(ck)
	rec := httptest.NewRecorder()
	f.console.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "one point an hour") {
		b.Fatalf("%s: HTTP %d, or no health chart by hour", path, rec.Code)
	}
	b.SetBytes(int64(rec.Body.Len()))
	b.ResetTimer()
	for b.Loop() {
		rec := httptest.NewRecorder()
		f.console.ServeHTTP(rec, req)
	}
}

// A day of model health history on every device: the health charts' cost.
func BenchmarkOverview1000Day(b *testing.B)    { benchPageDay(b, 1000, "/console/") }
func BenchmarkRolloutPage1000Day(b *testing.B) { benchPageDay(b, 1000, "/console/rollouts/r") }
