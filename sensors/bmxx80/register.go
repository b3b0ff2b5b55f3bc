package bmxx80

import (
	"fmt"
	"io"
	"time"

	"periph.io/x/conn/v3/i2c"
	"periph.io/x/conn/v3/physic"
	"periph.io/x/conn/v3/spi"

	"github.com/trit-iot/trit/sensors"
)

func init() {
	for _, model := range []string{BME280, BMP280} {
		kind := map[string]string{BME280: "bme280", BMP280: "bmp280"}[model]
		id := map[string]byte{BME280: chipIDBME280, BMP280: chipIDBMP280}[model]
		sensors.Register(sensors.Kind{
			Name:        kind,
			Doc:         "Bosch " + model + " environment sensor (I²C 0x76/0x77 or SPI)",
			DefaultName: kind,
			DefaultRate: 1,
			Fields:      []string{"bus", "address", "rate", "oversampling", "filter"},
			Prepare:     prepare,
			Channels:    func(c sensors.Config) ([]string, error) { return Channels(c.Name, model), nil },
			Open:        func(c sensors.Config, env sensors.Env) (sensors.Source, error) { return open(c, env, model) },
			I2CAddrs:    []uint16{0x76, 0x77},
			DetectI2C: func(b i2c.Bus, addr uint16) (string, bool) {
				var r [1]byte
				return model, b.Tx(addr, []byte{regChipID}, r[:]) == nil && r[0] == id
			},
			DetectSPI: func(p spi.Port) (string, bool) {
				c, err := p.Connect(10*physic.MegaHertz, spi.Mode3, 8)
				if err != nil {
					return "", false
				}
				var r [2]byte
				return model, c.Tx([]byte{regChipID, 0}, r[:]) == nil && r[1] == id
			},
		})
	}
}

// Chip identification (datasheet 5.4.1).
const (
	regChipID    = 0xD0
	chipIDBMP280 = 0x58
	chipIDBME280 = 0x60
)

func prepare(c *sensors.Config) error {
	if c.Oversampling == 0 {
		c.Oversampling = 4
	}
	if c.Filter == 0 {
		c.Filter = 2
	}
	if _, err := oversampling(c.Oversampling); err != nil {
		return err
	}
	if _, err := filter(c.Filter); err != nil {
		return err
	}
	if maxRate := float64(time.Second) / float64(measureTime(c.Oversampling)); c.Rate > maxRate {
		return sensors.FieldError("rate", "%v Hz is faster than one measurement at oversampling %d allows (%.1f Hz)", c.Rate, c.Oversampling, maxRate)
	}
	if sensors.IsSPIBus(c.Bus) {
		if c.Address != 0 {
			return sensors.FieldError("address", "%#x given for SPI bus %q; SPI devices are selected by chip select, not address", c.Address, c.Bus)
		}
		return nil
	}
	switch c.Address {
	case 0:
		c.Address = 0x76
	case 0x76, 0x77:
	default:
		return sensors.FieldError("address", "%#x: a BME280/BMP280 answers at 0x76 (SDO to GND) or 0x77 (SDO to VDDIO)", c.Address)
	}
	return nil
}

func open(c sensors.Config, env sensors.Env, model string) (sensors.Source, error) {
	o := &Options{Name: c.Name, Model: model, Oversampling: c.Oversampling, Filter: c.Filter, Rate: c.Rate, Clock: env.Clock}
	var (
		src *Source
		bus io.Closer
		err error
	)
	if sensors.IsSPIBus(c.Bus) {
		var p spi.PortCloser
		if p, err = env.Buses.OpenSPI(c.Bus); err != nil {
			return nil, sensors.NewDeviceError(c.Name, "open", nil, err)
		}
		bus = p
		src, err = NewSPI(p, o)
	} else {
		var b i2c.BusCloser
		if b, err = env.Buses.OpenI2C(c.Bus); err != nil {
			return nil, sensors.NewDeviceError(c.Name, "open", nil, err)
		}
		bus = b
		src, err = NewI2C(b, uint16(c.Address), o)
	}
	if err != nil {
		bus.Close()
		return nil, fmt.Errorf("%w (bus %q)", err, c.Bus)
	}
	return sensors.Paced(sensors.WithClosers(src, bus), c.Rate, env.Clock), nil
}
