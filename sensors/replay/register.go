package replay

import (
	"github.com/trit-iot/trit/sensors"
)

func init() {
	sensors.Register(sensors.Kind{
		Name:        "replay",
		Doc:         "CSV or LIBSVM file played back at a rate",
		DefaultName: "replay",
		DefaultRate: 0,
		Fields:      []string{"rate", "file", "format", "loop", "dims", "time_column"},
		Prepare:     prepare,
		Channels: func(c sensors.Config) ([]string, error) {
			s, err := Open(c.File, options(c, nil))
			if err != nil {
				return nil, err
			}
			defer s.Close()
			return s.Channels(), nil
		},
		Open: func(c sensors.Config, env sensors.Env) (sensors.Source, error) {
			s, err := Open(c.File, options(c, env.Clock))
			if err != nil {
				return nil, err
			}
			return s, nil
		},
	})
}

func options(c sensors.Config, clock sensors.Clock) *Options {
	return &Options{Name: c.Name, Format: c.Format, Rate: c.Rate, Loop: c.Loop, Dims: c.Dims, TimeColumn: c.TimeColumn, Clock: clock}
}

func prepare(c *sensors.Config) error {
	if c.File == "" {
		return sensors.FieldError("file", "missing; the CSV or LIBSVM file to replay")
	}
	switch c.Format {
	case "", CSV, LIBSVM:
	default:
		return sensors.FieldError("format", "%q must be %q or %q", c.Format, CSV, LIBSVM)
	}
	if c.Dims < 0 || c.Dims > MaxDims {
		return sensors.FieldError("dims", "%d must be in 0..%d", c.Dims, MaxDims)
	}
	if c.TimeColumn != "" && c.Format == LIBSVM {
		return sensors.FieldError("time_column", "only CSV files have columns")
	}
	return nil
}
