package gpio

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"periph.io/x/conn/v3/gpio"

	"github.com/trit-iot/trit/sensors"
	"github.com/trit-iot/trit/sensors/sensortest"
)

// countUntil reads s until channel i has summed want edges or a deadline
// passes, and returns the sum and the last reading.
func countUntil(t *testing.T, s sensors.Source, i int, want float64) (float64, sensors.Reading) {
	t.Helper()
	var sum float64
	var r sensors.Reading
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		var err error
		if r, err = s.Read(context.Background()); err != nil {
			t.Fatal(err)
		}
		if sum += r.Values[i]; sum >= want {
			break
		}
	}
	return sum, r
}

func TestEdgeCounting(t *testing.T) {
	p17, p27 := sensortest.NewPin("GPIO17", 17), sensortest.NewPin("GPIO27", 27)
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
		p17.Edges <- l
	}
	p27.Edges <- gpio.High
	n17, r := countUntil(t, s, 0, 5)
	if n17 != 5 || r.Values[1] != 1 {
		t.Fatalf("GPIO17: %v edges, level %v; want 5 edges, level 1", n17, r.Values[1])
	}
	if n27, _ := countUntil(t, s, 2, 1); n27 != 1 {
		t.Fatalf("GPIO27: %v edges, want 1", n27)
	}
	// Counts are per Read.
	if r, _ := s.Read(context.Background()); r.Values[0] != 0 {
		t.Fatalf("count after it was read: %v", r.Values[0])
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Read(context.Background()); !errors.Is(err, sensors.ErrClosed) {
		t.Fatalf("Read after Close: %v", err)
	}
}

func TestPinWithoutEdgeDetection(t *testing.T) {
	p := sensortest.NewPin("GPIO4", 4)
	p.InErr = errors.New("edge detection not supported")
	_, err := New([]gpio.PinIn{p}, nil)
	var de *sensors.DeviceError
	if !errors.As(err, &de) || de.Op != "open" {
		t.Fatalf("got %v", err)
	}
}

func TestRegistry(t *testing.T) {
	p := sensortest.NewPin("GPIO17", 17)
	clock := sensortest.NewFakeClock(time.Unix(0, 0))
	env := &sensors.Env{Buses: &sensortest.Buses{Pins: map[string]*sensortest.Pin{"17": p}}, Clock: clock}
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
