package sensors_test

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trit-iot/trit/sensors"
	"github.com/trit-iot/trit/sensors/sensortest"
)

var errNAK = errors.New("i2c: NAK")

// flaky is a Source whose reads fail while fail() says so.
type flaky struct {
	fail   func() bool
	reads  int
	closed bool
}

func (f *flaky) Channels() []string { return []string{"a"} }
func (f *flaky) Close() error       { f.closed = true; return nil }
func (f *flaky) Read(ctx context.Context) (sensors.Reading, error) {
	f.reads++
	if f.fail() {
		return sensors.Reading{}, sensors.NewDeviceError("dev", "read", sensors.ErrNoResponse, errNAK)
	}
	return sensors.Reading{Values: []float64{float64(f.reads)}}, nil
}

// device simulates hardware that can be unplugged.
type device struct {
	mu      sync.Mutex
	down    bool
	opens   int
	sources []*flaky
}

func (d *device) setDown(v bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.down = v
}

func (d *device) isDown() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.down
}

func (d *device) open() (sensors.Source, error) {
	d.opens++
	if d.isDown() {
		return nil, sensors.NewDeviceError("dev", "open", sensors.ErrNoResponse, errNAK)
	}
	s := &flaky{fail: d.isDown}
	d.sources = append(d.sources, s)
	return s, nil
}

func TestRetryingLifecycle(t *testing.T) {
	clock := sensortest.NewFakeClock(time.Unix(0, 0))
	dev := &device{}
	r := sensors.NewRetrying("dev", []string{"a"}, dev.open,
		&sensors.RetryPolicy{Attempts: 3, RetryDelay: 10 * time.Millisecond, ReopenDelay: time.Second, MaxDelay: 4 * time.Second, Clock: clock})
	ctx := context.Background()
	if h := r.Health(); h.State != sensors.StateOK || dev.opens != 1 {
		t.Fatalf("after open: %+v, %d opens", h, dev.opens)
	}
	if _, err := r.Read(ctx); err != nil {
		t.Fatal(err)
	}

	// Unplugged: one Read tries 3 times (waiting 10 ms, then 20 ms), then
	// declares the sensor failed and closes the device.
	dev.setDown(true)
	failedAt := clock.Now().Add(30 * time.Millisecond)
	_, err := r.Read(ctx)
	if !errors.Is(err, sensors.ErrNoResponse) {
		t.Fatalf("read of unplugged device: %v", err)
	}
	if got := clock.Slept(); !slices.Equal(got, []time.Duration{10 * time.Millisecond, 20 * time.Millisecond}) {
		t.Fatalf("in-call retry pauses %v", got)
	}
	h := r.Health()
	if h.State != sensors.StateFailed || !h.Since.Equal(failedAt) || h.Failures != 1 ||
		!strings.Contains(h.LastError, "NAK") || !h.NextRetry.Equal(failedAt.Add(time.Second)) {
		t.Fatalf("health after failure: %+v", h)
	}
	if !dev.sources[0].closed || dev.sources[0].reads != 4 {
		t.Fatalf("device closed %v after %d reads", dev.sources[0].closed, dev.sources[0].reads)
	}

	// While down, every Read first waits out a doubling backoff capped at
	// MaxDelay, then tries to reopen.
	var waits []time.Duration
	for range 4 {
		before := clock.Now()
		if _, err := r.Read(ctx); err == nil {
			t.Fatal("read succeeded while down")
		}
		waits = append(waits, clock.Now().Sub(before))
	}
	if !slices.Equal(waits, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 4 * time.Second}) {
		t.Fatalf("reopen backoff %v", waits)
	}
	if h := r.Health(); h.Failures != 5 || !h.Since.Equal(failedAt) {
		t.Fatalf("health while down: %+v", h)
	}

	// Plugged back: the next Read reopens and the sensor is healthy again.
	dev.setDown(false)
	rd, err := r.Read(ctx)
	if err != nil || len(rd.Values) != 1 {
		t.Fatalf("read after recovery: %v %v", rd, err)
	}
	if h := r.Health(); h.State != sensors.StateOK || h.Failures != 0 || !h.Since.Equal(clock.Now()) || !h.NextRetry.IsZero() || h.LastError == "" {
		t.Fatalf("health after recovery: %+v", h)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Read(ctx); !errors.Is(err, sensors.ErrClosed) {
		t.Fatalf("read after close: %v", err)
	}
}

func TestRetryingTransientGlitch(t *testing.T) {
	clock := sensortest.NewFakeClock(time.Unix(0, 0))
	n := 0
	src := &flaky{fail: func() bool { n++; return n == 1 }} // fails once
	r := sensors.NewRetrying("dev", []string{"a"}, func() (sensors.Source, error) { return src, nil }, &sensors.RetryPolicy{Clock: clock})
	if _, err := r.Read(context.Background()); err != nil {
		t.Fatalf("a single glitch surfaced: %v", err)
	}
	if h := r.Health(); h.State != sensors.StateOK || h.LastError == "" {
		t.Fatalf("health after a glitch: %+v", h)
	}
}

func TestRetryingPassesEOFAndCancel(t *testing.T) {
	eof := &eofSource{}
	r := sensors.NewRetrying("replay", nil, func() (sensors.Source, error) { return eof, nil }, nil)
	if _, err := r.Read(context.Background()); !errors.Is(err, io.EOF) {
		t.Fatalf("EOF: %v", err)
	}
	if h := r.Health(); h.State != sensors.StateOK {
		t.Fatalf("EOF counted as failure: %+v", h)
	}

	// With the real clock, Close interrupts a Read waiting out a backoff.
	dead := sensors.NewRetrying("dead", nil, func() (sensors.Source, error) { return nil, errNAK },
		&sensors.RetryPolicy{ReopenDelay: time.Hour})
	done := make(chan error)
	go func() {
		_, err := dead.Read(context.Background())
		done <- err
	}()
	time.Sleep(10 * time.Millisecond)
	dead.Close()
	select {
	case err := <-done:
		if !errors.Is(err, sensors.ErrClosed) {
			t.Fatalf("interrupted read: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not interrupt the backoff")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	dead2 := sensors.NewRetrying("dead", nil, func() (sensors.Source, error) { return nil, errNAK }, nil)
	if _, err := dead2.Read(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled read: %v", err)
	}
}

type eofSource struct{}

func (eofSource) Channels() []string { return nil }
func (eofSource) Close() error       { return nil }
func (eofSource) Read(context.Context) (sensors.Reading, error) {
	return sensors.Reading{}, io.EOF
}

func TestOpenRetryingConfigOnly(t *testing.T) {
	if _, err := sensors.OpenRetrying(sensors.Config{Kind: "bme280", Address: 1}, nil, nil); err == nil {
		t.Fatal("bad config accepted")
	}
	// A missing bus is not a config error: the sensor starts failed.
	env := &sensors.Env{Buses: &sensortest.Buses{}, Clock: sensortest.NewFakeClock(time.Unix(0, 0))}
	r, err := sensors.OpenRetrying(sensors.Config{Kind: "adxl345", Bus: "I2C7"}, env, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if h := r.Health(); h.State != sensors.StateFailed || h.Sensor != "accel" || !strings.Contains(h.LastError, "I2C7") {
		t.Fatalf("health %+v", h)
	}
	if !slices.Equal(r.Channels(), []string{"accel.x", "accel.y", "accel.z"}) || r.Name() != "accel" {
		t.Fatalf("channels %v", r.Channels())
	}
}

func TestPacer(t *testing.T) {
	clock := sensortest.NewFakeClock(time.Unix(0, 0))
	p := sensors.NewPacer(4, clock) // 250 ms; catches up at most 500 ms
	ctx := context.Background()
	var at []time.Duration
	for i := range 8 {
		switch i {
		case 3:
			clock.Advance(2 * time.Second) // a consumer stalled too long
		case 6:
			clock.Advance(400 * time.Millisecond) // a short stall
		}
		if err := p.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		at = append(at, clock.Now().Sub(time.Unix(0, 0)))
	}
	ms := time.Millisecond
	// After the long stall the schedule restarts from then, the 7 samples
	// due meanwhile skipped; after the short one the late sample comes at
	// once and the schedule goes on (3500 ms, not 3650).
	if want := []time.Duration{0, 250 * ms, 500 * ms, 2500 * ms, 2750 * ms, 3000 * ms, 3400 * ms, 3500 * ms}; !slices.Equal(at, want) {
		t.Fatalf("waits ended at %v, want %v", at, want)
	}
	if p.Skipped() != 7 {
		t.Fatalf("skipped %d samples, want 7", p.Skipped())
	}
	ctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := p.Wait(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled wait: %v", err)
	}
	src := &flaky{fail: func() bool { return false }}
	if sensors.Paced(src, 0, clock) != sensors.Source(src) {
		t.Fatal("rate 0 should not wrap")
	}
}

func TestSystemClockSleep(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := sensors.SystemClock.Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	if err := sensors.SystemClock.Sleep(context.Background(), time.Millisecond); err != nil {
		t.Fatal(err)
	}
}
