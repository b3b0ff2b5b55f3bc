package ads1115

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"
	"time"

	"periph.io/x/conn/v3/i2c"
	"periph.io/x/conn/v3/i2c/i2ctest"

	"github.com/trit-iot/trit/sensors"
	"github.com/trit-iot/trit/sensors/sensortest"
)

// Identity check at open: write the power-on config 0x0583 (OS bit clear, so
// no conversion starts) and read it back; the chip sets OS (bit 15) when
// idle.
func identity(addr uint16) []i2ctest.IO {
	return []i2ctest.IO{
		{Addr: addr, W: []byte{0x01, 0x05, 0x83}},
		{Addr: addr, W: []byte{0x01}, R: []byte{0x85, 0x83}},
	}
}

// conversion is one single-shot read of periph's driver: write the config
// (OS=1 start, MUX, PGA, MODE=1 single, DR, COMP_QUE=11 off), then read
// the conversion register.
func conversion(addr uint16, config uint16, raw uint16) []i2ctest.IO {
	return []i2ctest.IO{
		{Addr: addr, W: []byte{0x01, byte(config >> 8), byte(config)}},
		{Addr: addr, W: []byte{0x00}, R: []byte{byte(raw >> 8), byte(raw)}},
	}
}

func TestReadTwoInputs(t *testing.T) {
	// Inputs 0 and 2-3 at 4.096 V full scale (PGA 001) and 50 Hz × 2 inputs:
	// the slowest data rate ≥ 100 SPS is 128 SPS (DR 100).
	//   input 0:   1 100 001 1 100 00011 = 0xC383
	//   input 2-3: 1 011 001 1 100 00011 = 0xB383
	ops := identity(0x49)
	ops = append(ops, conversion(0x49, 0xC383, 0x4000)...) // +2.048 V
	ops = append(ops, conversion(0x49, 0xB383, 0xF000)...) // −0.512 V
	bus := &i2ctest.Playback{Ops: ops}
	clock := sensortest.NewFakeClock(time.Unix(5, 0))
	s, err := New(bus, &Options{Name: "pot", Address: 0x49, Inputs: []string{"0", "2-3"}, Rate: 50, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.Channels(), []string{"pot.0", "pot.2-3"}) {
		t.Fatalf("channels %v", s.Channels())
	}
	r, err := s.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(r.Values[0]-2.048) > 1e-9 || math.Abs(r.Values[1]+0.512) > 1e-9 || !r.Time.Equal(clock.Now()) {
		t.Fatalf("read %v at %v", r.Values, r.Time)
	}
	s.Close()
	if err := bus.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestOpenFailures(t *testing.T) {
	_, err := New(&i2ctest.Playback{DontPanic: true}, nil)
	if !errors.Is(err, sensors.ErrNoResponse) {
		t.Errorf("silent bus: %v", err)
	}
	garbage := &i2ctest.Playback{Ops: []i2ctest.IO{
		{Addr: 0x48, W: []byte{0x01, 0x05, 0x83}},
		{Addr: 0x48, W: []byte{0x01}, R: []byte{0xFF, 0xFF}},
	}}
	_, err = New(garbage, nil)
	var de *sensors.DeviceError
	if !errors.Is(err, sensors.ErrWrongDevice) || !errors.As(err, &de) || de.Sensor != "adc" {
		t.Errorf("garbage read-back: %v", err)
	}
	if _, err := New(&i2ctest.Playback{}, &Options{Inputs: []string{"4"}}); err == nil {
		t.Error("input 4 accepted")
	}
}

func TestReadFailures(t *testing.T) {
	// The chip answers at open, then stops answering.
	bus := &i2ctest.Playback{Ops: identity(0x48), DontPanic: true}
	s, err := New(bus, &Options{Rate: 800})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Read(context.Background()); !errors.Is(err, sensors.ErrNoResponse) {
		t.Fatalf("read of silent chip: %v", err)
	}
	// An ADS1015 whose result has the low 4 bits set answers garbage.
	// Input 0 at 4.096 V, 1600 SPS (DR 100) for 1000 Hz: 0xC383.
	ops := append(identity(0x48), conversion(0x48, 0xC383, 0x1235)...)
	bus = &i2ctest.Playback{Ops: ops}
	if s, err = New(bus, &Options{Model: ADS1015, Rate: 1000}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Read(context.Background()); !errors.Is(err, sensors.ErrBadReading) {
		t.Fatalf("ADS1015 garbage: %v", err)
	}
}

func TestRegistry(t *testing.T) {
	ops := identity(0x48)
	ops = append(ops, conversion(0x48, 0xC383, 0x2000)...) // input 0, 128 SPS for 100 Hz
	bus := &i2ctest.Playback{Ops: ops}
	env := &sensors.Env{Buses: &sensortest.Buses{I2C: map[string]i2c.Bus{"I2C1": bus}}, Clock: sensortest.NewFakeClock(time.Unix(0, 0))}
	src, err := sensors.OpenWith(sensors.Config{Kind: "ads1115", Bus: "I2C1", Rate: 100}, env)
	if err != nil {
		t.Fatal(err)
	}
	r, err := src.Read(context.Background())
	if err != nil || math.Abs(r.Values[0]-1.024) > 1e-9 || src.Channels()[0] != "adc.0" {
		t.Fatalf("read %v %v %v", r.Values, src.Channels(), err)
	}
	src.Close()
	if err := bus.Close(); err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		cfg   sensors.Config
		field string
	}{
		{sensors.Config{Kind: "ads1115", Address: 0x76}, "address"},
		{sensors.Config{Kind: "ads1115", Bus: "SPI0.0"}, "bus"},
		{sensors.Config{Kind: "ads1115", Inputs: []string{"0", "0"}}, "inputs"},
		{sensors.Config{Kind: "ads1115", MaxVolts: 7}, "max_volts"},
		{sensors.Config{Kind: "ads1115", Rate: 300, Inputs: []string{"0", "1", "2"}}, "rate"},
		{sensors.Config{Kind: "ads1015", RangeG: 2}, "range_g"},
	} {
		var ce *sensors.ConfigError
		if err := c.cfg.Validate(); !errors.As(err, &ce) || ce.Field != c.field {
			t.Errorf("%+v: %v, want error on %s", c.cfg, err, c.field)
		}
	}
	if err := (sensors.Config{Kind: "ads1015", Rate: 1000, Inputs: []string{"0", "1", "2"}}).Validate(); err != nil {
		t.Errorf("ADS1015 at 3000 conversions/s refused: %v", err)
	}
}

func TestDetect(t *testing.T) {
	bus := &i2ctest.Playback{Ops: []i2ctest.IO{{Addr: 0x48, W: []byte{0x01}, R: []byte{0x85, 0x83}}}, DontPanic: true}
	if model, ok := detect(ADS1115)(bus, 0x48); !ok || model == "" {
		t.Fatal("answering chip not detected")
	}
	if _, ok := detect(ADS1115)(bus, 0x49); ok {
		t.Fatal("silent address detected")
	}
}
