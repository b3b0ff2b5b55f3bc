package adxl345

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"periph.io/x/conn/v3/conntest"
	"periph.io/x/conn/v3/i2c"
	"periph.io/x/conn/v3/i2c/i2ctest"
	"periph.io/x/conn/v3/spi"
	"periph.io/x/conn/v3/spi/spitest"

	"github.com/trit-iot/trit/sensors"
	"github.com/trit-iot/trit/sensors/sensortest"
)

// i2cInit is the start-up traffic at ±16 g (DATA_FORMAT 0x08|0x03) and
// 100 Hz (BW_RATE 0x0A).
func i2cInit(addr uint16) []i2ctest.IO {
	return []i2ctest.IO{
		{Addr: addr, W: []byte{0x00}, R: []byte{0xE5}}, // DEVID
		{Addr: addr, W: []byte{0x2D, 0x00}},            // POWER_CTL standby
		{Addr: addr, W: []byte{0x2C, 0x0A}},            // BW_RATE 100 Hz
		{Addr: addr, W: []byte{0x31, 0x0B}},            // DATA_FORMAT full res, ±16 g
		{Addr: addr, W: []byte{0x2D, 0x08}},            // POWER_CTL measure
	}
}

// x = 256 (1 g), y = −2 (−7.8 mg), z = 0x0123 = 291.
var sample = []byte{0x00, 0x01, 0xFE, 0xFF, 0x23, 0x01}

func TestI2C(t *testing.T) {
	ops := append(i2cInit(0x53),
		i2ctest.IO{Addr: 0x53, W: []byte{0x32}, R: sample}, // DATAX0..DATAZ1
		i2ctest.IO{Addr: 0x53, W: []byte{0x2D, 0x00}})      // Close: standby
	bus := &i2ctest.Playback{Ops: ops}
	clock := sensortest.NewFakeClock(time.Unix(9, 0))
	s, err := NewI2C(bus, 0x53, &Options{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if want := []float64{1, -2.0 / 256, 291.0 / 256}; !slices.Equal(r.Values, want) || !r.Time.Equal(clock.Now()) {
		t.Fatalf("read %v at %v, want %v", r.Values, r.Time, want)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := bus.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestSPI(t *testing.T) {
	// Reads: first byte = address | 0x80 (read) | 0x40 (multi-byte); the
	// chip's answer follows it. ±2 g (DATA_FORMAT 0x08), 1 kHz → 1600 Hz ODR (0x0E).
	port := &spitest.Playback{Playback: conntest.Playback{Ops: []conntest.IO{
		{W: []byte{0x80, 0x00}, R: []byte{0x00, 0xE5}},
		{W: []byte{0x2D, 0x00}},
		{W: []byte{0x2C, 0x0E}},
		{W: []byte{0x31, 0x08}},
		{W: []byte{0x2D, 0x08}},
		{W: []byte{0xF2, 0, 0, 0, 0, 0, 0}, R: append([]byte{0}, sample...)},
	}}}
	s, err := NewSPI(port, &Options{Name: "vib", RangeG: 2, Rate: 1000})
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.Channels(), []string{"vib.x", "vib.y", "vib.z"}) || r.Values[0] != 1 || r.Values[2] != 291.0/256 {
		t.Fatalf("%v %v", s.Channels(), r.Values)
	}
	if err := port.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestFailures(t *testing.T) {
	_, err := NewI2C(&i2ctest.Playback{DontPanic: true}, 0x53, nil)
	if !errors.Is(err, sensors.ErrNoResponse) {
		t.Errorf("no device: %v", err)
	}
	_, err = NewI2C(&i2ctest.Playback{Ops: []i2ctest.IO{{Addr: 0x53, W: []byte{0x00}, R: []byte{0x00}}}}, 0x53, nil)
	if !errors.Is(err, sensors.ErrWrongDevice) {
		t.Errorf("DEVID 0: %v", err)
	}
	// Stops answering after start-up.
	bus := &i2ctest.Playback{Ops: i2cInit(0x53), DontPanic: true}
	s, err := NewI2C(bus, 0x53, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Read(context.Background()); !errors.Is(err, sensors.ErrNoResponse) {
		t.Errorf("silent read: %v", err)
	}
	// Garbage: 0x7FFF cannot come out of a 13-bit full-resolution result.
	bus = &i2ctest.Playback{Ops: append(i2cInit(0x53), i2ctest.IO{Addr: 0x53, W: []byte{0x32}, R: []byte{0xFF, 0x7F, 0, 0, 0, 0}})}
	if s, err = NewI2C(bus, 0x53, nil); err != nil {
		t.Fatal(err)
	}
	var de *sensors.DeviceError
	if _, err := s.Read(context.Background()); !errors.Is(err, sensors.ErrBadReading) || !errors.As(err, &de) || de.Op != "read" {
		t.Errorf("garbage read: %v", err)
	}
	if _, err := NewI2C(&i2ctest.Playback{}, 0x53, &Options{RangeG: 3}); err == nil {
		t.Error("range 3 g accepted")
	}
}

func TestRateCode(t *testing.T) {
	for _, c := range []struct {
		rate float64
		code byte
	}{{0.05, 0x00}, {0.1, 0x01}, {1, 0x04}, {100, 0x0A}, {101, 0x0B}, {1000, 0x0E}, {3200, 0x0F}} {
		if got, err := rateCode(c.rate); err != nil || got != c.code {
			t.Errorf("rateCode(%v) = %#x %v, want %#x", c.rate, got, err, c.code)
		}
	}
	if _, err := rateCode(3201); err == nil {
		t.Error("3201 Hz accepted")
	}
}

func TestRegistry(t *testing.T) {
	ops := append(i2cInit(0x1D), i2ctest.IO{Addr: 0x1D, W: []byte{0x32}, R: sample}, i2ctest.IO{Addr: 0x1D, W: []byte{0x2D, 0x00}})
	bus := &i2ctest.Playback{Ops: ops}
	env := &sensors.Env{Buses: &sensortest.Buses{I2C: map[string]i2c.Bus{"": bus}, SPI: map[string]spi.Port{}}, Clock: sensortest.NewFakeClock(time.Unix(0, 0))}
	src, err := sensors.OpenWith(sensors.Config{Kind: "adxl345", Address: 0x1D}, env)
	if err != nil {
		t.Fatal(err)
	}
	if r, err := src.Read(context.Background()); err != nil || r.Values[0] != 1 {
		t.Fatalf("%v %v", r, err)
	}
	src.Close()
	if err := bus.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := sensors.OpenWith(sensors.Config{Kind: "adxl345", Bus: "SPI0.0"}, env); err == nil {
		t.Fatal("missing SPI port: no error")
	}
	for _, c := range []sensors.Config{
		{Kind: "adxl345", Address: 0x50},
		{Kind: "adxl345", Rate: 5000},
		{Kind: "adxl345", RangeG: 1},
		{Kind: "adxl345", Bus: "SPI0.0", Address: 0x53},
	} {
		var ce *sensors.ConfigError
		if err := c.Validate(); !errors.As(err, &ce) {
			t.Errorf("%+v accepted (%v)", c, err)
		}
	}
}

func TestSPIFailures(t *testing.T) {
	devid := func(v byte) []conntest.IO { return []conntest.IO{{W: []byte{0x80, 0x00}, R: []byte{0x00, v}}} }
	for _, c := range []struct {
		name string
		ops  []conntest.IO
		want error
	}{
		{"nothing on MISO (0xFF)", devid(0xFF), sensors.ErrNoResponse},
		{"nothing on MISO (0x00)", devid(0x00), sensors.ErrNoResponse},
		{"another chip", devid(0x60), sensors.ErrWrongDevice},
		{"transfer fails", nil, sensors.ErrNoResponse},
	} {
		port := &spitest.Playback{Playback: conntest.Playback{Ops: c.ops, DontPanic: true}}
		_, err := NewSPI(port, nil)
		var de *sensors.DeviceError
		if !errors.Is(err, c.want) || !errors.As(err, &de) || de.Op != "open" || de.Sensor != "accel" {
			t.Errorf("%s: got %v, want an open DeviceError wrapping %v", c.name, err, c.want)
		}
	}
	// Answers at start-up, then the read transfer fails; then garbage
	// (−32768 is beyond a 10-bit ±2 g result).
	init := []conntest.IO{
		{W: []byte{0x80, 0x00}, R: []byte{0x00, 0xE5}},
		{W: []byte{0x2D, 0x00}}, {W: []byte{0x2C, 0x0A}}, {W: []byte{0x31, 0x08}}, {W: []byte{0x2D, 0x08}},
	}
	port := &spitest.Playback{Playback: conntest.Playback{Ops: init, DontPanic: true}}
	s, err := NewSPI(port, &Options{RangeG: 2})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Read(context.Background()); !errors.Is(err, sensors.ErrNoResponse) {
		t.Errorf("failed read transfer: %v", err)
	}
	ops := append(slices.Clone(init), conntest.IO{W: []byte{0xF2, 0, 0, 0, 0, 0, 0}, R: []byte{0, 0, 0, 0, 0, 0x00, 0x80}})
	port = &spitest.Playback{Playback: conntest.Playback{Ops: ops}}
	if s, err = NewSPI(port, &Options{RangeG: 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Read(context.Background()); !errors.Is(err, sensors.ErrBadReading) || !strings.Contains(err.Error(), "accel.z") {
		t.Errorf("garbage read: %v", err)
	}
}

func TestRetryingRecoversAfterUnplug(t *testing.T) {
	// Through the registry and the retrying wrapper: the accelerometer
	// answers, stops answering (3 attempts, then failed), and comes back
	// (reopened and re-initialised after the backoff).
	sampleRead := i2ctest.IO{Addr: 0x53, W: []byte{0x32}, R: sample}
	bus := &i2ctest.Playback{Ops: append(i2cInit(0x53), sampleRead), DontPanic: true}
	clock := sensortest.NewFakeClock(time.Unix(0, 0))
	env := &sensors.Env{Buses: &sensortest.Buses{I2C: map[string]i2c.Bus{"I2C1": bus}}, Clock: clock}
	src, err := sensors.OpenRetrying(sensors.Config{Kind: "adxl345", Bus: "I2C1"}, env, &sensors.RetryPolicy{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if r, err := src.Read(context.Background()); err != nil || r.Values[0] != 1 {
		t.Fatalf("first read %v %v", r, err)
	}
	if _, err := src.Read(context.Background()); !errors.Is(err, sensors.ErrNoResponse) {
		t.Fatalf("read of unplugged device: %v", err)
	}
	if h := src.Health(); h.State != sensors.StateFailed || h.Sensor != "accel" {
		t.Fatalf("health %+v", h)
	}
	bus.Lock()
	bus.Ops = append(i2cInit(0x53), sampleRead)
	bus.Count = 0
	bus.Unlock()
	if r, err := src.Read(context.Background()); err != nil || r.Values[0] != 1 {
		t.Fatalf("read after replug: %v %v", r, err)
	}
	if h := src.Health(); h.State != sensors.StateOK {
		t.Fatalf("health after replug %+v", h)
	}
}
