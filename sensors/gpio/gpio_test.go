package gpio

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"periph.io/x/conn/v3/gpio"
	"periph.io/x/conn/v3/gpio/gpiotest"

	"github.com/trit-iot/trit/sensors"
	"github.com/trit-iot/trit/sensors/sensortest"
)

// countUntil reads s until the count channels have summed at least want
// (parallel to the channels; only count channels matter) or a deadline
// passes, and returns the sums and the last reading. Every Read takes the
// edges counted since the one before, so the sums are over all reads.
func countUntil(t *testing.T, s sensors.Source, want []float64) ([]float64, sensors.Reading) {
	t.Helper()
	sums := make([]float64, len(want))
	var r sensors.Reading
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		var err error
		if r, err = s.Read(context.Background()); err != nil {
			t.Fatal(err)
		}
		done := true
		for i := 0; i < len(want); i += 2 { // count, level, count, level ...
			sums[i] += r.Values[i]
			done = done && sums[i] >= want[i]
		}
		if done {
			break
		}
	}
	return sums, r
}

// pin is periph's fake GPIO pin (gpiotest.Pin: edges are fed on EdgesChan)
// that also records the edge detection In was asked for, which gpiotest
// does not keep.
type pin struct {
	*gpiotest.Pin
	mu   sync.Mutex
	edge gpio.Edge
}

func newPin(name string, num int) *pin {
	return &pin{Pin: &gpiotest.Pin{N: name, Num: num, EdgesChan: make(chan gpio.Level)}}
}

func (p *pin) In(pull gpio.Pull, edge gpio.Edge) error {
	p.mu.Lock()
	p.edge = edge
	p.mu.Unlock()
	return p.Pin.In(pull, edge)
}

func (p *pin) Edge() gpio.Edge {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.edge
}

func TestEdgeCounting(t *testing.T) {
	p17, p27 := newPin("GPIO17", 17), newPin("GPIO27", 27)
	s, err := New([]gpio.PinIn{p17, p27}, &Options{Pull: gpio.PullUp, Edge: gpio.BothEdges})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if want := []string{"gpio.17.count", "gpio.17.level", "gpio.27.count", "gpio.27.level"}; !slices.Equal(s.Channels(), want) {
		t.Fatalf("channels %v", s.Channels())
	}
	if p17.Pull() != gpio.PullUp || p17.Edge() != gpio.BothEdges {
		t.Fatalf("pin set up with %v %v", p17.Pull(), p17.Edge())
	}
	for _, l := range []gpio.Level{gpio.High, gpio.Low, gpio.High, gpio.Low, gpio.High} {
		p17.EdgesChan <- l
	}
	p27.EdgesChan <- gpio.High
	sums, r := countUntil(t, s, []float64{5, 0, 1, 0})
	if sums[0] != 5 || sums[2] != 1 || r.Values[1] != 1 || r.Values[3] != 1 {
		t.Fatalf("counted %v and %v edges on GPIO17 and GPIO27, levels %v, %v; want 5 and 1 edges, both high", sums[0], sums[2], r.Values[1], r.Values[3])
	}
	// Counts are per Read: no edge since, nothing counted.
	if r, _ := s.Read(context.Background()); r.Values[0] != 0 || r.Values[2] != 0 {
		t.Fatalf("counts after they were read: %v", r.Values)
	}
	p17.EdgesChan <- gpio.Low
	if sums, r := countUntil(t, s, []float64{1, 0, 0, 0}); sums[0] != 1 || r.Values[1] != 0 {
		t.Fatalf("one more falling edge: %v counted, level %v", sums[0], r.Values[1])
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Read(context.Background()); !errors.Is(err, sensors.ErrClosed) {
		t.Fatalf("Read after Close: %v", err)
	}
}

func TestPinWithoutEdgeDetection(t *testing.T) {
	// gpiotest.Pin refuses edge detection when it has no edge channel, as
	// a pin whose driver cannot detect edges does.
	p := &gpiotest.Pin{N: "GPIO4", Num: 4}
	_, err := New([]gpio.PinIn{p}, nil)
	var de *sensors.DeviceError
	if !errors.As(err, &de) || de.Op != "open" || de.Sensor != "gpio" || !strings.Contains(err.Error(), "GPIO4") {
		t.Fatalf("got %v, want an open DeviceError naming the pin", err)
	}
}

func TestRegistry(t *testing.T) {
	p := newPin("GPIO17", 17)
	clock := sensortest.NewFakeClock(time.Unix(0, 0))
	env := &sensors.Env{Buses: &sensortest.Buses{Pins: map[string]gpio.PinIO{"17": p}}, Clock: clock}
	cfg := sensors.Config{Kind: "gpio", Name: "flow", Pins: []string{"17"}, Edge: "falling", Pull: "down", Rate: 2}
	want, err := cfg.Channels()
	if err != nil {
		t.Fatal(err)
	}
	src, err := sensors.OpenWith(cfg, env)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if !slices.Equal(src.Channels(), want) || want[0] != "flow.17.count" {
		t.Fatalf("channels %v, config says %v", src.Channels(), want)
	}
	if p.Edge() != gpio.FallingEdge || p.Pull() != gpio.PullDown {
		t.Fatalf("pin set up with %v %v", p.Pull(), p.Edge())
	}
	r1, _ := src.Read(context.Background())
	r2, _ := src.Read(context.Background())
	if r2.Time.Sub(r1.Time) != 500*time.Millisecond {
		t.Fatalf("samples %v apart at 2 Hz", r2.Time.Sub(r1.Time))
	}
	if _, err := sensors.OpenWith(sensors.Config{Kind: "gpio", Pins: []string{"GPIO99"}}, env); err == nil {
		t.Fatal("unknown pin opened")
	}
	for _, c := range []sensors.Config{
		{Kind: "gpio"},
		{Kind: "gpio", Pins: []string{"GPIO17", "17"}},
		{Kind: "gpio", Pins: []string{"4"}, Pull: "sideways"},
		{Kind: "gpio", Pins: []string{"4"}, Edge: "up"},
		{Kind: "gpio", Pins: []string{"4"}, Address: 0x20},
	} {
		var ce *sensors.ConfigError
		if err := c.Validate(); !errors.As(err, &ce) {
			t.Errorf("%+v accepted (%v)", c, err)
		}
	}
}
