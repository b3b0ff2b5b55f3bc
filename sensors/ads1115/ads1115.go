// Package ads1115 reads the Texas Instruments ADS1115 (16-bit) and ADS1015
// (12-bit) I²C analog-to-digital converters through periph's ads1x15
// driver, as a sensors.Source. It registers the kinds "ads1115" and
// "ads1015".
//
// The chip has no identification register. At open, the config register is
// written with its power-on value and read back: a device that does not
// answer fails with ErrNoResponse, one that reads back something else with
// ErrWrongDevice. That write/read-back is the whole identity check; another
// chip that stores register 0x01 the same way would pass it.
package ads1115

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"

	"periph.io/x/conn/v3/i2c"
	"periph.io/x/conn/v3/physic"
	"periph.io/x/devices/v3/ads1x15"

	"github.com/trit-iot/trit/sensors"
)

// Models this package accepts.
const (
	ADS1115 = "ADS1115"
	ADS1015 = "ADS1015"
)

// Inputs lists the accepted input names: single-ended "0".."3" (against
// GND) and the differential pairs.
var Inputs = []string{"0", "1", "2", "3", "0-1", "0-3", "1-3", "2-3"}

var channelOf = map[string]ads1x15.Channel{
	"0": ads1x15.Channel0, "1": ads1x15.Channel1, "2": ads1x15.Channel2, "3": ads1x15.Channel3,
	"0-1": ads1x15.Channel0Minus1, "0-3": ads1x15.Channel0Minus3, "1-3": ads1x15.Channel1Minus3, "2-3": ads1x15.Channel2Minus3,
}

// MaxSamplesPerSecond is the fastest conversion rate of each model; a Read
// converts every input in turn.
var MaxSamplesPerSecond = map[string]float64{ADS1115: 860, ADS1015: 3300}

// Options configures a Source. Zero fields mean defaults; a nil *Options
// means all defaults.
type Options struct {
	Name     string        // sensor name and channel prefix (default "adc")
	Model    string        // ADS1115 (default) or ADS1015
	Address  uint16        // 0x48 (default) .. 0x4B
	Inputs   []string      // default ["0"]
	MaxVolts float64       // largest |voltage| to measure, picks the gain (default 4.096)
	Rate     float64       // Reads per second the caller will make (default 10)
	Clock    sensors.Clock // for timestamps
}

func (o *Options) orDefaults() Options {
	var c Options
	if o != nil {
		c = *o
	}
	if c.Name == "" {
		c.Name = "adc"
	}
	if c.Model == "" {
		c.Model = ADS1115
	}
	if c.Address == 0 {
		c.Address = ads1x15.I2CAddr
	}
	if len(c.Inputs) == 0 {
		c.Inputs = []string{"0"}
	}
	if c.MaxVolts == 0 {
		c.MaxVolts = 4.096
	}
	if c.Rate <= 0 {
		c.Rate = 10
	}
	if c.Clock == nil {
		c.Clock = sensors.SystemClock
	}
	return c
}

// Source is an ADS1x15 as a sensors.Source: one channel <name>.<input> per
// input, in volts.
type Source struct {
	name     string
	model    string
	pins     []ads1x15.PinADC
	channels []string
	clock    sensors.Clock
	closed   bool
}

// Config register (datasheet 8.6.3): power-on value and the bits that read
// back as written (all but OS, bit 15).
const (
	regConversion = 0x00
	regConfig     = 0x01
	configReset   = 0x0583
	configMask    = 0x7FFF
)

// New checks that an ADS1x15 answers at o.Address on b and prepares the
// inputs.
func New(b i2c.Bus, o *Options) (*Source, error) {
	c := o.orDefaults()
	if err := checkInputs(c.Inputs); err != nil {
		return nil, err
	}
	dev := &i2c.Dev{Bus: b, Addr: c.Address}
	if err := dev.Tx([]byte{regConfig, configReset >> 8, configReset & 0xFF}, nil); err != nil {
		return nil, sensors.NewDeviceError(c.Name, "open", sensors.ErrNoResponse, err)
	}
	var back [2]byte
	if err := dev.Tx([]byte{regConfig}, back[:]); err != nil {
		return nil, sensors.NewDeviceError(c.Name, "open", sensors.ErrNoResponse, err)
	}
	if v := binary.BigEndian.Uint16(back[:]); v&configMask != configReset {
		return nil, sensors.NewDeviceError(c.Name, "open", sensors.ErrWrongDevice,
			fmt.Errorf("config register reads back %#04x after writing %#04x; not an %s at %#x?", v, configReset, c.Model, c.Address))
	}

	var adc *ads1x15.Dev
	var err error
	switch c.Model {
	case ADS1115:
		adc, err = ads1x15.NewADS1115(b, &ads1x15.Opts{I2cAddress: c.Address})
	case ADS1015:
		adc, err = ads1x15.NewADS1015(b, &ads1x15.Opts{I2cAddress: c.Address})
	default:
		err = fmt.Errorf("unknown model %q (want %s or %s)", c.Model, ADS1115, ADS1015)
	}
	if err != nil {
		return nil, sensors.NewDeviceError(c.Name, "open", nil, err)
	}
	s := &Source{name: c.Name, model: c.Model, clock: c.Clock, channels: Channels(c.Name, c.Inputs)}
	// Every Read converts all inputs, so each needs rate × inputs per second.
	f := physic.Frequency(c.Rate * float64(len(c.Inputs)) * float64(physic.Hertz))
	v := physic.ElectricPotential(c.MaxVolts * float64(physic.Volt))
	for _, in := range c.Inputs {
		p, err := adc.PinForChannel(channelOf[in], v, f, ads1x15.BestQuality)
		if err != nil {
			return nil, sensors.NewDeviceError(c.Name, "open", nil, fmt.Errorf("input %s: %w", in, err))
		}
		s.pins = append(s.pins, p)
	}
	return s, nil
}

func checkInputs(inputs []string) error {
	for i, in := range inputs {
		if _, ok := channelOf[in]; !ok {
			return sensors.FieldError("inputs", "%q is not an input (want one of %v)", in, Inputs)
		}
		if slices.Contains(inputs[:i], in) {
			return sensors.FieldError("inputs", "%q is listed twice", in)
		}
	}
	return nil
}

// Channels returns the channel names of a source named name reading inputs.
func Channels(name string, inputs []string) []string {
	var ch []string
	for _, in := range inputs {
		ch = append(ch, name+"."+in)
	}
	return ch
}

// Channels implements sensors.Source.
func (s *Source) Channels() []string { return s.channels }

// Read converts every input in turn (periph waits one conversion time for
// each) and returns volts.
func (s *Source) Read(ctx context.Context) (sensors.Reading, error) {
	if s.closed {
		return sensors.Reading{}, sensors.ErrClosed
	}
	v := make([]float64, len(s.pins))
	for i, p := range s.pins {
		if err := ctx.Err(); err != nil {
			return sensors.Reading{}, err
		}
		sample, err := p.Read()
		if err != nil {
			return sensors.Reading{}, sensors.NewDeviceError(s.name, "read", sensors.ErrNoResponse, fmt.Errorf("%s: %w", s.channels[i], err))
		}
		// The ADS1015's 12-bit result is left-aligned: its low 4 bits are 0.
		if s.model == ADS1015 && sample.Raw&0xF != 0 {
			return sensors.Reading{}, sensors.NewDeviceError(s.name, "read", sensors.ErrBadReading,
				fmt.Errorf("%s: conversion %#04x has low bits set, impossible for an ADS1015", s.channels[i], uint16(sample.Raw)))
		}
		v[i] = float64(sample.V) / float64(physic.Volt)
	}
	return sensors.Reading{Time: s.clock.Now(), Values: v}, nil
}

// Close implements sensors.Source. The chip powers down by itself after
// each single-shot conversion; the bus is not closed.
func (s *Source) Close() error {
	s.closed = true
	return nil
}
