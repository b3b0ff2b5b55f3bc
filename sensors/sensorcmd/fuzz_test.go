package sensorcmd

import (
	"errors"
	"slices"
	"testing"

	"github.com/trit-iot/trit/sensors"
	"github.com/trit-iot/trit/sensors/features"
)

// FuzzParseConfig: any document either fails with an error or yields
// sensors that validate and have channels (without touching hardware) and
// a valid pipeline spec.
func FuzzParseConfig(f *testing.F) {
	f.Add(twoSensors)
	f.Add("[[sensor]]\nkind = \"replay\"\nfile = \"x.csv\"\n")
	f.Add("[[sensor]]\nkind = \"gpio\"\npins = [\"GPIO17\", \"27\"]\nedge = \"both\"\n[features]\n[[features.feature]]\nchannel = \"gpio.17.count\"\nwindow = 10\nstats = [\"mean\"]\n")
	f.Add("[[sensor]]\nkind = \"bme280\"\nadress = 0x76\n")
	f.Add("[features]\nrate = 1e400\n")
	f.Fuzz(func(t *testing.T, doc string) {
		cfg, err := ParseConfig(doc)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			return
		}
		if err := sensors.ValidateAll(cfg.Sensors); len(cfg.Sensors) > 0 && err != nil {
			t.Fatalf("accepted config fails validation: %v", err)
		}
		for _, c := range cfg.Sensors {
			if c.Kind == "replay" {
				continue // would read the named file
			}
			if _, err := c.Channels(); err != nil {
				t.Fatalf("%+v: accepted but no channels: %v", c, err)
			}
		}
		if cfg.Features != nil {
			if _, err := cfg.Features.FeatureNames(); err != nil {
				t.Fatalf("accepted spec invalid: %v", err)
			}
		}
	})
}

// FuzzParseSpec: a spec either fails or names its features, and a pipeline
// built on its channels accepts samples.
func FuzzParseSpec(f *testing.F) {
	f.Add("rate = 1000\n[[feature]]\nchannel = \"accel.x\"\nwindow = 256\nstats = [\"rms\", \"p2p\"]\nbands = [[0, 50], [50, 200]]\n")
	f.Add("[[feature]]\nchannel = \"a\"\nwindow = 1\nstats = [\"mean\"]\n")
	f.Add("hop = -1\n[[feature]]\nchannel = \"a\"\n")
	f.Add("rate = 10\n[[feature]]\nchannel = \"a\"\nwindow = 4\nbands = [[0, 1e308]]\n")
	f.Fuzz(func(t *testing.T, doc string) {
		spec, err := ParseSpec(doc)
		if err != nil {
			var se *features.SpecError
			if errors.As(err, &se) && se.Error() == "" {
				t.Fatal("empty error message")
			}
			return
		}
		names, err := spec.FeatureNames()
		if err != nil || len(names) == 0 {
			t.Fatalf("accepted spec: %v %v", names, err)
		}
		var channels []string
		for _, ft := range spec.Features {
			if ft.Window > 4096 {
				return // valid, but slow to fill
			}
			if !slices.Contains(channels, ft.Channel) {
				channels = append(channels, ft.Channel)
			}
		}
		p, err := features.NewPipeline(spec, channels)
		if err != nil {
			t.Fatalf("pipeline of an accepted spec: %v", err)
		}
		vals := make([]float64, len(channels))
		for i := range 2 * p.Len() {
			vals[0] = float64(i % 5)
			if _, err := p.Push(vals); err != nil {
				t.Fatal(err)
			}
		}
		if v := p.Vector(nil); len(v) != len(names) {
			t.Fatalf("vector of %d, want %d", len(v), len(names))
		}
	})
}
