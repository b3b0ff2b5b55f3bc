package sensors_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/trit-iot/trit/sensors"
	"github.com/trit-iot/trit/sensors/sensortest"
	"github.com/trit-iot/trit/sensors/synthetic"
)

// slow yields one sample (or one error), then blocks until its context is
// done, like a sensor at a low rate.
type slow struct {
	name   string
	value  float64
	err    error
	reads  chan struct{}
	closed bool
}

func (s *slow) Channels() []string { return []string{s.name + ".temperature"} }
func (s *slow) Close() error       { s.closed = true; return nil }
func (s *slow) Read(ctx context.Context) (sensors.Reading, error) {
	select {
	case s.reads <- struct{}{}:
		if s.err != nil {
			return sensors.Reading{}, s.err
		}
		return sensors.Reading{Values: []float64{s.value}}, nil
	case <-ctx.Done():
		return sensors.Reading{}, ctx.Err()
	}
}

func TestMerge(t *testing.T) {
	clock := sensortest.NewFakeClock(time.Unix(0, 0))
	fast := synthetic.New(&synthetic.Options{Seed: 1, Clock: clock})
	env := &slow{name: "env", value: 21.5, reads: make(chan struct{})}
	dead := &slow{name: "probe", err: sensors.ErrNoResponse, reads: make(chan struct{})}
	m, err := sensors.Merge(fast, env, dead)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(m.Channels(), " "); got != "accel.x accel.y accel.z accel.temperature env.temperature probe.temperature" {
		t.Fatalf("channels %s", got)
	}
	ctx := context.Background()
	// Before the slow sensors answered, their channels are NaN.
	r, err := m.Read(ctx)
	if err != nil || len(r.Values) != 6 || !math.IsNaN(r.Values[4]) || !math.IsNaN(r.Values[5]) {
		t.Fatalf("first read %v %v", r, err)
	}
	<-env.reads  // env delivers its sample
	<-dead.reads // probe fails
	// The primary's samples carry env's latest value from now on; the
	// failed probe stays NaN.
	var held bool
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline) && !held; time.Sleep(time.Millisecond) {
		if r, err = m.Read(ctx); err != nil {
			t.Fatal(err)
		}
		held = r.Values[4] == 21.5
	}
	if !held || !math.IsNaN(r.Values[5]) || r.Time.IsZero() {
		t.Fatalf("merged reading %v at %v", r.Values, r.Time)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if !env.closed || !dead.closed {
		t.Fatal("Close did not close the sources")
	}
	if _, err := m.Read(ctx); !errors.Is(err, sensors.ErrClosed) {
		t.Fatalf("read after Close: %v", err)
	}

	if _, err := sensors.Merge(synthetic.New(nil), synthetic.New(nil)); err == nil || !strings.Contains(err.Error(), "accel.x") {
		t.Fatalf("duplicate channels: %v", err)
	}
}

func TestOpenAll(t *testing.T) {
	clock := sensortest.NewFakeClock(time.Unix(0, 0))
	env := &sensors.Env{Buses: &sensortest.Buses{}, Clock: clock}
	srcs, err := sensors.OpenAll([]sensors.Config{{Kind: "synthetic"}, {Kind: "bme280", Name: "env", Bus: "I2C1"}}, env, &sensors.RetryPolicy{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer sensors.CloseAll(srcs)
	h := sensors.Healths(srcs)
	if len(h) != 2 || h[0].Sensor != "accel" || h[0].State != sensors.StateOK || h[1].Sensor != "env" || h[1].State != sensors.StateFailed {
		t.Fatalf("healths %+v", h)
	}
	var ce *sensors.ConfigError
	if _, err := sensors.OpenAll(nil, env, nil); !errors.As(err, &ce) {
		t.Fatalf("no sensors: %v", err)
	}
	if _, err := sensors.OpenAll([]sensors.Config{{Kind: "synthetic"}, {Kind: "adxl345"}}, env, nil); !errors.As(err, &ce) || ce.Field != "name" {
		t.Fatalf("two sensors named accel: %v", err)
	}
}

func TestCheckSpecRate(t *testing.T) {
	spec := synthetic.DefaultSpec() // 1 kHz
	if err := sensors.CheckSpecRate(spec, sensors.Config{Kind: "synthetic"}); err != nil {
		t.Fatalf("synthetic at its default 1 kHz: %v", err)
	}
	err := sensors.CheckSpecRate(spec, sensors.Config{Kind: "adxl345"}) // 100 Hz by default
	if err == nil || !strings.Contains(err.Error(), `"accel"`) || !strings.Contains(err.Error(), "100 Hz") {
		t.Fatalf("adxl345 at 100 Hz: %v", err)
	}
	if err := sensors.CheckSpecRate(spec, sensors.Config{Kind: "adxl345", Rate: 1000}); err != nil {
		t.Fatalf("adxl345 at 1 kHz: %v", err)
	}
	if err := sensors.CheckSpecRate(spec, sensors.Config{Kind: "replay", File: "x.csv"}); err != nil {
		t.Fatalf("replay as fast as read: %v", err)
	}
	spec.Rate = 0
	spec.Features = spec.Features[3:] // temperature mean only
	if err := sensors.CheckSpecRate(spec, sensors.Config{Kind: "bme280"}); err != nil {
		t.Fatalf("statistics only: %v", err)
	}
}
