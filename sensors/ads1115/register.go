package ads1115

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"

	"periph.io/x/conn/v3/i2c"

	"github.com/trit-iot/trit/sensors"
)

func init() {
	for _, model := range []string{ADS1115, ADS1015} {
		sensors.Register(sensors.Kind{
			Name:        strings.ToLower(model),
			Doc:         "TI " + model + " 4-input ADC (I²C 0x48..0x4B)",
			DefaultName: "adc",
			DefaultRate: 10,
			Fields:      []string{"bus", "address", "rate", "inputs", "max_volts"},
			Prepare:     func(c *sensors.Config) error { return prepare(c, model) },
			Channels:    func(c sensors.Config) ([]string, error) { return Channels(c.Name, c.Inputs), nil },
			Open:        func(c sensors.Config, env sensors.Env) (sensors.Source, error) { return open(c, env, model) },
			I2CAddrs:    []uint16{0x48, 0x49, 0x4A, 0x4B},
			DetectI2C:   detect(model),
		})
	}
}

// detect only reads: probing must not write to whatever else may answer at
// 0x48..0x4B (a TMP102, for one). With no ID register, a device that
// answers is only a candidate.
func detect(model string) func(b i2c.Bus, addr uint16) (string, bool) {
	return func(b i2c.Bus, addr uint16) (string, bool) {
		var r [2]byte
		if b.Tx(addr, []byte{regConfig}, r[:]) != nil {
			return "", false
		}
		return fmt.Sprintf("%s? (no ID register; config %#04x)", model, binary.BigEndian.Uint16(r[:])), true
	}
}

func prepare(c *sensors.Config, model string) error {
	if sensors.IsSPIBus(c.Bus) {
		return sensors.FieldError("bus", "%q is a SPI port; the %s is I²C only", c.Bus, model)
	}
	switch {
	case c.Address == 0:
		c.Address = 0x48
	case c.Address < 0x48 || c.Address > 0x4B:
		return sensors.FieldError("address", "%#x: an %s answers at 0x48..0x4B (ADDR to GND, VDD, SDA, SCL)", c.Address, model)
	}
	if len(c.Inputs) == 0 {
		c.Inputs = []string{"0"}
	}
	if err := checkInputs(c.Inputs); err != nil {
		return err
	}
	if c.MaxVolts == 0 {
		c.MaxVolts = 4.096
	}
	if math.IsNaN(c.MaxVolts) || c.MaxVolts <= 0 || c.MaxVolts > 6.144 {
		return sensors.FieldError("max_volts", "%v must be in (0, 6.144] volts (the widest gain's range)", c.MaxVolts)
	}
	if total := c.Rate * float64(len(c.Inputs)); total > MaxSamplesPerSecond[model] {
		return sensors.FieldError("rate", "%v Hz × %d inputs needs %v conversions/s; the %s does at most %v", c.Rate, len(c.Inputs), total, model, MaxSamplesPerSecond[model])
	}
	return nil
}

func open(c sensors.Config, env sensors.Env, model string) (sensors.Source, error) {
	b, err := env.Buses.OpenI2C(c.Bus)
	if err != nil {
		return nil, sensors.NewDeviceError(c.Name, "open", nil, err)
	}
	src, err := New(b, &Options{Name: c.Name, Model: model, Address: uint16(c.Address), Inputs: c.Inputs,
		MaxVolts: c.MaxVolts, Rate: c.Rate, Clock: env.Clock})
	if err != nil {
		b.Close()
		return nil, fmt.Errorf("%w (bus %q)", err, c.Bus)
	}
	return sensors.Paced(sensors.WithClosers(src, b), c.Rate, env.Clock), nil
}
