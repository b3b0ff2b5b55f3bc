package agent

import (
	"context"
	"log/slog"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trit-iot/trit/sensors"
	"github.com/trit-iot/trit/sensors/features"
	"github.com/trit-iot/trit/wire"
)

// slowReads makes every read of a "slowtest" sensor take 5 ms while set.
var slowReads atomic.Bool

// testSource is a test sensor with channels x1..x3 (the test bundles'
// features). Reads of the "slowtest" kind take 5 ms while slowReads is
// set; the "lagtest" kind stamps its readings 9 minutes in the past, as
// a source whose times fall behind the clock does.
type testSource struct {
	lag  time.Duration
	slow bool
	n    float64
}

func (s *testSource) Channels() []string { return testFeatures }
func (s *testSource) Close() error       { return nil }
func (s *testSource) Read(ctx context.Context) (sensors.Reading, error) {
	if err := ctx.Err(); err != nil {
		return sensors.Reading{}, err
	}
	if s.slow && slowReads.Load() {
		time.Sleep(5 * time.Millisecond)
	}
	s.n++
	return sensors.Reading{Time: time.Now().Add(-s.lag), Values: []float64{math.Sin(s.n / 7), math.Cos(s.n / 5), math.Sin(s.n / 3)}}, nil
}

func init() {
	for _, k := range []struct {
		name string
		src  func() *testSource
	}{
		{"slowtest", func() *testSource { return &testSource{slow: true} }},
		{"lagtest", func() *testSource { return &testSource{lag: 9 * time.Minute} }},
	} {
		sensors.Register(sensors.Kind{
			Name: k.name, Doc: "test sensor", DefaultName: "t", DefaultRate: 100, Fields: []string{"rate"},
			Channels: func(sensors.Config) ([]string, error) { return testFeatures, nil },
			Open: func(c sensors.Config, env sensors.Env) (sensors.Source, error) {
				return sensors.Paced(k.src(), c.Rate, env.Clock), nil
			},
		})
	}
}

// TestSlowSensorReportedDegraded: a 1 kHz sensor whose reads take 5 ms
// cannot keep its rate. Within 10 s the agent says so once in its log and
// in its state (health degraded, the sensor slow with both rates); when
// the sensor keeps its rate again, it says that once too.
func TestSlowSensorReportedDegraded(t *testing.T) {
	slowReads.Store(true)
	t.Cleanup(func() { slowReads.Store(false) })
	k := newKeys(t)
	f := newFakeFleet(t, k)
	cfg := testConfig(t, k, "tcp://fake:1883")
	cfg.Sensors = []sensors.Config{{Kind: "slowtest", Name: "accel", Rate: 1000}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	start := time.Now()
	startAgent(t, cfg, &Options{Dialer: f.b, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	sensorState := func() (string, wire.SensorHealth) {
		st := f.lastState()
		if st == nil || len(st.Sensors) != 1 {
			return "", wire.SensorHealth{}
		}
		return st.Health, st.Sensors[0]
	}
	f.until("a state reporting the slow sensor", func() bool {
		h, s := sensorState()
		return h == "degraded" && s.State == "slow"
	})
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the slow sensor was reported after %v, want within 10 s", d.Round(time.Millisecond))
	} else {
		t.Logf("the slow sensor was reported %v after the agent started", d.Round(time.Millisecond))
	}
	if _, s := sensorState(); s.Sensor != "accel" || !strings.Contains(s.LastError, "of the configured 1 kHz") {
		t.Errorf("slow sensor reported as %+v, want accel with its rates", s)
	}
	time.Sleep(2 * time.Second) // more measurements, all slow
	if n := strings.Count(logs.String(), "cannot keep its configured rate"); n != 1 {
		t.Errorf("%d log lines about the slow sensor, want 1:\n%s", n, logs)
	}
	slowReads.Store(false)
	f.until("a state with the sensor at its rate again", func() bool {
		h, s := sensorState()
		return h != "degraded" && s.State == "ok"
	})
	if n := strings.Count(logs.String(), "keeps its configured rate again"); n != 1 {
		t.Errorf("%d log lines about the recovery, want 1:\n%s", n, logs)
	}
}

// TestLastPredictionIsClockTime: the time of a telemetry report's last
// prediction is when it was made by the agent's clock, inside the report's
// interval, even from a source whose readings are stamped 9 minutes late
// (the console showed "Last prediction 9 min ago" while predictions
// arrived several times a second).
func TestLastPredictionIsClockTime(t *testing.T) {
	k := newKeys(t)
	f := newFakeFleet(t, k)
	cfg := testConfig(t, k, "tcp://fake:1883")
	cfg.Sensors = []sensors.Config{{Kind: "lagtest", Name: "lag", Rate: 100}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	startAgent(t, cfg, &Options{Dialer: f.b})
	f.waitOnline()
	h := f.bundle(makeBundle(t, bundleOpts{release: 1, signer: k.release}))
	if ev := f.terminal(f.deploy(h, "r")); ev.State != wire.JobSucceeded {
		t.Fatalf("install: %s %q %q", ev.State, ev.Code, ev.Reason)
	}
	var reports []*wire.Telemetry
	f.until("three reports with predictions", func() bool {
		reports = reports[:0]
		for _, tm := range f.telemetry() {
			if tm.Predictions > 0 && tm.Last != nil {
				reports = append(reports, tm)
			}
		}
		return len(reports) >= 3
	})
	for _, tm := range reports {
		// A prediction recorded just as the interval ended may land in the
		// next one: allow a second.
		if tm.Last.Time < tm.From-1000 || tm.Last.Time > tm.To {
			t.Errorf("report %d covers [%d, %d] ms and its last prediction is at %d (%v before its end)",
				tm.Seq, tm.From, tm.To, tm.Last.Time, time.Duration(tm.To-tm.Last.Time)*time.Millisecond)
		}
	}
}

// TestTwentyKHzSensorKeepsUpOrIsReported is the bar on this
// machine: a 20 kHz synthetic sensor with 256-sample windows either runs
// at its rate (78 windows/s; today's main made 7) or the state reports it
// slow within 10 s. Which of the two depends on the machine's load, not
// on the test: both pass, silence fails.
func TestTwentyKHzSensorKeepsUpOrIsReported(t *testing.T) {
	k := newKeys(t)
	f := newFakeFleet(t, k)
	cfg := testConfig(t, k, "tcp://fake:1883")
	cfg.Telemetry.Interval = Duration{Duration: time.Second}
	cfg.Sensors = []sensors.Config{{Kind: "synthetic", Name: "accel", Rate: 20000, Seed: 7}}
	cfg.Features = &features.PipelineSpec{Rate: 20000, Features: []features.Spec{
		{Channel: "accel.x", Window: 256, Stats: []string{features.StatRMS, features.StatP2P}, Bands: [][2]float64{{0, 500}, {500, 2000}}},
		{Channel: "accel.y", Window: 256, Stats: []string{features.StatRMS}},
	}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	names, err := cfg.Features.FeatureNames()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	startAgent(t, cfg, &Options{Dialer: f.b})
	f.waitOnline()
	h := f.bundle(makeBundle(t, bundleOpts{release: 1, signer: k.release, features: names}))
	if ev := f.terminal(f.deploy(h, "r")); ev.State != wire.JobSucceeded {
		t.Fatalf("install: %s %q %q", ev.State, ev.Code, ev.Reason)
	}
	reported := time.Duration(-1)
	for time.Since(start) < 10*time.Second {
		if st := f.lastState(); reported < 0 && st != nil && len(st.Sensors) == 1 && st.Sensors[0].State == wire.SensorSlow {
			reported = time.Since(start)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The rate over the reports that began 2 s after the start.
	var n uint64
	var ms int64
	for _, tm := range f.telemetry() {
		if tm.From >= start.Add(2*time.Second).UnixMilli() {
			n += tm.Predictions
			ms += tm.To - tm.From
		}
	}
	if ms < 5000 {
		t.Fatalf("reports over %d ms only", ms)
	}
	rate := float64(n) * 1000 / float64(ms)
	want := 20000.0 / 256
	switch {
	case reported >= 0:
		t.Logf("reported slow %v after the start (%.1f windows/s of %.1f)", reported.Round(time.Millisecond), rate, want)
	case rate >= 0.9*want:
		t.Logf("keeps its rate: %.1f windows/s of %.1f", rate, want)
	default:
		t.Fatalf("%.1f windows/s of %.1f and nothing reported within 10 s", rate, want)
	}
}
