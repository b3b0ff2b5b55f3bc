package adxl345

import (
	"fmt"

	"periph.io/x/conn/v3/i2c"
	"periph.io/x/conn/v3/spi"
	adxl "periph.io/x/devices/v3/adxl345"

	"github.com/trit-iot/trit/sensors"
)

func init() {
	sensors.Register(sensors.Kind{
		Name:        "adxl345",
		Doc:         "Analog Devices ADXL345 3-axis accelerometer (I²C 0x53/0x1D or SPI)",
		DefaultName: "accel",
		DefaultRate: 100,
		Fields:      []string{"bus", "address", "rate", "range_g"},
		Prepare:     prepare,
		Channels:    func(c sensors.Config) ([]string, error) { return Channels(c.Name), nil },
		Open:        open,
		I2CAddrs:    []uint16{0x53, 0x1D},
		DetectI2C: func(b i2c.Bus, addr uint16) (string, bool) {
			var id [1]byte
			return "ADXL345", b.Tx(addr, []byte{adxl.DeviceID}, id[:]) == nil && id[0] == DeviceID
		},
		DetectSPI: func(p spi.Port) (string, bool) {
			c, err := p.Connect(adxl.SpiFrequency, adxl.SpiMode, adxl.SpiBits)
			if err != nil {
				return "", false
			}
			var id [1]byte
			return "ADXL345", (&spiRegs{c: c}).read(adxl.DeviceID, id[:]) == nil && id[0] == DeviceID
		},
	})
}

func prepare(c *sensors.Config) error {
	if c.RangeG == 0 {
		c.RangeG = 16
	}
	if _, err := rangeBits(c.RangeG); err != nil {
		return err
	}
	if _, err := rateCode(c.Rate); err != nil {
		return err
	}
	if sensors.IsSPIBus(c.Bus) {
		if c.Address != 0 {
			return sensors.FieldError("address", "%#x given for SPI bus %q; SPI devices are selected by chip select, not address", c.Address, c.Bus)
		}
		return nil
	}
	switch c.Address {
	case 0:
		c.Address = 0x53
	case 0x53, 0x1D:
	default:
		return sensors.FieldError("address", "%#x: an ADXL345 answers at 0x53 (ALT ADDRESS to GND) or 0x1D (to VDD)", c.Address)
	}
	return nil
}

func open(c sensors.Config, env sensors.Env) (sensors.Source, error) {
	o := &Options{Name: c.Name, RangeG: c.RangeG, Rate: c.Rate, Clock: env.Clock}
	if sensors.IsSPIBus(c.Bus) {
		p, err := env.Buses.OpenSPI(c.Bus)
		if err != nil {
			return nil, sensors.NewDeviceError(c.Name, "open", nil, err)
		}
		src, err := NewSPI(p, o)
		if err != nil {
			p.Close()
			return nil, fmt.Errorf("%w (bus %q)", err, c.Bus)
		}
		return sensors.Paced(sensors.WithClosers(src, p), c.Rate, env.Clock), nil
	}
	b, err := env.Buses.OpenI2C(c.Bus)
	if err != nil {
		return nil, sensors.NewDeviceError(c.Name, "open", nil, err)
	}
	src, err := NewI2C(b, uint16(c.Address), o)
	if err != nil {
		b.Close()
		return nil, fmt.Errorf("%w (bus %q)", err, c.Bus)
	}
	return sensors.Paced(sensors.WithClosers(src, b), c.Rate, env.Clock), nil
}
