package sensors

import (
	"fmt"
	"io"
	"strings"

	"periph.io/x/conn/v3/driver/driverreg"
	"periph.io/x/conn/v3/gpio/gpioreg"
	"periph.io/x/conn/v3/i2c"
	"periph.io/x/conn/v3/i2c/i2creg"
	"periph.io/x/conn/v3/spi"
	"periph.io/x/conn/v3/spi/spireg"
)

// Probe initialises periph's host drivers and writes to w what this machine
// offers: the host drivers (and why some failed: often a missing group
// membership), each I²C bus with the devices found at the addresses of the
// registered kinds, each SPI port with the device identified on it, and the
// GPIO pins. Detection only reads registers.
func Probe(w io.Writer) error {
	state, err := initHost()
	if err != nil {
		return err
	}
	inv := inventory{state: state}
	for _, r := range i2creg.All() {
		inv.i2c = append(inv.i2c, busRef[i2c.BusCloser]{name: refName(r.Name, r.Aliases), open: r.Open})
	}
	for _, r := range spireg.All() {
		inv.spi = append(inv.spi, busRef[spi.PortCloser]{name: refName(r.Name, r.Aliases), open: r.Open})
	}
	for _, p := range gpioreg.All() {
		inv.pins = append(inv.pins, p.Name())
	}
	return probe(w, inv)
}

// inventory is what Probe found, separated from periph's registries so the
// report can be tested with fakes.
type inventory struct {
	state *driverreg.State
	i2c   []busRef[i2c.BusCloser]
	spi   []busRef[spi.PortCloser]
	pins  []string
}

type busRef[T io.Closer] struct {
	name string
	open func() (T, error)
}

func probe(w io.Writer, inv inventory) error {
	p := &errWriter{w: w}
	if s := inv.state; s != nil {
		var loaded, failed []string
		for _, d := range s.Loaded {
			loaded = append(loaded, d.String())
		}
		for _, f := range s.Failed {
			failed = append(failed, fmt.Sprintf("%s (%v)", f.D, f.Err))
		}
		p.printf("periph host drivers: %s\n", orNone(strings.Join(loaded, ", ")))
		if len(failed) > 0 {
			p.printf("  failed: %s\n", strings.Join(failed, "; "))
		}
	}
	kinds := allKinds()

	p.printf("I²C buses:")
	if len(inv.i2c) == 0 {
		p.printf(" none (enable I²C: raspi-config, or dtparam=i2c_arm=on in config.txt; user in group i2c)\n")
	} else {
		p.printf("\n")
	}
	for _, ref := range inv.i2c {
		p.printf("  %s\n", ref.name)
		bus, err := ref.open()
		if err != nil {
			p.printf("    cannot open: %v\n", err)
			continue
		}
		found := 0
		for _, k := range kinds {
			if k.DetectI2C == nil {
				continue
			}
			for _, addr := range k.I2CAddrs {
				if model, ok := k.DetectI2C(bus, addr); ok {
					p.printf("    %#02x  %-40s kind %s\n", addr, model, k.Name)
					found++
				}
			}
		}
		if found == 0 {
			p.printf("    no known device answers\n")
		}
		bus.Close()
	}

	p.printf("SPI ports:")
	if len(inv.spi) == 0 {
		p.printf(" none (enable SPI: raspi-config, or dtparam=spi=on in config.txt; user in group spi)\n")
	} else {
		p.printf("\n")
	}
	for _, ref := range inv.spi {
		p.printf("  %s\n", ref.name)
		found := 0
		for _, k := range kinds {
			if k.DetectSPI == nil {
				continue
			}
			// A port accepts one Connect per handle: open it per attempt.
			port, err := ref.open()
			if err != nil {
				p.printf("    cannot open: %v\n", err)
				break
			}
			if model, ok := k.DetectSPI(port); ok {
				p.printf("    %-46s kind %s\n", model, k.Name)
				found++
			}
			port.Close()
		}
		if found == 0 {
			p.printf("    no known device answers\n")
		}
	}

	p.printf("GPIO pins: %d", len(inv.pins))
	if len(inv.pins) == 0 {
		p.printf(" (user in group gpio?)")
	}
	p.printf("\n")
	for i := 0; i < len(inv.pins); i += 12 {
		p.printf("  %s\n", strings.Join(inv.pins[i:min(i+12, len(inv.pins))], " "))
	}
	return p.err
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// errWriter keeps the first write error, so report code stays linear.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, args...)
	}
}
