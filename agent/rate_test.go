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
	"github.com/trit-iot/trit/sensors/synthetic"
	"github.com/trit-iot/trit/wire"
)

// readCost is how long every read of a "slowtest" or "slowsynthetic"
// sensor takes, in the time of its clock (Env.Clock), while set: a device
// or a consumer slower than the configured rate.
var readCost atomic.Int64 // time.Duration

// costly is a source whose every read first takes readCost of clock's time.
type costly struct {
	sensors.Source
	clock sensors.Clock
}

func (s costly) Read(ctx context.Context) (sensors.Reading, error) {
	if d := time.Duration(readCost.Load()); d > 0 {
		if err := s.clock.Sleep(ctx, d); err != nil {
			return sensors.Reading{}, err
		}
	}
	return s.Source.Read(ctx)
}

// testSource is a test sensor with channels x1..x3 (the test bundles'
// features). The "slowtest" kind's reads take readCost; the "lagtest"
// kind stamps its readings 9 minutes in the past, as a source whose times
// fall behind the clock does.
type testSource struct {
	lag time.Duration
	n   float64
}

func (s *testSource) Channels() []string { return testFeatures }
func (s *testSource) Close() error       { return nil }
func (s *testSource) Read(ctx context.Context) (sensors.Reading, error) {
	if err := ctx.Err(); err != nil {
		return sensors.Reading{}, err
	}
	s.n++
	return sensors.Reading{Time: time.Now().Add(-s.lag), Values: []float64{math.Sin(s.n / 7), math.Cos(s.n / 5), math.Sin(s.n / 3)}}, nil
}

func init() {
	for _, k := range []struct {
		name string
		src  func(env sensors.Env) sensors.Source
	}{
		{"slowtest", func(env sensors.Env) sensors.Source { return costly{&testSource{}, env.Clock} }},
		{"lagtest", func(sensors.Env) sensors.Source { return &testSource{lag: 9 * time.Minute} }},
	} {
		sensors.Register(sensors.Kind{
			Name: k.name, Doc: "test sensor", DefaultName: "t", DefaultRate: 100, Fields: []string{"rate"},
			Channels: func(sensors.Config) ([]string, error) { return testFeatures, nil },
			Open: func(c sensors.Config, env sensors.Env) (sensors.Source, error) {
				return sensors.Paced(k.src(env), c.Rate, env.Clock), nil
			},
		})
	}
	// The synthetic machine, its reads taking readCost.
	sensors.Register(sensors.Kind{
		Name: "slowsynthetic", Doc: "synthetic machine with slow reads", DefaultName: "accel", DefaultRate: 1000, Fields: []string{"rate", "seed"},
		Channels: func(c sensors.Config) ([]string, error) { return synthetic.Channels(c.Name), nil },
		Open: func(c sensors.Config, env sensors.Env) (sensors.Source, error) {
			src := synthetic.New(&synthetic.Options{Name: c.Name, Rate: c.Rate, Seed: c.Seed, Clock: env.Clock})
			return sensors.Paced(costly{src, env.Clock}, c.Rate, env.Clock), nil
		},
	})
}

// sensorEpoch is where the tests' sensor clocks start: a whole second, so
// a state's Since (Unix seconds) counts whole seconds of sensor time.
var sensorEpoch = time.Unix(1_700_000_000, 0)

// reportedThrough waits until the agent reported telemetry begun after
// the wall time now (every prediction made before it is then reported:
// the outbox is sent in order) and returns the predictions of all reports.
func (f *fakeFleet) reportedThrough(now time.Time) uint64 {
	f.t.Helper()
	var n uint64
	f.until("telemetry begun after "+now.Format(time.StampMilli), func() bool {
		n = 0
		after := false
		for _, tm := range f.telemetry() {
			n += tm.Predictions
			after = after || tm.From >= now.UnixMilli()
		}
		return after
	})
	return n
}

// slowStates returns the states published so far that report the single
// sensor slow.
func (f *fakeFleet) slowStates() []*wire.State {
	var out []*wire.State
	for _, m := range f.b.published(wire.KindState) {
		if st, err := wire.DecodeState(m.Payload); err == nil && len(st.Sensors) == 1 && st.Sensors[0].State == wire.SensorSlow {
			out = append(out, st)
		}
	}
	return out
}

// TestSlowSensorReportedDegraded: a 1 kHz sensor whose reads take 5 ms
// cannot keep its rate. Within 10 s of its time the agent says so once in
// its log and in its state (health degraded, the sensor slow with both
// rates); when the sensor keeps its rate again, it says that once too.
// The sensor runs in virtual time (sensorClock), so it reads 200 Hz and
// then 1 kHz exactly, however loaded the machine is; only the agent's
// health check and its publishing run on the wall clock, bounded by
// deadlines that only a broken agent reaches.
func TestSlowSensorReportedDegraded(t *testing.T) {
	readCost.Store(int64(5 * time.Millisecond))
	t.Cleanup(func() { readCost.Store(0) })
	k := newKeys(t)
	f := newFakeFleet(t, k)
	cfg := testConfig(t, k, "tcp://fake:1883")
	cfg.Sensors = []sensors.Config{{Kind: "slowtest", Name: "accel", Rate: 1000}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	clock := newSensorClock(sensorEpoch)
	startAgent(t, cfg, &Options{Dialer: f.b, Logger: slog.New(slog.NewTextHandler(logs, nil)), SensorEnv: &sensors.Env{Clock: clock}})
	sensorState := func() (string, wire.SensorHealth) {
		st := f.lastState()
		if st == nil || len(st.Sensors) != 1 {
			return "", wire.SensorHealth{}
		}
		return st.Health, st.Sensors[0]
	}
	clock.run(t, 10*time.Second) // 10 s of the sensor's time, every read slow
	f.until("a state reporting the slow sensor", func() bool {
		h, s := sensorState()
		return h == "degraded" && s.State == "slow"
	})
	_, s := sensorState()
	t.Logf("the slow sensor was reported slow %d s into its time", s.Since-sensorEpoch.Unix())
	if s.Sensor != "accel" || s.LastError != "reads 200 Hz of the configured 1 kHz" || s.Since > sensorEpoch.Add(10*time.Second).Unix() {
		t.Errorf("slow sensor reported as %+v, want accel reading 200 Hz of 1 kHz, slow since at most 10 s after %d", s, sensorEpoch.Unix())
	}
	// More measurements, all slow, and more health checks (one with
	// each telemetry report at least) must not repeat the log line.
	clock.run(t, 6*time.Second)
	reports := len(f.telemetry())
	f.until("three more telemetry reports", func() bool { return len(f.telemetry()) >= reports+3 })
	if n := strings.Count(logs.String(), "cannot keep its configured rate"); n != 1 {
		t.Errorf("%d log lines about the slow sensor, want 1:\n%s", n, logs)
	}
	readCost.Store(0)
	clock.run(t, 10*time.Second) // 10 s at 1 kHz
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

// TestTwentyKHzSensorKeepsUpOrIsReported is the bar: a 20 kHz
// synthetic sensor with 256-sample windows either runs at its rate (78
// windows per second; before the pacer caught up, 7) or the state
// reports it slow within 10 s: never silently behind. Both cases run in
// the sensor's own time (sensorClock), so which one happens is the test's
// choice, not the machine's load:
//
//   - late wake-ups: every sleep of the pacer ends 0.5 ms late (the
//     issue's loaded machine; one sleep per sample read 1.8 kHz). It must
//     keep its rate and never be reported.
//   - slow reads: from a point on every read takes 60 µs (a device or a
//     gateway slower than 20 kHz: 16.7 kHz, 65 windows per second). It
//     must be reported slow, with both rates, within 10 s of that point.
//
// Both then check the invariant itself: the windows classified per second
// of sensor time reach 90 % of the rate, or the sensor was reported. How
// many windows a second this machine's CPU holds is measured by
// BenchmarkTwentyKHzSensor, not asserted.
func TestTwentyKHzSensorKeepsUpOrIsReported(t *testing.T) {
	for _, tc := range []struct {
		name       string
		late, cost time.Duration
		kind       string
	}{
		{name: "late wake-ups", late: 500 * time.Microsecond, kind: "synthetic"},
		{name: "slow reads", cost: 60 * time.Microsecond, kind: "slowsynthetic"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			readCost.Store(0)
			t.Cleanup(func() { readCost.Store(0) })
			k := newKeys(t)
			f := newFakeFleet(t, k)
			cfg := testConfig(t, k, "tcp://fake:1883")
			cfg.Sensors = []sensors.Config{{Kind: tc.kind, Name: "accel", Rate: 20000, Seed: 7}}
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
			clock := newSensorClock(sensorEpoch)
			clock.late = tc.late
			startAgent(t, cfg, &Options{Dialer: f.b, SensorEnv: &sensors.Env{Clock: clock}})
			f.waitOnline()
			h := f.bundle(makeBundle(t, bundleOpts{release: 1, signer: k.release, features: names}))
			// The install's health check counts cycles by the wall clock:
			// the sensor reads meanwhile.
			stop := clock.runFree(t)
			if ev := f.terminal(f.deploy(h, "r")); ev.State != wire.JobSucceeded {
				t.Fatalf("install: %s %q %q", ev.State, ev.Code, ev.Reason)
			}
			from := stop()
			if n := len(f.slowStates()); n > 0 {
				t.Fatalf("reported slow before the measurement: %+v", f.slowStates()[0].Sensors)
			}
			before := f.reportedThrough(time.Now())
			readCost.Store(int64(tc.cost))
			const span = 10 * time.Second
			to := clock.run(t, span)
			windows := f.reportedThrough(time.Now()) - before
			rate := float64(windows) / to.Sub(from).Seconds()
			want := 20000.0 / 256
			// The state: published within a second of a change (the health
			// check); with each telemetry report, checked again.
			reports := len(f.telemetry())
			f.until("two more telemetry reports", func() bool { return len(f.telemetry()) >= reports+2 })
			slow := f.slowStates()
			switch {
			case len(slow) > 0:
				s := slow[0].Sensors[0]
				t.Logf("reported slow %d s into the measurement: %s (%.1f windows/s of %.1f)", s.Since-from.Unix(), s.LastError, rate, want)
			case rate >= 0.9*want:
				t.Logf("keeps its rate: %.1f windows/s of %.1f", rate, want)
			default:
				t.Fatalf("%.1f windows/s of %.1f and nothing reported within %v", rate, want, span)
			}
			if tc.cost == 0 {
				if len(slow) > 0 || rate < 0.97*want || rate > 1.01*want {
					t.Errorf("with late wake-ups: %.1f windows/s of %.1f, %d states reporting it slow; want its rate, none", rate, want, len(slow))
				}
				return
			}
			if len(slow) == 0 {
				t.Fatalf("with %v reads: %.1f windows/s of %.1f and not reported slow", tc.cost, rate, want)
			}
			st := slow[0]
			if s := st.Sensors[0]; st.Health != "degraded" || s.LastError != "reads 16.7 kHz of the configured 20 kHz" || s.Since > to.Unix() {
				t.Errorf("reported as health %q, %+v; want degraded, reading 16.7 kHz of 20 kHz, since at most %d", st.Health, s, to.Unix())
			}
		})
	}
}
