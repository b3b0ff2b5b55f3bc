package bmxx80

import (
	"context"
	"errors"
	"math"
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

// Register traffic, byte for byte, as periph's bmxx80 driver issues it and
// as the datasheet defines it. The calibration and measurement bytes are the
// real device data from periph's own tests, whose expected results are
// 23.72 °C, 100942.695 Pa and 65.3056 %RH.
var (
	calib    = []byte{0x10, 0x6e, 0x6c, 0x66, 0x32, 0x0, 0x5d, 0x95, 0xb8, 0xd5, 0xd0, 0xb, 0x77, 0x1e, 0x9d, 0xff, 0xf9, 0xff, 0xac, 0x26, 0xa, 0xd8, 0xbd, 0x10, 0x0, 0x4b}
	calibHum = []byte{0x6e, 0x1, 0x0, 0x13, 0x5, 0x0, 0x1e}
	measured = []byte{0x4a, 0x52, 0xc0, 0x80, 0x96, 0xc0, 0x7a, 0x76}
)

const (
	wantCelsius = 23.72
	wantHPa     = 1009.42695312500
	wantRH      = 65.30560
)

// bme280Init is the I²C start-up at oversampling 4 (osrs=011), filter 2
// (010 → 001), standby 500 ms (100, for rate 1 Hz: 1 s minus 26 ms).
func bme280Init(addr uint16) []i2ctest.IO {
	return []i2ctest.IO{
		{Addr: addr, W: []byte{0xD0}, R: []byte{0x60}}, // chip_id
		{Addr: addr, W: []byte{0x88}, R: calib},        // calib00..calib25
		{Addr: addr, W: []byte{0xE1}, R: calibHum},     // calib26..calib32
		// ctrl_meas sleep (011 011 00), ctrl_hum 011, config (100 001 00), ctrl_meas normal (011 011 11).
		{Addr: addr, W: []byte{0xF4, 0x6C, 0xF2, 0x03, 0xF5, 0x84, 0xF4, 0x6F}},
	}
}

func bmp280Init(addr uint16) []i2ctest.IO {
	return []i2ctest.IO{
		{Addr: addr, W: []byte{0xD0}, R: []byte{0x58}},
		{Addr: addr, W: []byte{0x88}, R: calib},
		{Addr: addr, W: []byte{0xF4, 0x6C, 0xF5, 0x84, 0xF4, 0x6F}},
	}
}

var sleepOp = i2ctest.IO{Addr: 0x76, W: []byte{0xF4, 0x6C}} // ctrl_meas, mode 00

func opts(model string) *Options {
	return &Options{Model: model, Clock: sensortest.NewFakeClock(time.Unix(0, 0))}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-6 }

func TestI2CBME280(t *testing.T) {
	bus := &i2ctest.Playback{Ops: append(bme280Init(0x76),
		i2ctest.IO{Addr: 0x76, W: []byte{0xF7}, R: measured}, // press_msb..hum_lsb in one burst
		sleepOp)}
	s, err := NewI2C(bus, 0x76, opts(BME280))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(s.Channels(), ","); got != "bme280.temperature,bme280.pressure,bme280.humidity" {
		t.Fatalf("channels %s", got)
	}
	r, err := s.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !near(r.Values[0], wantCelsius) || !near(r.Values[1], wantHPa) || !near(r.Values[2], wantRH) {
		t.Fatalf("read %v, want [%v %v %v]", r.Values, wantCelsius, wantHPa, wantRH)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Read(context.Background()); !errors.Is(err, sensors.ErrClosed) {
		t.Fatalf("Read after Close: %v", err)
	}
	if err := bus.Close(); err != nil {
		t.Fatal(err) // every expected transfer happened
	}
}

func TestI2CBMP280(t *testing.T) {
	bus := &i2ctest.Playback{Ops: append(bmp280Init(0x76),
		i2ctest.IO{Addr: 0x76, W: []byte{0xF7}, R: measured[:6]},
		sleepOp)}
	s, err := NewI2C(bus, 0x76, &Options{Name: "env"})
	if err != nil {
		t.Fatal(err)
	}
	if s.Model() != BMP280 || len(s.Channels()) != 2 || s.Channels()[0] != "env.temperature" {
		t.Fatalf("model %s channels %v", s.Model(), s.Channels())
	}
	r, err := s.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !near(r.Values[0], wantCelsius) || !near(r.Values[1], wantHPa) {
		t.Fatalf("read %v", r.Values)
	}
	s.Close()
	if err := bus.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestSPIBME280(t *testing.T) {
	// On SPI every register read starts with the address byte, while the
	// chip answers in the following bytes; writes clear bit 7. Data from
	// periph's SPI test: 62.68 °C, 995.7593359375 hPa, 9.9501 %RH.
	zeros := func(n int) []byte { return make([]byte, n) }
	port := &spitest.Playback{Playback: conntest.Playback{Ops: []conntest.IO{
		{W: []byte{0xD0, 0x00}, R: []byte{0x00, 0x60}},
		{W: append([]byte{0x88}, zeros(26)...), R: []byte{0x00, 0xC9, 0x6C, 0x63, 0x65, 0x32, 0x00, 0x77, 0x93, 0x98, 0xD5, 0xD0, 0x0B, 0x67, 0x23, 0xBA, 0x00, 0xF9, 0xFF, 0xAC, 0x26, 0x0A, 0xD8, 0xBD, 0x10, 0x00, 0x4B}},
		{W: append([]byte{0xE1}, zeros(7)...), R: []byte{0x00, 0x5C, 0x01, 0x00, 0x15, 0x0F, 0x00, 0x1E}},
		{W: []byte{0x74, 0x6C, 0x72, 0x03, 0x75, 0x84, 0x74, 0x6F}},
		{W: append([]byte{0xF7}, zeros(8)...), R: []byte{0x00, 0x51, 0x9F, 0xC0, 0x9E, 0x3A, 0x50, 0x5E, 0x5B}},
		{W: []byte{0x74, 0x6C}},
	}}}
	s, err := NewSPI(port, opts(""))
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !near(r.Values[0], 62.68) || !near(r.Values[1], 995.7593359375) || !near(r.Values[2], 9.9501) {
		t.Fatalf("read %v", r.Values)
	}
	s.Close()
	if err := port.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestOpenFailures(t *testing.T) {
	cases := []struct {
		name  string
		model string
		ops   []i2ctest.IO
		want  error
	}{
		{"no device (NAK)", "", nil, sensors.ErrNoResponse},
		{"garbage chip id", "", []i2ctest.IO{{Addr: 0x76, W: []byte{0xD0}, R: []byte{0xFF}}}, sensors.ErrWrongDevice},
		{"NAK during calibration", "", bme280Init(0x76)[:1], sensors.ErrNoResponse},
		{"BMP280 where a BME280 is configured", BME280, bmp280Init(0x76), sensors.ErrWrongDevice},
	}
	for _, c := range cases {
		bus := &i2ctest.Playback{Ops: c.ops, DontPanic: true}
		_, err := NewI2C(bus, 0x76, opts(c.model))
		var de *sensors.DeviceError
		if !errors.Is(err, c.want) || !errors.As(err, &de) || de.Op != "open" {
			t.Errorf("%s: got %v, want a DeviceError wrapping %v", c.name, err, c.want)
		}
	}
}

func TestReadFailures(t *testing.T) {
	// The device stops answering after start-up.
	bus := &i2ctest.Playback{Ops: bme280Init(0x76), DontPanic: true}
	s, err := NewI2C(bus, 0x76, opts(BME280))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Read(context.Background()); !errors.Is(err, sensors.ErrNoResponse) {
		t.Fatalf("read from silent device: %v", err)
	}
	// The device answers garbage: all-zero result registers are not a
	// temperature a BME280 can report.
	bus = &i2ctest.Playback{Ops: append(bme280Init(0x76), i2ctest.IO{Addr: 0x76, W: []byte{0xF7}, R: make([]byte, 8)}), DontPanic: true}
	if s, err = NewI2C(bus, 0x76, opts(BME280)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Read(context.Background()); !errors.Is(err, sensors.ErrBadReading) {
		t.Fatalf("read of garbage: %v", err)
	}
}

func newEnv(i2cBus i2c.Bus, spiPort spi.Port) (*sensors.Env, *sensortest.FakeClock) {
	clock := sensortest.NewFakeClock(time.Unix(1000, 0))
	b := &sensortest.Buses{I2C: map[string]i2c.Bus{}, SPI: map[string]spi.Port{}}
	if i2cBus != nil {
		b.I2C["I2C1"] = i2cBus
	}
	if spiPort != nil {
		b.SPI["SPI0.0"] = spiPort
	}
	return &sensors.Env{Buses: b, Clock: clock}, clock
}

func TestRegistryOpen(t *testing.T) {
	// rate 10 Hz: standby 100 ms − 26 ms → 62.5 ms (001); config 001 001 00.
	ops := bme280Init(0x77)
	ops[3].W = []byte{0xF4, 0x6C, 0xF2, 0x03, 0xF5, 0x24, 0xF4, 0x6F}
	for range 3 {
		ops = append(ops, i2ctest.IO{Addr: 0x77, W: []byte{0xF7}, R: measured})
	}
	ops = append(ops, i2ctest.IO{Addr: 0x77, W: []byte{0xF4, 0x6C}})
	bus := &i2ctest.Playback{Ops: ops}
	env, _ := newEnv(bus, nil)
	src, err := sensors.OpenWith(sensors.Config{Kind: "bme280", Name: "env", Bus: "I2C1", Address: 0x77, Rate: 10}, env)
	if err != nil {
		t.Fatal(err)
	}
	var times []time.Time
	for range 3 {
		r, err := src.Read(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		times = append(times, r.Time)
	}
	if d := times[2].Sub(times[1]); d != 100*time.Millisecond || times[1].Sub(times[0]) != d {
		t.Fatalf("sample times %v, want 100 ms apart", times)
	}
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	if err := bus.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestRegistryOpenSPIAndBadBus(t *testing.T) {
	env, _ := newEnv(nil, nil)
	_, err := sensors.OpenWith(sensors.Config{Kind: "bmp280", Bus: "SPI0.1"}, env)
	var de *sensors.DeviceError
	if !errors.As(err, &de) || de.Sensor != "bmp280" {
		t.Fatalf("missing SPI port: %v", err)
	}
}

func TestRetryingReportsDeadDeviceAndRecovery(t *testing.T) {
	bus := &i2ctest.Playback{DontPanic: true} // nothing answers
	env, clock := newEnv(bus, nil)
	src, err := sensors.OpenRetrying(sensors.Config{Kind: "bme280", Bus: "I2C1"}, env, &sensors.RetryPolicy{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	h := src.Health()
	if h.State != sensors.StateFailed || !strings.Contains(h.LastError, "did not respond") || h.Failures != 1 {
		t.Fatalf("health after open of dead device: %+v", h)
	}
	if len(src.Channels()) != 3 {
		t.Fatalf("channels unknown while down: %v", src.Channels())
	}
	// The device comes back: the next Read waits out the backoff, reopens
	// and reads.
	bus.Lock()
	bus.Ops = append(bme280Init(0x76), i2ctest.IO{Addr: 0x76, W: []byte{0xF7}, R: measured})
	bus.Count = 0
	bus.Unlock()
	start := clock.Now()
	r, err := src.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !near(r.Values[0], wantCelsius) {
		t.Fatalf("read %v", r.Values)
	}
	if waited := clock.Now().Sub(start); waited < time.Second {
		t.Fatalf("reopened after %v, want the 1 s backoff", waited)
	}
	if h := src.Health(); h.State != sensors.StateOK || h.Failures != 0 {
		t.Fatalf("health after recovery: %+v", h)
	}
}

func TestPrepare(t *testing.T) {
	cases := []struct {
		cfg   sensors.Config
		field string
	}{
		{sensors.Config{Kind: "bme280", Address: 0x50}, "address"},
		{sensors.Config{Kind: "bme280", Bus: "SPI0.0", Address: 0x76}, "address"},
		{sensors.Config{Kind: "bme280", Oversampling: 3}, "oversampling"},
		{sensors.Config{Kind: "bmp280", Filter: 1}, "filter"},
		{sensors.Config{Kind: "bme280", Oversampling: 16, Rate: 50}, "rate"},
		{sensors.Config{Kind: "bme280", Pins: []string{"GPIO4"}}, "pins"},
	}
	for _, c := range cases {
		err := c.cfg.Validate()
		var ce *sensors.ConfigError
		if !errors.As(err, &ce) || ce.Field != c.field {
			t.Errorf("%+v: got %v, want an error on field %s", c.cfg, err, c.field)
		}
	}
	eff, err := sensors.Config{Kind: "bme280"}.Effective()
	if err != nil || eff.Address != 0x76 || eff.Rate != 1 || eff.Oversampling != 4 || eff.Filter != 2 || eff.Name != "bme280" {
		t.Fatalf("defaults %+v %v", eff, err)
	}
}

func TestSPIOpenFailures(t *testing.T) {
	// SPI has no acknowledge: a port with nothing wired reads 0xFF (or
	// 0x00), which is "did not respond", while another chip's ID is
	// "unexpected device". A transfer error is "did not respond" too.
	cases := []struct {
		name string
		ops  []conntest.IO
		want error
	}{
		{"nothing on MISO (0xFF)", []conntest.IO{{W: []byte{0xD0, 0x00}, R: []byte{0xFF, 0xFF}}}, sensors.ErrNoResponse},
		{"nothing on MISO (0x00)", []conntest.IO{{W: []byte{0xD0, 0x00}, R: []byte{0x00, 0x00}}}, sensors.ErrNoResponse},
		{"garbage chip id", []conntest.IO{{W: []byte{0xD0, 0x00}, R: []byte{0x00, 0x42}}}, sensors.ErrWrongDevice},
		{"transfer fails", nil, sensors.ErrNoResponse},
	}
	for _, c := range cases {
		port := &spitest.Playback{Playback: conntest.Playback{Ops: c.ops, DontPanic: true}}
		_, err := NewSPI(port, opts(""))
		var de *sensors.DeviceError
		if !errors.Is(err, c.want) || !errors.As(err, &de) || de.Op != "open" {
			t.Errorf("%s: got %v, want a DeviceError wrapping %v", c.name, err, c.want)
		}
	}
}

func TestRetryingGarbageIsAFailure(t *testing.T) {
	// A device that keeps answering garbage is retried, then reported
	// failed with the reason, and the agent's read loop goes on.
	garbage := i2ctest.IO{Addr: 0x76, W: []byte{0xF7}, R: make([]byte, 8)}
	ops := append(bme280Init(0x76), garbage, garbage, garbage, sleepOp)
	bus := &i2ctest.Playback{Ops: ops, DontPanic: true}
	env, clock := newEnv(bus, nil)
	src, err := sensors.OpenRetrying(sensors.Config{Kind: "bme280", Bus: "I2C1"}, env, &sensors.RetryPolicy{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if h := src.Health(); h.State != sensors.StateOK {
		t.Fatalf("health after open: %+v", h)
	}
	if _, err := src.Read(context.Background()); !errors.Is(err, sensors.ErrBadReading) {
		t.Fatalf("read: %v", err)
	}
	h := src.Health()
	if h.State != sensors.StateFailed || h.Failures != 1 || !strings.Contains(h.LastError, "implausible reading") || h.NextRetry.IsZero() {
		t.Fatalf("health after garbage: %+v", h)
	}
	// 3 result reads, then the chip was put to sleep and released.
	if bus.Count != len(ops) {
		t.Fatalf("%d of %d transfers happened", bus.Count, len(ops))
	}
}
