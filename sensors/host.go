package sensors

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"periph.io/x/conn/v3/driver/driverreg"
	"periph.io/x/conn/v3/gpio"
	"periph.io/x/conn/v3/gpio/gpioreg"
	"periph.io/x/conn/v3/i2c"
	"periph.io/x/conn/v3/i2c/i2creg"
	"periph.io/x/conn/v3/spi"
	"periph.io/x/conn/v3/spi/spireg"
	"periph.io/x/host/v3"
)

// Buses opens hardware by the names used in Config.Bus and Config.Pins.
type Buses interface {
	// OpenI2C opens an I²C bus: "" (the first one), "I2C1", "1" or
	// "/dev/i2c-1".
	OpenI2C(name string) (i2c.BusCloser, error)
	// OpenSPI opens a SPI port: "" (the first one), "SPI0.0" or
	// "/dev/spidev0.0".
	OpenSPI(name string) (spi.PortCloser, error)
	// Pin returns a GPIO pin by name or number: "GPIO17", "17".
	Pin(name string) (gpio.PinIO, error)
}

// IsSPIBus reports whether a Config.Bus names a SPI port rather than an I²C
// bus.
func IsSPIBus(name string) bool {
	return strings.HasPrefix(strings.ToUpper(name), "SPI") || strings.HasPrefix(name, "/dev/spidev")
}

var (
	hostOnce  sync.Once
	hostState *driverreg.State
	hostErr   error
)

// initHost runs periph's host.Init exactly once per process.
func initHost() (*driverreg.State, error) {
	hostOnce.Do(func() {
		hostState, hostErr = host.Init()
		if hostErr != nil {
			hostErr = fmt.Errorf("sensors: periph host.Init: %w", hostErr)
		}
	})
	return hostState, hostErr
}

// HostBuses returns the Buses of this machine, found through periph's
// registries (i2creg, spireg, gpioreg) after host.Init.
func HostBuses() Buses { return hostBuses{} }

type hostBuses struct{}

func (hostBuses) OpenI2C(name string) (i2c.BusCloser, error) {
	if _, err := initHost(); err != nil {
		return nil, err
	}
	b, err := i2creg.Open(name)
	if err != nil {
		return nil, fmt.Errorf("open I²C bus %q: %w (available: %s)", name, err, listI2C())
	}
	return b, nil
}

func (hostBuses) OpenSPI(name string) (spi.PortCloser, error) {
	if _, err := initHost(); err != nil {
		return nil, err
	}
	p, err := spireg.Open(name)
	if err != nil {
		return nil, fmt.Errorf("open SPI port %q: %w (available: %s)", name, err, listSPI())
	}
	return p, nil
}

func (hostBuses) Pin(name string) (gpio.PinIO, error) {
	if _, err := initHost(); err != nil {
		return nil, err
	}
	p := gpioreg.ByName(name)
	if p == nil {
		return nil, fmt.Errorf("no GPIO pin %q on this host (%d pins known; run 'trit-agent sensors probe')", name, len(gpioreg.All()))
	}
	return p, nil
}

func listI2C() string {
	var names []string
	for _, r := range i2creg.All() {
		names = append(names, refName(r.Name, r.Aliases))
	}
	if len(names) == 0 {
		return "none; is I²C enabled (raspi-config, dtparam=i2c_arm=on)?"
	}
	return strings.Join(names, ", ")
}

func listSPI() string {
	var names []string
	for _, r := range spireg.All() {
		names = append(names, refName(r.Name, r.Aliases))
	}
	if len(names) == 0 {
		return "none; is SPI enabled (raspi-config, dtparam=spi=on)?"
	}
	return strings.Join(names, ", ")
}

func refName(name string, aliases []string) string {
	if len(aliases) == 0 {
		return name
	}
	return name + " (" + strings.Join(aliases, ", ") + ")"
}

// WithClosers returns src whose Close also closes cs (typically the bus the
// source was opened on), in order, after src itself.
func WithClosers(src Source, cs ...io.Closer) Source {
	return &closers{Source: src, cs: cs}
}

type closers struct {
	Source
	cs []io.Closer
}

func (c *closers) Close() error {
	errs := []error{c.Source.Close()}
	for _, x := range c.cs {
		errs = append(errs, x.Close())
	}
	c.cs = nil
	return errors.Join(errs...)
}
