// Package sensortest provides fakes for testing code that uses sensors: a
// virtual-time clock, and a Buses that hands out periph's fakes
// (i2ctest.Playback, spitest.Playback, gpiotest.Pin) by name.
package sensortest

import (
	"context"
	"fmt"
	"sync"
	"time"

	"periph.io/x/conn/v3/gpio"
	"periph.io/x/conn/v3/i2c"
	"periph.io/x/conn/v3/physic"
	"periph.io/x/conn/v3/spi"
)

// FakeClock is a clock in virtual time: Sleep advances the time instantly.
// It is safe for concurrent use.
type FakeClock struct {
	mu    sync.Mutex
	now   time.Time
	slept []time.Duration
}

// NewFakeClock returns a FakeClock starting at t.
func NewFakeClock(t time.Time) *FakeClock { return &FakeClock{now: t} }

// Now returns the virtual time.
func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Sleep advances the virtual time by d (if positive) unless ctx is done.
func (c *FakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if d > 0 {
		c.now = c.now.Add(d)
		c.slept = append(c.slept, d)
	}
	return nil
}

// Advance moves the virtual time forward by d.
func (c *FakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Slept returns the positive durations passed to Sleep so far, in order.
func (c *FakeClock) Slept() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.slept...)
}

// Buses is a sensors.Buses serving fixed fakes by name. Missing names fail
// like a missing bus. Each bus is handed out as is, so a test can inspect
// its playback afterwards; closing it through the source is a no-op.
type Buses struct {
	I2C  map[string]i2c.Bus
	SPI  map[string]spi.Port
	Pins map[string]gpio.PinIO // e.g. *gpiotest.Pin
}

// OpenI2C implements sensors.Buses.
func (b *Buses) OpenI2C(name string) (i2c.BusCloser, error) {
	if bus, ok := b.I2C[name]; ok {
		return nopI2C{bus}, nil
	}
	return nil, fmt.Errorf("sensortest: no I²C bus %q", name)
}

// OpenSPI implements sensors.Buses.
func (b *Buses) OpenSPI(name string) (spi.PortCloser, error) {
	if p, ok := b.SPI[name]; ok {
		return nopSPI{p}, nil
	}
	return nil, fmt.Errorf("sensortest: no SPI port %q", name)
}

// Pin implements sensors.Buses.
func (b *Buses) Pin(name string) (gpio.PinIO, error) {
	if p, ok := b.Pins[name]; ok {
		return p, nil
	}
	return nil, fmt.Errorf("sensortest: no GPIO pin %q", name)
}

type nopI2C struct{ i2c.Bus }

func (nopI2C) Close() error { return nil }

type nopSPI struct{ spi.Port }

func (nopSPI) Close() error                      { return nil }
func (nopSPI) LimitSpeed(physic.Frequency) error { return nil }
