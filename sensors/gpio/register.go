package gpio

import (
	"slices"

	"periph.io/x/conn/v3/gpio"

	"github.com/trit-iot/trit/sensors"
)

var (
	pulls = map[string]gpio.Pull{"float": gpio.Float, "up": gpio.PullUp, "down": gpio.PullDown}
	edges = map[string]gpio.Edge{"rising": gpio.RisingEdge, "falling": gpio.FallingEdge, "both": gpio.BothEdges}
)

func init() {
	sensors.Register(sensors.Kind{
		Name:        "gpio",
		Doc:         "GPIO digital inputs with edge counting",
		DefaultName: "gpio",
		DefaultRate: 1,
		Fields:      []string{"rate", "pins", "pull", "edge"},
		Prepare:     prepare,
		Channels:    func(c sensors.Config) ([]string, error) { return Channels(c.Name, c.Pins), nil },
		Open:        open,
	})
}

func prepare(c *sensors.Config) error {
	if len(c.Pins) == 0 {
		return sensors.FieldError("pins", "missing; list the inputs, e.g. pins = [\"GPIO17\"]")
	}
	for i, p := range c.Pins {
		if p == "" {
			return sensors.FieldError("pins", "entry %d is empty", i)
		}
		if slices.ContainsFunc(c.Pins[:i], func(q string) bool { return PinID(q) == PinID(p) }) {
			return sensors.FieldError("pins", "%q is listed twice", p)
		}
	}
	if c.Pull == "" {
		c.Pull = "float"
	}
	if _, ok := pulls[c.Pull]; !ok {
		return sensors.FieldError("pull", "%q must be \"up\", \"down\" or \"float\"", c.Pull)
	}
	if c.Edge == "" {
		c.Edge = "rising"
	}
	if _, ok := edges[c.Edge]; !ok {
		return sensors.FieldError("edge", "%q must be \"rising\", \"falling\" or \"both\"", c.Edge)
	}
	if c.Rate > 1000 {
		return sensors.FieldError("rate", "%v Hz: read counters at most 1000 times a second", c.Rate)
	}
	return nil
}

func open(c sensors.Config, env sensors.Env) (sensors.Source, error) {
	var pins []gpio.PinIn
	for _, name := range c.Pins {
		p, err := env.Buses.Pin(name)
		if err != nil {
			return nil, sensors.NewDeviceError(c.Name, "open", nil, err)
		}
		pins = append(pins, named{PinIO: p, name: name})
	}
	src, err := New(pins, &Options{Name: c.Name, Pull: pulls[c.Pull], Edge: edges[c.Edge], Clock: env.Clock})
	if err != nil {
		return nil, err
	}
	return sensors.Paced(src, c.Rate, env.Clock), nil
}

// named keeps the configured pin name so that channel ids match
// Config.Channels whatever the host calls the pin.
type named struct {
	gpio.PinIO
	name string
}

func (n named) Name() string { return n.name }
