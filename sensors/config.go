package sensors

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"time"
)

// Config describes one sensor. It decodes from a TOML table such as
//
//	[[sensor]]
//	kind = "bme280"
//	name = "env"        # channel prefix; default per kind
//	bus = "I2C1"        # or "/dev/i2c-1"; "SPI0.0" for SPI
//	address = 0x76
//	rate = 1.0          # samples per second
//
// Kind-specific fields are grouped below; setting one that the kind does not
// use is an error, so typos in a field's value do not pass silently. The
// zero value of every field means "the kind's default". docs/SENSORS.md
// lists the fields of every kind.
type Config struct {
	Kind    string  `toml:"kind" json:"kind"`
	Name    string  `toml:"name" json:"name,omitempty"`
	Bus     string  `toml:"bus" json:"bus,omitempty"`
	Address int     `toml:"address" json:"address,omitempty"`
	Rate    float64 `toml:"rate" json:"rate,omitempty"`

	// BME280 / BMP280.
	Oversampling int `toml:"oversampling" json:"oversampling,omitempty"` // 1, 2, 4, 8 or 16
	Filter       int `toml:"filter" json:"filter,omitempty"`             // IIR coefficient 2, 4, 8 or 16

	// ADS1115 / ADS1015.
	Inputs   []string `toml:"inputs" json:"inputs,omitempty"`       // "0".."3" or "0-1", "0-3", "1-3", "2-3"
	MaxVolts float64  `toml:"max_volts" json:"max_volts,omitempty"` // largest |voltage| to read

	// ADXL345.
	RangeG int `toml:"range_g" json:"range_g,omitempty"` // 2, 4, 8 or 16

	// GPIO.
	Pins []string `toml:"pins" json:"pins,omitempty"` // e.g. "GPIO17"
	Pull string   `toml:"pull" json:"pull,omitempty"` // "up", "down", "float"
	Edge string   `toml:"edge" json:"edge,omitempty"` // "rising", "falling", "both"

	// Replay.
	File       string `toml:"file" json:"file,omitempty"`
	Format     string `toml:"format" json:"format,omitempty"` // "csv" or "libsvm"
	Loop       bool   `toml:"loop" json:"loop,omitempty"`
	Dims       int    `toml:"dims" json:"dims,omitempty"`               // LIBSVM feature count
	TimeColumn string `toml:"time_column" json:"time_column,omitempty"` // CSV

	// Synthetic.
	State string        `toml:"state" json:"state,omitempty"` // "normal", "imbalance", "bearing_fault"
	Seed  uint64        `toml:"seed" json:"seed,omitempty"`
	Cycle time.Duration `toml:"cycle" json:"cycle,omitempty"` // cycle through the states
}

// ConfigError reports an invalid Config: which sensor, which field, what is
// wrong.
type ConfigError struct {
	Sensor string // effective sensor name, or "#i" for the i-th of a list
	Kind   string
	Field  string // TOML key, e.g. "address"; empty for the whole sensor
	Msg    string
}

// Error implements error.
func (e *ConfigError) Error() string {
	var b strings.Builder
	b.WriteString("sensors: sensor ")
	if e.Sensor != "" {
		fmt.Fprintf(&b, "%q", e.Sensor)
	} else {
		b.WriteString("(unnamed)")
	}
	if e.Kind != "" {
		fmt.Fprintf(&b, " (kind %s)", e.Kind)
	}
	if e.Field != "" {
		fmt.Fprintf(&b, ": field %s", e.Field)
	}
	b.WriteString(": ")
	b.WriteString(e.Msg)
	return b.String()
}

// FieldError returns a *ConfigError about field. Kinds use it in
// Kind.Prepare; the registry fills in the sensor and kind.
func FieldError(field, format string, args ...any) error {
	return &ConfigError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// commonFields are accepted by every kind.
var commonFields = []string{"kind", "name"}

// Validate checks c without touching hardware or files.
func (c Config) Validate() error {
	_, _, err := c.prepare()
	return err
}

// Channels returns the channel names a source opened from c will have,
// without touching hardware (a replay reads its file's header).
func (c Config) Channels() ([]string, error) {
	p, k, err := c.prepare()
	if err != nil {
		return nil, err
	}
	ch, err := k.Channels(p)
	if err != nil {
		return nil, withSensor(err, p.Name, p.Kind)
	}
	return ch, nil
}

// Effective returns c with the kind's defaults filled in.
func (c Config) Effective() (Config, error) {
	p, _, err := c.prepare()
	return p, err
}

// ValidateAll validates every config of a list and checks that sensor names
// (and so channel prefixes) are unique.
func ValidateAll(cfgs []Config) error {
	seen := map[string]int{}
	for i, c := range cfgs {
		p, _, err := c.prepare()
		if err != nil {
			var ce *ConfigError
			if errors.As(err, &ce) && ce.Sensor == "" {
				ce.Sensor = fmt.Sprintf("#%d", i)
			}
			return err
		}
		if j, dup := seen[p.Name]; dup {
			return &ConfigError{Sensor: p.Name, Kind: p.Kind, Field: "name",
				Msg: fmt.Sprintf("sensors #%d and #%d have the same name; set distinct names", j, i)}
		}
		seen[p.Name] = i
	}
	return nil
}

// prepare applies defaults and validates; it returns the effective config.
func (c Config) prepare() (Config, *Kind, error) {
	if c.Kind == "" {
		return c, nil, &ConfigError{Sensor: c.Name, Field: "kind", Msg: "missing (known kinds: " + strings.Join(Kinds(), ", ") + ")"}
	}
	k := lookup(c.Kind)
	if k == nil {
		return c, nil, &ConfigError{Sensor: c.Name, Field: "kind",
			Msg: fmt.Sprintf("%v %q (known kinds: %s; is sensors/all imported?)", ErrUnknownKind, c.Kind, strings.Join(Kinds(), ", "))}
	}
	if c.Name == "" {
		c.Name = k.DefaultName
	}
	fail := func(field, format string, args ...any) (Config, *Kind, error) {
		return c, k, &ConfigError{Sensor: c.Name, Kind: c.Kind, Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	if err := checkName(c.Name); err != nil {
		return fail("name", "%v", err)
	}
	if f := c.foreignField(k); f != "" {
		return fail(f, "is not used by kind %s (it accepts: %s)", c.Kind, strings.Join(k.Fields, ", "))
	}
	if math.IsNaN(c.Rate) || math.IsInf(c.Rate, 0) || c.Rate < 0 {
		return fail("rate", "%v must be a finite number >= 0 (samples per second)", c.Rate)
	}
	if c.Rate == 0 {
		c.Rate = k.DefaultRate
	}
	if c.Address < 0 || c.Address > 0x7f {
		return fail("address", "%#x is not a 7-bit I²C address (0x00..0x7f)", c.Address)
	}
	if c.Cycle < 0 {
		return fail("cycle", "%v must not be negative", c.Cycle)
	}
	if k.Prepare != nil {
		if err := k.Prepare(&c); err != nil {
			return c, k, withSensor(err, c.Name, c.Kind)
		}
	}
	return c, k, nil
}

// withSensor fills the sensor and kind of a *ConfigError that lacks them.
func withSensor(err error, name, kind string) error {
	var ce *ConfigError
	if errors.As(err, &ce) {
		if ce.Sensor == "" {
			ce.Sensor = name
		}
		if ce.Kind == "" {
			ce.Kind = kind
		}
		return err
	}
	return &ConfigError{Sensor: name, Kind: kind, Msg: err.Error()}
}

// foreignField returns the TOML key of the first non-zero field that kind k
// does not accept, or "".
func (c Config) foreignField(k *Kind) string {
	v := reflect.ValueOf(c)
	t := v.Type()
	for i := range t.NumField() {
		key, _, _ := strings.Cut(t.Field(i).Tag.Get("toml"), ",")
		if v.Field(i).IsZero() || slices.Contains(commonFields, key) || slices.Contains(k.Fields, key) {
			continue
		}
		return key
	}
	return ""
}

// checkName accepts names usable as a channel prefix: letters, digits, '_',
// '-' and inner single dots.
func checkName(s string) error {
	if len(s) > 64 {
		return fmt.Errorf("%q is longer than 64 characters", s)
	}
	if strings.HasPrefix(s, ".") || strings.HasSuffix(s, ".") || strings.Contains(s, "..") {
		return fmt.Errorf("%q: dots only between parts, e.g. \"line1.accel\"", s)
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.') {
			return fmt.Errorf("%q: only letters, digits, '_', '-' and '.' are allowed", s)
		}
	}
	return nil
}
