package sensorcmd

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/trit-iot/trit/sensors"
	"github.com/trit-iot/trit/sensors/features"
)

// FileConfig is the part of the agent's TOML configuration file that the
// sensors commands read: the [[sensor]] tables and an optional [features]
// table (the pipeline spec). Other keys belong to the agent and are
// ignored; a misspelt key inside a [[sensor]] or [features] table is an
// error, so that a typo does not silently fall back to a default.
type FileConfig struct {
	Sensors  []sensors.Config       `toml:"sensor"`
	Features *features.PipelineSpec `toml:"features"`
}

// maxConfigSize bounds the configuration file read.
const maxConfigSize = 1 << 20

// LoadConfig reads and validates the sensors part of the TOML file at path.
// Errors name the file and, where the TOML decoder knows it, the line.
func LoadConfig(path string) (*FileConfig, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(b) > maxConfigSize {
		return nil, fmt.Errorf("%s: %d bytes; a configuration file is at most %d", path, len(b), maxConfigSize)
	}
	c, err := ParseConfig(string(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// ParseConfig is LoadConfig on the file's contents.
func ParseConfig(doc string) (*FileConfig, error) {
	var c FileConfig
	md, err := toml.Decode(doc, &c)
	if err != nil {
		return nil, tomlError(err)
	}
	for _, k := range md.Undecoded() {
		if top := k[0]; top == "sensor" || top == "features" {
			return nil, fmt.Errorf("unknown key %s", describeKey(k))
		}
	}
	if len(c.Sensors) > 0 {
		if err := sensors.ValidateAll(c.Sensors); err != nil {
			return nil, err
		}
	}
	if c.Features != nil {
		if err := c.Features.Validate(); err != nil {
			return nil, err
		}
	}
	return &c, nil
}

// describeKey prints a TOML key for an error: sensor.gain, features.feature.windw.
func describeKey(k toml.Key) string {
	return strings.Join(k, ".")
}

// tomlError shortens a TOML decoding error to its line and message.
func tomlError(err error) error {
	var pe toml.ParseError
	if errors.As(err, &pe) {
		return fmt.Errorf("line %d: %s", pe.Position.Line, pe.Message)
	}
	return err
}
