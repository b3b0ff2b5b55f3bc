// Package bmxx80 reads Bosch BME280 (temperature, pressure, humidity) and
// BMP280 (temperature, pressure) sensors over I²C or SPI through periph's
// bmxx80 driver, as a sensors.Source. It registers the kinds "bme280" and
// "bmp280".
//
// The device runs in normal mode (periph's Opts.Filter and Opts.Standby
// set), measuring on its own every 1/rate seconds, so that a Read is one
// burst read of the result registers: no sleeping and no status polling in
// the read path, which therefore cannot hang on a device whose status
// register is stuck.
package bmxx80

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"periph.io/x/conn/v3/i2c"
	"periph.io/x/conn/v3/physic"
	"periph.io/x/conn/v3/spi"
	bmx "periph.io/x/devices/v3/bmxx80"

	"github.com/trit-iot/trit/sensors"
)

// Models this package accepts.
const (
	BME280 = "BME280"
	BMP280 = "BMP280"
)

// Plausible ranges: the datasheet's operating range, with a margin.
const (
	minCelsius, maxCelsius = -45.0, 90.0
	minHPa, maxHPa         = 250.0, 1150.0
)

// Options configures a Source. Zero fields mean defaults; a nil *Options
// means all defaults.
type Options struct {
	Name         string        // sensor name and channel prefix (default: the lower-case model)
	Model        string        // BME280 or BMP280: the chip expected; "" accepts both
	Oversampling int           // 1, 2, 4, 8 or 16 (default 4) for every measurement
	Filter       int           // IIR filter coefficient 2, 4, 8 or 16 (default 2)
	Rate         float64       // samples per second the caller will read (default 1)
	Clock        sensors.Clock // for timestamps and the first measurement's wait
}

// Source is a BME280 or BMP280 as a sensors.Source. Its channels are
// <name>.temperature (°C), <name>.pressure (hPa) and, on a BME280,
// <name>.humidity (%RH).
type Source struct {
	dev      *bmx.Dev
	name     string
	model    string
	channels []string
	clock    sensors.Clock
	sleep    func() error // puts the chip in sleep mode
	closed   bool
}

// NewI2C initialises the device at addr (0x76 or 0x77) on bus b.
func NewI2C(b i2c.Bus, addr uint16, o *Options) (*Source, error) {
	opts, err := o.periph()
	if err != nil {
		return nil, err
	}
	w := &watchBus{Bus: b}
	dev, err := bmx.NewI2C(w, addr, opts)
	sleep := func(ctrl byte) error { return b.Tx(addr, []byte{regCtrlMeas, ctrl}, nil) }
	return finish(dev, err, w.err, sleep, o, opts)
}

// NewSPI initialises the device on SPI port p.
func NewSPI(p spi.Port, o *Options) (*Source, error) {
	opts, err := o.periph()
	if err != nil {
		return nil, err
	}
	w := &watchPort{Port: p}
	dev, err := bmx.NewSPI(w, opts)
	if err != nil && w.err == nil && w.chipIDRead && (w.chipID == 0x00 || w.chipID == 0xFF) {
		// SPI has no acknowledge: with no chip selected, MISO floats or is
		// pulled to one level and every register reads 0x00 or 0xFF.
		err = fmt.Errorf("chip ID reads %#02x: no device drives MISO (check the wiring and the chip select of %s)", w.chipID, p)
		w.err = err
	}
	sleep := func(ctrl byte) error {
		if w.conn == nil {
			return nil
		}
		// Bit 7 clear selects a write on SPI.
		return w.conn.Tx([]byte{regCtrlMeas &^ 0x80, ctrl}, nil)
	}
	return finish(dev, err, w.err, sleep, o, opts)
}

// periph returns periph's options for o, validated.
func (o *Options) periph() (*bmx.Opts, error) {
	var c Options
	if o != nil {
		c = *o
	}
	os, err := oversampling(orInt(c.Oversampling, 4))
	if err != nil {
		return nil, err
	}
	f, err := filter(orInt(c.Filter, 2))
	if err != nil {
		return nil, err
	}
	rate := c.Rate
	if rate <= 0 {
		rate = 1
	}
	// Standby 0 would leave periph in forced mode; keep it positive.
	standby := max(time.Duration(float64(time.Second)/rate)-measureTime(orInt(c.Oversampling, 4)), time.Microsecond)
	return &bmx.Opts{Temperature: os, Pressure: os, Humidity: os, Filter: f, Standby: standby}, nil
}

// finish classifies a constructor failure and builds the Source.
func finish(dev *bmx.Dev, err, ioErr error, sleep func(byte) error, o *Options, opts *bmx.Opts) (*Source, error) {
	var c Options
	if o != nil {
		c = *o
	}
	name := c.Name
	if name == "" {
		name = strings.ToLower(orStr(c.Model, BME280))
	}
	if err != nil {
		if ioErr != nil {
			return nil, sensors.NewDeviceError(name, "open", sensors.ErrNoResponse, err)
		}
		return nil, sensors.NewDeviceError(name, "open", sensors.ErrWrongDevice, err)
	}
	model, _, _ := strings.Cut(dev.String(), "{")
	if model != BME280 && model != BMP280 || c.Model != "" && model != c.Model {
		dev.Halt()
		want := orStr(c.Model, BME280+" or "+BMP280)
		return nil, sensors.NewDeviceError(name, "open", sensors.ErrWrongDevice, fmt.Errorf("found a %s, configured for a %s", model, want))
	}
	ctrl := byte(opts.Temperature)<<5 | byte(opts.Pressure)<<2 // mode bits 00: sleep
	s := &Source{dev: dev, name: name, model: model, clock: c.Clock, channels: Channels(name, model),
		sleep: func() error { return sleep(ctrl) }}
	if s.clock == nil {
		s.clock = sensors.SystemClock
	}
	// In normal mode the first result is ready one measurement after start.
	s.clock.Sleep(context.Background(), measureTime(orInt(c.Oversampling, 4)))
	return s, nil
}

// Channels returns the channel names of a source named name for model.
func Channels(name, model string) []string {
	ch := []string{name + ".temperature", name + ".pressure"}
	if model == BME280 {
		ch = append(ch, name+".humidity")
	}
	return ch
}

// Model returns the detected chip, BME280 or BMP280.
func (s *Source) Model() string { return s.model }

// Channels implements sensors.Source.
func (s *Source) Channels() []string { return s.channels }

// Read implements sensors.Source.
func (s *Source) Read(ctx context.Context) (sensors.Reading, error) {
	if s.closed {
		return sensors.Reading{}, sensors.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return sensors.Reading{}, err
	}
	var e physic.Env
	if err := s.dev.Sense(&e); err != nil {
		return sensors.Reading{}, sensors.NewDeviceError(s.name, "read", sensors.ErrNoResponse, err)
	}
	t := s.clock.Now()
	celsius := float64(e.Temperature-physic.ZeroCelsius) / float64(physic.Celsius)
	hPa := float64(e.Pressure) / float64(100*physic.Pascal)
	if celsius < minCelsius || celsius > maxCelsius || hPa < minHPa || hPa > maxHPa {
		return sensors.Reading{}, sensors.NewDeviceError(s.name, "read", sensors.ErrBadReading,
			fmt.Errorf("%.2f °C, %.2f hPa is outside the %s's range", celsius, hPa, s.model))
	}
	v := []float64{celsius, hPa}
	if s.model == BME280 {
		v = append(v, float64(e.Humidity)/float64(physic.PercentRH))
	}
	return sensors.Reading{Time: t, Values: v}, nil
}

// Close puts the chip in sleep mode. It does not close the bus.
func (s *Source) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	// periph's Halt only stops its SenseContinuous goroutine; the chip,
	// running in normal mode, is put to sleep here by writing ctrl_meas.
	return errors.Join(s.dev.Halt(), s.sleep())
}

// regCtrlMeas is the ctrl_meas register (datasheet 5.4.5): osrs_t, osrs_p,
// mode; mode 00 is sleep.
const regCtrlMeas = 0xF4

// measureTime is the datasheet's typical measurement time (appendix B) with
// all three measurements at oversampling os.
func measureTime(os int) time.Duration {
	return time.Duration(1000+3*(2000*os)+2*500) * time.Microsecond
}

func oversampling(v int) (bmx.Oversampling, error) {
	switch v {
	case 1:
		return bmx.O1x, nil
	case 2:
		return bmx.O2x, nil
	case 4:
		return bmx.O4x, nil
	case 8:
		return bmx.O8x, nil
	case 16:
		return bmx.O16x, nil
	}
	return 0, sensors.FieldError("oversampling", "%d must be 1, 2, 4, 8 or 16", v)
}

func filter(v int) (bmx.Filter, error) {
	switch v {
	case 2:
		return bmx.F2, nil
	case 4:
		return bmx.F4, nil
	case 8:
		return bmx.F8, nil
	case 16:
		return bmx.F16, nil
	}
	return 0, sensors.FieldError("filter", "%d must be 2, 4, 8 or 16 (the chip runs in normal mode, which needs the IIR filter)", v)
}

func orInt(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

func orStr(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// watchBus remembers whether any bus transfer failed, to tell a device that
// does not answer from one that answers garbage: periph's errors do not
// wrap their cause.
type watchBus struct {
	i2c.Bus
	err error
}

func (w *watchBus) Tx(addr uint16, wr, r []byte) error {
	err := w.Bus.Tx(addr, wr, r)
	if err != nil {
		w.err = err
	}
	return err
}

// watchPort is watchBus for SPI. It also keeps the chip ID read, since on
// SPI a missing device does not fail transfers but reads as 0x00 or 0xFF.
type watchPort struct {
	spi.Port
	err        error
	conn       spi.Conn // the connection periph made, for Close
	chipID     byte
	chipIDRead bool
}

func (w *watchPort) Connect(f physic.Frequency, mode spi.Mode, bits int) (spi.Conn, error) {
	c, err := w.Port.Connect(f, mode, bits)
	if err != nil {
		w.err = err
		return nil, err
	}
	w.conn = &watchConn{Conn: c, w: w}
	return w.conn, nil
}

type watchConn struct {
	spi.Conn
	w *watchPort
}

func (c *watchConn) Tx(wr, r []byte) error {
	err := c.Conn.Tx(wr, r)
	if err != nil {
		c.w.err = err
	} else if len(wr) == 2 && wr[0] == regChipID && len(r) == 2 && !c.w.chipIDRead {
		c.w.chipID, c.w.chipIDRead = r[1], true
	}
	return err
}
