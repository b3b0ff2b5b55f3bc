package synthetic

import (
	"time"

	"github.com/trit-iot/trit/sensors"
)

func init() {
	sensors.Register(sensors.Kind{
		Name:        "synthetic",
		Doc:         "simulated vibrating machine (normal / imbalance / bearing_fault)",
		DefaultName: "accel",
		DefaultRate: DefaultRate,
		Fields:      []string{"rate", "state", "seed", "cycle"},
		Prepare:     prepare,
		Channels:    func(c sensors.Config) ([]string, error) { return Channels(c.Name), nil },
		Open: func(c sensors.Config, env sensors.Env) (sensors.Source, error) {
			st, _ := ParseState(c.State) // validated by prepare
			src := New(&Options{Name: c.Name, Rate: c.Rate, State: st, Cycle: c.Cycle, Seed: c.Seed, Clock: env.Clock})
			return sensors.Paced(src, c.Rate, env.Clock), nil
		},
	})
}

func prepare(c *sensors.Config) error {
	if c.State == "" {
		c.State = Normal.String()
	}
	if _, err := ParseState(c.State); err != nil {
		return sensors.FieldError("state", "%q must be normal, imbalance or bearing_fault", c.State)
	}
	if c.Rate < 1000 || c.Rate > 20000 {
		return sensors.FieldError("rate", "%v Hz: the simulation needs 1000..20000 Hz (its bearing resonance reaches 400 Hz)", c.Rate)
	}
	if c.Cycle > 0 && c.Cycle < time.Second {
		return sensors.FieldError("cycle", "%v: states last at least one second", c.Cycle)
	}
	return nil
}
