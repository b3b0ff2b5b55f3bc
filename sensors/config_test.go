package sensors_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/trit-iot/trit/sensors"
	_ "github.com/trit-iot/trit/sensors/all"
	"github.com/trit-iot/trit/sensors/features"
)

// agentConfig is the shape the agent's TOML file is expected to have.
type agentConfig struct {
	Sensor   []sensors.Config
	Features features.PipelineSpec
}

const sample = `
[[sensor]]
kind = "bme280"
name = "env"
bus = "/dev/i2c-1"
address = 0x77
rate = 0.5

[[sensor]]
kind = "adxl345"
bus = "SPI0.0"
rate = 1000
range_g = 4

[[sensor]]
kind = "ads1115"
inputs = ["0", "2-3"]
max_volts = 2.048

[[sensor]]
kind = "gpio"
name = "flow"
pins = ["GPIO17"]
pull = "up"
edge = "falling"

[[sensor]]
kind = "synthetic"
name = "sim"
state = "imbalance"
cycle = "30s"
seed = 42

[features]
rate = 1000
[[features.feature]]
channel = "accel.x"
window = 256
stats = ["rms", "p2p"]
bands = [[0, 50], [50, 200]]
`

func TestDecodeTOML(t *testing.T) {
	var cfg agentConfig
	md, err := toml.Decode(sample, &cfg)
	if err != nil {
		t.Fatal(err)
	}
	if u := md.Undecoded(); len(u) > 0 {
		t.Fatalf("undecoded keys %v", u)
	}
	if err := sensors.ValidateAll(cfg.Sensor); err != nil {
		t.Fatal(err)
	}
	if c := cfg.Sensor[0]; c.Address != 0x77 || c.Rate != 0.5 || c.Bus != "/dev/i2c-1" {
		t.Fatalf("bme280 decoded as %+v", c)
	}
	if c := cfg.Sensor[4]; c.Cycle != 30*time.Second || c.Seed != 42 {
		t.Fatalf("synthetic decoded as %+v", c)
	}
	names, err := cfg.Features.FeatureNames()
	if err != nil || strings.Join(names, " ") != "accel.x.rms accel.x.p2p accel.x.band_0_50 accel.x.band_50_200" {
		t.Fatalf("features %v %v", names, err)
	}
	var all []string
	for _, c := range cfg.Sensor {
		ch, err := c.Channels()
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, ch...)
	}
	want := "env.temperature env.pressure env.humidity accel.x accel.y accel.z adc.0 adc.2-3 flow.17.count flow.17.level sim.x sim.y sim.z sim.temperature"
	if got := strings.Join(all, " "); got != want {
		t.Fatalf("channels\n got %s\nwant %s", got, want)
	}
	if err := features.CanProduce(cfg.Features, all, names); err != nil {
		t.Fatal(err)
	}
}

func TestConfigErrors(t *testing.T) {
	cases := []struct {
		cfg    sensors.Config
		sensor string
		field  string
		msg    string
	}{
		{sensors.Config{}, "", "kind", "missing"},
		{sensors.Config{Kind: "bme680", Name: "x"}, "x", "kind", "unknown sensor kind"},
		{sensors.Config{Kind: "bme280", Name: "bad name"}, "bad name", "name", "only letters"},
		{sensors.Config{Kind: "bme280", Name: ".a"}, ".a", "name", "dots"},
		{sensors.Config{Kind: "bme280", Rate: -1}, "bme280", "rate", ">= 0"},
		{sensors.Config{Kind: "adxl345", Address: 0x80}, "accel", "address", "7-bit"},
		{sensors.Config{Kind: "adxl345", State: "normal"}, "accel", "state", "not used by kind adxl345"},
		{sensors.Config{Kind: "gpio", Pins: []string{"4"}, Loop: true}, "gpio", "loop", "not used"},
		{sensors.Config{Kind: "synthetic", Cycle: -time.Second}, "accel", "cycle", "negative"},
	}
	for _, c := range cases {
		err := c.cfg.Validate()
		var ce *sensors.ConfigError
		if !errors.As(err, &ce) || ce.Sensor != c.sensor || ce.Field != c.field || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%+v: got %v (%+v), want sensor %q field %q containing %q", c.cfg, err, ce, c.sensor, c.field, c.msg)
		}
	}
	err := sensors.ValidateAll([]sensors.Config{{Kind: "synthetic"}, {Kind: "adxl345"}})
	var ce *sensors.ConfigError
	if !errors.As(err, &ce) || ce.Field != "name" || !strings.Contains(err.Error(), "#0 and #1") {
		t.Errorf("duplicate default names: %v", err)
	}
	err = sensors.ValidateAll([]sensors.Config{{Kind: "synthetic"}, {}})
	if !errors.As(err, &ce) || ce.Sensor != "#1" {
		t.Errorf("unnamed second sensor: %v", err)
	}
	if _, err := sensors.Open(sensors.Config{Kind: "nope"}); !errors.As(err, &ce) {
		t.Errorf("Open of unknown kind: %v", err)
	}
}

func TestKinds(t *testing.T) {
	want := []string{"ads1015", "ads1115", "adxl345", "bme280", "bmp280", "gpio", "replay", "synthetic"}
	if got := sensors.Kinds(); !reflect.DeepEqual(got, want) {
		t.Fatalf("kinds %v", got)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("registering a kind twice did not panic")
		}
	}()
	sensors.Register(sensors.Kind{Name: "gpio", DefaultName: "x",
		Channels: func(sensors.Config) ([]string, error) { return nil, nil },
		Open:     func(sensors.Config, sensors.Env) (sensors.Source, error) { return nil, nil }})
}

// FuzzConfig decodes arbitrary TOML as an agent's sensor list: decoding and
// validation must fail cleanly or yield a config whose defaults are stable.
func FuzzConfig(f *testing.F) {
	f.Add(sample)
	f.Add("[[sensor]]\nkind = \"replay\"\nfile = \"x.csv\"\nloop = true\n")
	f.Add("[[sensor]]\nkind = \"ads1015\"\nrate = 1e308\ninputs = [\"0\", \"1\"]\n")
	f.Add("[[sensor]]\nkind = \"bmp280\"\naddress = -5\nfilter = 16\noversampling = 16\n")
	f.Add("[[sensor]]\nkind = \"gpio\"\npins = [\"\"]\n")
	f.Fuzz(func(t *testing.T, doc string) {
		var cfg agentConfig
		if _, err := toml.Decode(doc, &cfg); err != nil {
			return
		}
		_ = sensors.ValidateAll(cfg.Sensor)
		for _, c := range cfg.Sensor {
			eff, err := c.Effective()
			if err != nil {
				var ce *sensors.ConfigError
				if !errors.As(err, &ce) {
					t.Fatalf("%+v: error %v is not a *ConfigError", c, err)
				}
				continue
			}
			again, err := eff.Effective()
			if err != nil || !reflect.DeepEqual(again, eff) {
				t.Fatalf("defaults not stable: %+v -> %+v (%v)", eff, again, err)
			}
			if c.Kind != "replay" { // replay would read the named file
				if _, err := eff.Channels(); err != nil {
					t.Fatalf("%+v valid but no channels: %v", eff, err)
				}
			}
		}
	})
}
