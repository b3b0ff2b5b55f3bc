package agent

import (
	"context"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trit-iot/trit/sensors"
	"github.com/trit-iot/trit/sensors/features"
	"github.com/trit-iot/trit/store"
	"github.com/trit-iot/trit/wire"
)

// fakeFleet drives an agent through the in-memory fakeBroker.
type fakeFleet struct {
	t   *testing.T
	b   *fakeBroker
	tp  wire.Topics
	k   *keys
	seq uint64
	now func() time.Time // the clock commands are issued by; nil: time.Now
}

func newFakeFleet(t *testing.T, k *keys) *fakeFleet {
	tp, _ := wire.NewTopics(testFleet)
	return &fakeFleet{t: t, b: newFakeBroker(), tp: tp, k: k}
}

// waitOnline waits for the agent's first state.
func (f *fakeFleet) waitOnline() {
	f.t.Helper()
	f.until("the agent's state", func() bool { return len(f.b.published(wire.KindState)) > 0 })
}

func (f *fakeFleet) until(what string, cond func() bool) {
	f.t.Helper()
	for deadline := time.Now().Add(15 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			var evs []string
			for _, e := range f.events() {
				evs = append(evs, e.ID+" "+e.Code+" "+e.Reason)
			}
			f.t.Fatalf("timed out waiting for %s; events: %q", what, evs)
		}
	}
}

func (f *fakeFleet) bundle(data []byte) string {
	h := hashOf(data)
	f.b.publish(Message{Topic: f.tp.Bundle(h), Payload: data, Retained: true})
	return h
}

func (f *fakeFleet) deploy(hash, rollout string) *wire.Command {
	f.t.Helper()
	return f.deployMode(hash, rollout, "")
}

// deployMode is deploy with a command mode (wire.ModeShadow).
func (f *fakeFleet) deployMode(hash, rollout, mode string) *wire.Command {
	f.t.Helper()
	f.seq++
	now := time.Now().Unix()
	if f.now != nil {
		now = f.now().Unix()
	}
	c := &wire.Command{Fleet: testFleet, Device: testDevice, Bundle: hash, Rollout: rollout, Seq: f.seq,
		IssuedAt: now - 1, ExpiresAt: now + 600, Mode: mode}
	if err := c.Sign(f.k.command); err != nil {
		f.t.Fatal(err)
	}
	p, _ := c.Marshal()
	f.b.publish(Message{Topic: f.tp.Desired(testDevice), Payload: p, Retained: true})
	return c
}

func (f *fakeFleet) events() []*wire.Event {
	var out []*wire.Event
	for _, m := range f.b.published(wire.KindEvents) {
		if ev, err := wire.DecodeEvent(m.Payload); err == nil {
			out = append(out, ev)
		}
	}
	return out
}

func (f *fakeFleet) terminal(c *wire.Command) *wire.Event {
	f.t.Helper()
	var got *wire.Event
	f.until("terminal event of "+c.Rollout, func() bool {
		for _, e := range f.events() {
			if e.Rollout == c.Rollout && e.Seq == c.Seq && e.State.Terminal() {
				got = e
				return true
			}
		}
		return false
	})
	return got
}

func (f *fakeFleet) telemetry() []*wire.Telemetry {
	var out []*wire.Telemetry
	for _, m := range f.b.published(wire.KindTelemetry) {
		tm, err := wire.DecodeTelemetry(m.Payload)
		if err != nil {
			f.t.Fatalf("bad telemetry: %v", err)
		}
		out = append(out, tm)
	}
	return out
}

func (f *fakeFleet) lastState() *wire.State {
	f.t.Helper()
	ms := f.b.published(wire.KindState)
	if len(ms) == 0 {
		return nil
	}
	st, err := wire.DecodeState(ms[len(ms)-1].Payload)
	if err != nil {
		f.t.Fatalf("bad state: %v", err)
	}
	return st
}

// TestFeaturesPipelineSeveralSensors runs the [features] path with two
// sensors at once (the synthetic machine and a replay): a bundle naming a
// subset of the pipeline's features, in another order, is installed and
// predicts; bundles naming features the pipeline cannot produce are
// REJECTED incompatible.
func TestFeaturesPipelineSeveralSensors(t *testing.T) {
	k := newKeys(t)
	f := newFakeFleet(t, k)
	cfg := testConfig(t, k, "tcp://fake:1883")
	cfg.Sensors = append([]sensors.Config{{Kind: "synthetic", Name: "accel", Rate: 1000, Seed: 7}}, cfg.Sensors...)
	// The 1 kHz accelerometer paces the pipeline (the replay is sampled
	// and held), so the pipeline is for 1 kHz.
	cfg.Features = &features.PipelineSpec{Rate: 1000, Features: []features.Spec{
		{Channel: "accel.x", Window: 8, Stats: []string{features.StatRMS, features.StatP2P}},
		{Channel: "accel.temperature", Window: 8, Stats: []string{features.StatMean}},
		{Channel: "x2", Window: 4, Stats: []string{features.StatMean, features.StatMax}},
	}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	names, err := cfg.Features.FeatureNames()
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != 5 {
		t.Fatalf("feature names %q", names)
	}
	startAgent(t, cfg, &Options{Dialer: f.b})
	f.waitOnline()

	// Wrong feature sets first: nothing may change.
	for i, want := range [][]string{
		{names[0], "accel.x.kurtosis", names[4]}, // a statistic the pipeline does not compute
		{names[0], "accel.y.rms"},                // a channel it does not window
		{names[0], "x1.mean"},                    // a replay channel it does not window
	} {
		data := makeBundle(t, bundleOpts{release: uint64(1 + i), signer: k.release, features: want})
		ev := f.terminal(f.deploy(f.bundle(data), "bad-features"))
		if ev.State != wire.JobRejected || ev.Code != wire.CodeIncompatible {
			t.Errorf("features %q: %s %q %q, want REJECTED incompatible", want, ev.State, ev.Code, ev.Reason)
		}
	}
	if st := f.lastState(); st.Model != nil {
		t.Fatalf("a model is active after rejections only: %+v", st.Model)
	}

	want := []string{names[4], names[2], names[0], names[3]} // another order, names[1] unused
	data := makeBundle(t, bundleOpts{release: 10, signer: k.release, features: want})
	h := f.bundle(data)
	if ev := f.terminal(f.deploy(h, "good")); ev.State != wire.JobSucceeded {
		t.Fatalf("install: %s %q %q", ev.State, ev.Code, ev.Reason)
	}
	f.until("telemetry with predictions by the pipeline model", func() bool {
		for _, tm := range f.telemetry() {
			if tm.Model != nil && tm.Model.Bundle == h && tm.Predictions > 0 {
				return true
			}
		}
		return false
	})
	// The retained state is published on its own schedule: wait for the
	// one that reports both sensors, none failed. The 1 kHz sensor runs in
	// real time (two sensors share no virtual clock), so on a loaded
	// machine it may fall short of its rate, which the state then rightly
	// reports: slow is accepted, with health degraded for it alone.
	ok := func() bool {
		st := f.lastState()
		return len(st.Sensors) == 2 && st.Sensors[0].Sensor == "accel" && st.Sensors[1].Sensor == "s" && healthyOrSlow(st)
	}
	for deadline := time.Now().Add(15 * time.Second); !ok() && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	if st := f.lastState(); !ok() {
		t.Errorf("state sensors %+v health %q, want accel and s, ok (or slow: degraded)", st.Sensors, st.Health)
	} else if st.Health != "ok" {
		t.Logf("on this machine now a sensor is slow: %+v", st.Sensors)
	}
	for _, tm := range f.telemetry() {
		if tm.Errors > 0 {
			t.Errorf("telemetry seq %d: %d errors with healthy sensors", tm.Seq, tm.Errors)
		}
	}
}

// healthyOrSlow reports whether a state's health is ok, or degraded only
// because sensors are slow: a sensor run in real time may fall short of
// its rate on a loaded machine, and must then be reported so. No sensor
// failed either way.
func healthyOrSlow(st *wire.State) bool {
	slow := false
	for _, s := range st.Sensors {
		switch s.State {
		case wire.SensorOK:
		case wire.SensorSlow:
			slow = true
		default:
			return false
		}
	}
	return st.Health == "ok" && !slow || st.Health == "degraded" && slow
}

// nanGlitch makes the "nantest" sensor's channel n.c3 NaN while set.
var nanGlitch atomic.Bool

// nanSource is a test sensor with channels c1..c3 (finite, except c3 while
// nanGlitch is set) and dead (always NaN): a sensor whose readings are
// missing, as sensors.Merge reports a failed source.
type nanSource struct {
	channels []string
	n        float64
}

func (s *nanSource) Channels() []string { return s.channels }
func (s *nanSource) Close() error       { return nil }
func (s *nanSource) Read(ctx context.Context) (sensors.Reading, error) {
	if err := ctx.Err(); err != nil {
		return sensors.Reading{}, err
	}
	s.n++
	v := []float64{math.Sin(s.n / 7), math.Cos(s.n / 5), math.Sin(s.n / 3), math.NaN()}
	if nanGlitch.Load() {
		v[2] = math.NaN()
	}
	return sensors.Reading{Time: time.Now(), Values: v}, nil
}

func init() {
	sensors.Register(sensors.Kind{
		Name: "nantest", Doc: "test sensor with missing values", DefaultName: "n", DefaultRate: 100, Fields: []string{"rate"},
		Channels: func(c sensors.Config) ([]string, error) {
			return []string{c.Name + ".c1", c.Name + ".c2", c.Name + ".c3", c.Name + ".dead"}, nil
		},
		Open: func(c sensors.Config, env sensors.Env) (sensors.Source, error) {
			src := &nanSource{channels: []string{c.Name + ".c1", c.Name + ".c2", c.Name + ".c3", c.Name + ".dead"}}
			return sensors.Paced(src, c.Rate, env.Clock), nil
		},
	})
}

func nanConfig(t *testing.T, k *keys) *Config {
	cfg := testConfig(t, k, "tcp://fake:1883")
	cfg.Sensors = []sensors.Config{{Kind: "nantest", Name: "n", Rate: 100}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestNaNVectorSkipped: while a channel the model uses is missing (NaN),
// no prediction is made and every such cycle counts as an error; when it
// comes back, predictions resume.
func TestNaNVectorSkipped(t *testing.T) {
	nanGlitch.Store(false)
	t.Cleanup(func() { nanGlitch.Store(false) })
	k := newKeys(t)
	f := newFakeFleet(t, k)
	cfg := nanConfig(t, k)
	startAgent(t, cfg, &Options{Dialer: f.b})
	f.waitOnline()
	h := f.bundle(makeBundle(t, bundleOpts{release: 1, signer: k.release, features: []string{"n.c1", "n.c2", "n.c3"}}))
	if ev := f.terminal(f.deploy(h, "r1")); ev.State != wire.JobSucceeded {
		t.Fatalf("install: %s %q %q", ev.State, ev.Code, ev.Reason)
	}
	f.until("predictions", func() bool {
		tms := f.telemetry()
		return len(tms) > 0 && tms[len(tms)-1].Predictions > 0
	})

	nanGlitch.Store(true)
	start := len(f.telemetry())
	// Two whole intervals after the switch: errors only.
	f.until("two telemetry intervals with the channel missing", func() bool { return len(f.telemetry()) >= start+3 })
	tms := f.telemetry()
	for _, tm := range tms[start+1 : start+3] {
		if tm.Predictions != 0 || tm.Errors == 0 {
			t.Errorf("telemetry seq %d with a missing channel: %d predictions, %d errors; want 0 predictions and errors", tm.Seq, tm.Predictions, tm.Errors)
		}
	}

	nanGlitch.Store(false)
	start = len(f.telemetry())
	f.until("predictions again", func() bool {
		tms := f.telemetry()
		return len(tms) > start+1 && tms[len(tms)-1].Predictions > 0 && tms[len(tms)-1].Errors == 0
	})
}

// TestHealthCheckCyclesFail: a release whose features read a channel that
// is dead on this gateway passes every install check (the channel exists)
// but cannot complete one inference cycle: the health check fails with
// code health-check and the agent rolls back to the release that works.
func TestHealthCheckCyclesFail(t *testing.T) {
	nanGlitch.Store(false)
	k := newKeys(t)
	f := newFakeFleet(t, k)
	cfg := nanConfig(t, k)
	stop := startAgent(t, cfg, &Options{Dialer: f.b})
	f.waitOnline()
	v1 := f.bundle(makeBundle(t, bundleOpts{release: 1, signer: k.release, features: []string{"n.c1", "n.c2", "n.c3"}}))
	if ev := f.terminal(f.deploy(v1, "r1")); ev.State != wire.JobSucceeded {
		t.Fatalf("install v1: %s %q %q", ev.State, ev.Code, ev.Reason)
	}
	v2 := f.bundle(makeBundle(t, bundleOpts{release: 2, signer: k.release, features: []string{"n.c1", "n.dead", "n.c3"}}))
	ev := f.terminal(f.deploy(v2, "r2"))
	if ev.State != wire.JobFailed || ev.Code != wire.CodeHealthCheck {
		t.Fatalf("v2: %s %q %q, want FAILED health-check", ev.State, ev.Code, ev.Reason)
	}
	f.until("predictions by v1 after the rollback", func() bool {
		for _, tm := range f.telemetry() {
			if tm.From >= ev.Time && tm.Model != nil && tm.Model.Bundle == v1 && tm.Predictions > 0 {
				return true
			}
		}
		return false
	})
	for _, tm := range f.telemetry() {
		if tm.Model != nil && tm.Model.Bundle == v2 && tm.Predictions > 0 {
			t.Errorf("telemetry seq %d: predictions by v2, whose input is missing", tm.Seq)
		}
	}
	if st := f.lastState(); st.Model == nil || st.Model.Bundle != v1 || st.Model.Install != string(store.InstallCommitted) {
		t.Errorf("state after the rollback: model %+v, want v1 committed", st.Model)
	}
	stop()
	db, err := store.Open(cfg.DBPath(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	active, _, err := db.Slots()
	if err != nil || active == nil || active.Hash != v1 || active.State != store.InstallCommitted {
		t.Fatalf("active %+v, %v; want v1 committed", active, err)
	}
}
