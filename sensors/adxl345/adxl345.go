// Package adxl345 reads the Analog Devices ADXL345 3-axis accelerometer over
// I²C or SPI as a sensors.Source. It registers the kind "adxl345".
//
// It uses periph's conn (i2c.Dev, spi.Port) and the register map and SPI
// settings of periph's adxl345 package, but not that package's Dev: in
// periph.io/x/devices/v3 v3.7.4, Dev.Update discards bus errors (so a dead
// device reads as zeros) and assembles each axis from two 2-byte SPI
// transfers in a way that drops the high byte, and its reads set the SPI
// read bit on I²C too. Here the three axes are one 6-byte burst read
// (datasheet: "multiple-byte read ... to prevent a change in data between
// reads").
package adxl345

import (
	"context"
	"encoding/binary"
	"fmt"

	"periph.io/x/conn/v3/i2c"
	"periph.io/x/conn/v3/spi"
	adxl "periph.io/x/devices/v3/adxl345"

	"github.com/trit-iot/trit/sensors"
)

// DeviceID is the fixed content of register DEVID.
const DeviceID = adxl.Adxl345

// Register bits (datasheet, register definitions).
const (
	powerMeasure = 0x08      // POWER_CTL: measurement mode
	fullRes      = 0x08      // DATA_FORMAT: 4 mg/LSB at every range
	spiRead      = 0x80      // SPI: first byte bit 7, read
	spiMulti     = 0x40      // SPI: first byte bit 6, multiple bytes
	gPerLSB      = 1.0 / 256 // full resolution scale (3.9 mg/LSB)
)

// Options configures a Source. Zero fields mean defaults; a nil *Options
// means all defaults.
type Options struct {
	Name   string        // sensor name and channel prefix (default "accel")
	RangeG int           // ±2, 4, 8 or 16 g (default 16; full resolution keeps 4 mg/LSB at every range)
	Rate   float64       // samples per second the caller will read; picks the output data rate (default 100)
	Clock  sensors.Clock // for timestamps
}

func (o *Options) orDefaults() Options {
	var c Options
	if o != nil {
		c = *o
	}
	if c.Name == "" {
		c.Name = "accel"
	}
	if c.RangeG == 0 {
		c.RangeG = 16
	}
	if c.Rate <= 0 {
		c.Rate = 100
	}
	if c.Clock == nil {
		c.Clock = sensors.SystemClock
	}
	return c
}

// Source is an ADXL345 as a sensors.Source with channels <name>.x,
// <name>.y and <name>.z in g.
type Source struct {
	regs     regs
	name     string
	limit    int16 // largest |raw| the range allows
	channels []string
	clock    sensors.Clock
	closed   bool
}

// NewI2C initialises the device at addr (0x53 or 0x1D) on b.
func NewI2C(b i2c.Bus, addr uint16, o *Options) (*Source, error) {
	return newSource(&i2cRegs{dev: &i2c.Dev{Bus: b, Addr: addr}}, o)
}

// NewSPI initialises the device on SPI port p (mode 3).
func NewSPI(p spi.Port, o *Options) (*Source, error) {
	c, err := p.Connect(adxl.SpiFrequency, adxl.SpiMode, adxl.SpiBits)
	if err != nil {
		return nil, sensors.NewDeviceError(o.orDefaults().Name, "open", nil, err)
	}
	return newSource(&spiRegs{c: c}, o)
}

func newSource(r regs, o *Options) (*Source, error) {
	c := o.orDefaults()
	fail := func(sentinel, err error) (*Source, error) {
		return nil, sensors.NewDeviceError(c.Name, "open", sentinel, err)
	}
	rangeBits, err := rangeBits(c.RangeG)
	if err != nil {
		return fail(nil, err)
	}
	odr, err := rateCode(c.Rate)
	if err != nil {
		return fail(nil, err)
	}
	var id [1]byte
	if err := r.read(adxl.DeviceID, id[:]); err != nil {
		return fail(sensors.ErrNoResponse, err)
	}
	if _, onSPI := r.(*spiRegs); onSPI && (id[0] == 0x00 || id[0] == 0xFF) {
		// SPI has no acknowledge: with no chip selected, MISO floats or is
		// pulled to one level and every register reads 0x00 or 0xFF.
		return fail(sensors.ErrNoResponse, fmt.Errorf("DEVID reads %#02x: no device drives MISO (check the wiring and the chip select)", id[0]))
	}
	if id[0] != DeviceID {
		return fail(sensors.ErrWrongDevice, fmt.Errorf("DEVID reads %#02x, an ADXL345 has %#02x", id[0], DeviceID))
	}
	// Configure in standby, then start measuring.
	for _, w := range [][2]byte{
		{adxl.PowerCtl, 0},
		{adxl.BwRate, odr},
		{adxl.DataFormat, fullRes | rangeBits},
		{adxl.PowerCtl, powerMeasure},
	} {
		if err := r.write(w[0], w[1]); err != nil {
			return fail(sensors.ErrNoResponse, err)
		}
	}
	return &Source{regs: r, name: c.Name, limit: int16(256 * c.RangeG), clock: c.Clock, channels: Channels(c.Name)}, nil
}

// Channels returns the channel names of a source named name.
func Channels(name string) []string {
	return []string{name + ".x", name + ".y", name + ".z"}
}

// Channels implements sensors.Source.
func (s *Source) Channels() []string { return s.channels }

// Read implements sensors.Source: one burst read of DATAX0..DATAZ1.
func (s *Source) Read(ctx context.Context) (sensors.Reading, error) {
	if s.closed {
		return sensors.Reading{}, sensors.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return sensors.Reading{}, err
	}
	var b [6]byte
	if err := s.regs.read(adxl.DataX0, b[:]); err != nil {
		return sensors.Reading{}, sensors.NewDeviceError(s.name, "read", sensors.ErrNoResponse, err)
	}
	t := s.clock.Now()
	v := make([]float64, 3)
	for i := range v {
		raw := int16(binary.LittleEndian.Uint16(b[2*i:]))
		// Full resolution output is sign-extended from 10..13 bits.
		if raw < -s.limit || raw >= s.limit {
			return sensors.Reading{}, sensors.NewDeviceError(s.name, "read", sensors.ErrBadReading,
				fmt.Errorf("%s raw %d is outside ±%d at this range", s.channels[i], raw, s.limit))
		}
		v[i] = float64(raw) * gPerLSB
	}
	return sensors.Reading{Time: t, Values: v}, nil
}

// Close puts the device in standby. It does not close the bus.
func (s *Source) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	return s.regs.write(adxl.PowerCtl, 0)
}

func rangeBits(g int) (byte, error) {
	switch g {
	case 2:
		return byte(adxl.S2G), nil
	case 4:
		return byte(adxl.S4G), nil
	case 8:
		return byte(adxl.S8G), nil
	case 16:
		return byte(adxl.S16G), nil
	}
	return 0, sensors.FieldError("range_g", "%d must be 2, 4, 8 or 16", g)
}

// MaxRate is the fastest output data rate, in Hz.
const MaxRate = 3200

// rateCode returns the BW_RATE code of the slowest output data rate that is
// at least rate: code c gives 3200/2^(15-c) Hz.
func rateCode(rate float64) (byte, error) {
	if rate > MaxRate {
		return 0, sensors.FieldError("rate", "%v Hz is above the ADXL345's %d Hz", rate, MaxRate)
	}
	for c := range byte(16) {
		if float64(MaxRate)/float64(int(1)<<(15-c)) >= rate {
			return c, nil
		}
	}
	return 0x0F, nil
}

// regs is register access on one bus type.
type regs interface {
	read(reg byte, b []byte) error
	write(reg, v byte) error
}

type i2cRegs struct{ dev *i2c.Dev }

func (r *i2cRegs) read(reg byte, b []byte) error { return r.dev.Tx([]byte{reg}, b) }
func (r *i2cRegs) write(reg, v byte) error       { return r.dev.Tx([]byte{reg, v}, nil) }

// spiRegs frames SPI transfers: the first byte carries the read and
// multiple-byte bits and the address; data comes in the following bytes.
type spiRegs struct{ c spi.Conn }

func (r *spiRegs) read(reg byte, b []byte) error {
	w := make([]byte, len(b)+1)
	w[0] = reg | spiRead
	if len(b) > 1 {
		w[0] |= spiMulti
	}
	rd := make([]byte, len(w))
	if err := r.c.Tx(w, rd); err != nil {
		return err
	}
	copy(b, rd[1:])
	return nil
}

func (r *spiRegs) write(reg, v byte) error { return r.c.Tx([]byte{reg, v}, nil) }
