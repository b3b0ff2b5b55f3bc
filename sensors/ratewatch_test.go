package sensors_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/trit-iot/trit/sensors"
	"github.com/trit-iot/trit/sensors/sensortest"
)

// TestRetryingReportsSlowSensor: a 1 kHz sensor read every 2 ms (a
// consumer or a device that cannot keep up) delivers 500 Hz; its health
// says so within a few seconds, with both rates, and goes back to ok once
// it keeps its rate again. In virtual time: the test advances the clock
// by step before each read, the pacer's sleeps advance it too.
func TestRetryingReportsSlowSensor(t *testing.T) {
	clock := sensortest.NewFakeClock(time.Unix(1000, 0))
	env := &sensors.Env{Clock: clock, Buses: &sensortest.Buses{}}
	src, err := sensors.OpenRetrying(sensors.Config{Kind: "synthetic", Rate: 1000}, env, &sensors.RetryPolicy{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	// readFor reads for d of virtual time and returns when the state
	// became want (-1: never).
	readFor := func(d, step time.Duration, want sensors.State) time.Duration {
		t.Helper()
		start := clock.Now()
		for clock.Now().Sub(start) < d {
			clock.Advance(step)
			if _, err := src.Read(context.Background()); err != nil {
				t.Fatal(err)
			}
			if src.Health().State == want {
				return clock.Now().Sub(start)
			}
		}
		return -1
	}
	ms := time.Millisecond
	if at := readFor(10*time.Second, ms, "slow"); at >= 0 {
		t.Fatalf("a sensor at its rate became slow after %v: %+v", at, src.Health())
	}
	at := readFor(20*time.Second, 2*ms, "slow")
	h := src.Health()
	if at < 0 || at > 5*time.Second {
		t.Fatalf("a sensor at half its rate: state %q after 20 s (%+v), want slow within 5 s", h.State, h)
	}
	if !strings.Contains(h.LastError, "reads 500 Hz of the configured 1 kHz") || !h.Since.Equal(clock.Now()) {
		t.Fatalf("slow health %+v, want the rates in the last error and since now", h)
	}
	if at := readFor(20*time.Second, 0, sensors.StateOK); at < 0 || at > 5*time.Second {
		t.Fatalf("back at its rate: state %q after 20 s, want ok within 5 s", src.Health().State)
	}
}

// TestRetryingRateByEnvClock: without a policy clock, the rate a source
// delivers is timed by the clock that paces it (env's), as the agent opens
// its sensors: in virtual time a 1 kHz sensor read every 2 ms is slow
// within 5 s of that time however fast the machine runs the reads, and one
// read at its pace is never slow however slowly.
func TestRetryingRateByEnvClock(t *testing.T) {
	clock := sensortest.NewFakeClock(time.Unix(1000, 0))
	src, err := sensors.OpenRetrying(sensors.Config{Kind: "synthetic", Rate: 1000}, &sensors.Env{Clock: clock, Buses: &sensortest.Buses{}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	start := clock.Now()
	for clock.Now().Sub(start) < 10*time.Second {
		if _, err := src.Read(context.Background()); err != nil {
			t.Fatal(err)
		}
		if h := src.Health(); h.State != sensors.StateOK {
			t.Fatalf("a sensor at its rate in virtual time became %q after %v: %+v", h.State, clock.Now().Sub(start), h)
		}
	}
	start = clock.Now()
	for src.Health().State != sensors.StateSlow {
		if clock.Now().Sub(start) > 5*time.Second {
			t.Fatalf("a sensor at half its rate in virtual time: %+v after %v, want slow within 5 s", src.Health(), clock.Now().Sub(start))
		}
		clock.Advance(2 * time.Millisecond) // a reader that takes 2 ms per reading
		if _, err := src.Read(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if h := src.Health(); !strings.Contains(h.LastError, "reads 500 Hz of the configured 1 kHz") {
		t.Fatalf("slow health %+v, want the rates in virtual time", h)
	}
}
