// Package sensortest provides fakes for testing code that uses sensors:
// a virtual-time clock, a GPIO pin that can be fed edges, and a Buses that
// hands out periph playback buses by name.
//
// It exists beside periph's own i2ctest/spitest; periph's gpiotest.Pin is not
// used because it pulls in a module (github.com/jonboulle/clockwork) that
// this project does not vendor.
package sensortest

import (
	"context"
	"errors"
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

// Pin is a fake GPIO input. Send levels on Edges to simulate edges; set
// InErr to make In fail like a pin without edge detection.
type Pin struct {
	N     string
	Num   int
	InErr error
	Edges chan gpio.Level

	mu    sync.Mutex
	level gpio.Level
	pull  gpio.Pull
	edge  gpio.Edge
}

// NewPin returns a pin named name with the given number.
func NewPin(name string, num int) *Pin {
	return &Pin{N: name, Num: num, Edges: make(chan gpio.Level)}
}

// String implements conn.Resource.
func (p *Pin) String() string { return fmt.Sprintf("%s(%d)", p.N, p.Num) }

// Halt implements conn.Resource.
func (p *Pin) Halt() error { return nil }

// Name implements pin.Pin.
func (p *Pin) Name() string { return p.N }

// Number implements pin.Pin.
func (p *Pin) Number() int { return p.Num }

// Function implements pin.Pin.
func (p *Pin) Function() string { return "In" }

// DefaultPull implements gpio.PinIn.
func (p *Pin) DefaultPull() gpio.Pull { return gpio.Float }

// In configures the pin; it fails with InErr if set.
func (p *Pin) In(pull gpio.Pull, edge gpio.Edge) error {
	if p.InErr != nil {
		return p.InErr
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pull, p.edge = pull, edge
	return nil
}

// Read returns the level of the last edge.
func (p *Pin) Read() gpio.Level {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.level
}

// WaitForEdge waits for a level on Edges, up to timeout (-1: forever).
func (p *Pin) WaitForEdge(timeout time.Duration) bool {
	var after <-chan time.Time
	if timeout >= 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		after = t.C
	}
	select {
	case l := <-p.Edges:
		p.mu.Lock()
		p.level = l
		p.mu.Unlock()
		return true
	case <-after:
		return false
	}
}

// Pull returns the pull set by In.
func (p *Pin) Pull() gpio.Pull {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pull
}

// Edge returns the edge set by In.
func (p *Pin) Edge() gpio.Edge {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.edge
}

// Out is not supported: the pin is an input.
func (p *Pin) Out(gpio.Level) error { return errors.New("sensortest: Pin is input only") }

// PWM is not supported.
func (p *Pin) PWM(gpio.Duty, physic.Frequency) error {
	return errors.New("sensortest: Pin is input only")
}

var _ gpio.PinIO = (*Pin)(nil)

// Buses is a sensors.Buses serving fixed fakes by name. Missing names fail
// like a missing bus. Each bus is handed out as is, so a test can inspect
// its playback afterwards; closing it through the source is a no-op.
type Buses struct {
	I2C  map[string]i2c.Bus
	SPI  map[string]spi.Port
	Pins map[string]*Pin
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
