package sensorcmd

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/spf13/cobra"

	"github.com/trit-iot/trit/internal/cli"
	"github.com/trit-iot/trit/sensors"
	"github.com/trit-iot/trit/sensors/features"
	"github.com/trit-iot/trit/sensors/synthetic"
)

type readFlags struct {
	config   string
	only     []string
	sensor   sensors.Config // from --kind etc.
	features string
	count    int
	every    int
}

func newReadCmd(d *deps) *cobra.Command {
	f := &readFlags{}
	cmd := &cobra.Command{
		Use:   "read",
		Short: "Print live readings and features",
		Long: `read opens the sensors of the agent's configuration (--config), or one sensor
described by flags (--kind and the kind's fields), and prints their readings
and the feature vectors of a pipeline until interrupted (or --count readings).

Several sensors are read together: the fastest paces the output and each
reading carries the latest value of the others (NaN until a sensor has
answered, or while it is failed). A sensor that does not answer is retried
with backoff; read gives up after several failed reads in a row. At the end
it prints the health of every sensor.

--features-from chooses the pipeline: "auto" (the config's [features] table, else
the synthetic machine's default pipeline when the channels fit it, else
none), "none", "synthetic", or a TOML file holding a pipeline spec (rate,
hop and [[feature]] tables, as in docs/SENSORS.md).`,
		Example: `  trit-agent sensors read --kind synthetic --state bearing_fault --count 2048
  trit-agent sensors read --kind replay --file rec.csv --rate 1000 --features-from none
  trit-agent sensors read --config /etc/trit/agent.toml --sensor accel`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := d.runContext(cmd)
			defer cancel()
			return runRead(ctx, d, cmd, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.config, "config", "c", "", "the agent's configuration file ([[sensor]] tables, optional [features])")
	fl.StringSliceVar(&f.only, "sensor", nil, "with --config: read only the sensors of these names")
	fl.StringVar(&f.features, "features-from", "auto", `feature pipeline: "auto", "none", "synthetic" or a spec file (such as an agent's config, as tritctl train --features-from)`)
	cli.Renamed(cmd, "features-from", "features") // its name before the vocabulary (docs/CLI.md)
	fl.IntVarP(&f.count, "count", "n", 0, "readings to take (0: until interrupted)")
	fl.IntVar(&f.every, "every", 0, "print one reading in this many (0: about one a second); feature vectors are all printed")
	s := &f.sensor
	fl.StringVar(&s.Kind, "kind", "", "one sensor: its kind ("+strings.Join(sensors.Kinds(), ", ")+")")
	fl.StringVar(&s.Name, "name", "", "one sensor: its name (channel prefix)")
	fl.StringVar(&s.Bus, "bus", "", `one sensor: I²C bus or SPI port, e.g. "I2C1", "SPI0.0"`)
	fl.IntVar(&s.Address, "address", 0, "one sensor: I²C address, e.g. 0x76")
	fl.Float64Var(&s.Rate, "rate", 0, "one sensor: samples per second (0: the kind's default)")
	fl.IntVar(&s.RangeG, "range-g", 0, "adxl345: range in g")
	fl.StringSliceVar(&s.Inputs, "inputs", nil, `ads1115/ads1015: inputs, e.g. "0,2-3"`)
	fl.StringSliceVar(&s.Pins, "pins", nil, `gpio: pins, e.g. "GPIO17"`)
	fl.StringVar(&s.Pull, "pull", "", "gpio: up, down or float")
	fl.StringVar(&s.Edge, "edge", "", "gpio: rising, falling or both")
	fl.StringVar(&s.File, "file", "", "replay: the CSV or LIBSVM file")
	fl.StringVar(&s.Format, "format", "", "replay: csv or libsvm (default: from the file name)")
	fl.BoolVar(&s.Loop, "loop", false, "replay: start over at the end")
	fl.StringVar(&s.State, "state", "", "synthetic: normal, imbalance or bearing_fault")
	fl.Uint64Var(&s.Seed, "seed", 0, "synthetic: random seed")
	fl.DurationVar(&s.Cycle, "cycle", 0, "synthetic: move to the next state this often")
	return cmd
}

// sensorFlags are the flags that describe one sensor.
var sensorFlags = []string{"kind", "name", "bus", "address", "rate", "range-g", "inputs", "pins", "pull", "edge", "file", "format", "loop", "state", "seed", "cycle"}

func runRead(ctx context.Context, d *deps, cmd *cobra.Command, f *readFlags) error {
	if f.count < 0 || f.every < 0 {
		return usagef("--count and --every must not be negative")
	}
	cfgs, spec, err := readConfigs(cmd, f)
	if err != nil {
		return err
	}
	// The fastest sensor paces the output; the others are sampled and held.
	in, err := sensors.OpenInput(cfgs, d.env, d.policy)
	if err != nil {
		return err
	}
	src := in.Source
	defer src.Close()

	pipeline, err := buildPipeline(spec, f.features, src.Channels(), in.Primary)
	if err != nil {
		return err
	}
	every := f.every
	if every == 0 {
		every = max(1, int(in.Primary.Rate))
	}
	fmt.Fprintf(d.stdout, "reading %s", strings.Join(src.Channels(), ", "))
	if pipeline != nil {
		fmt.Fprintf(d.stdout, "; %d features: %s", pipeline.Len(), strings.Join(pipeline.FeatureNames(), ", "))
	}
	fmt.Fprintln(d.stdout)
	loopErr := sensors.ReadLoop(ctx, d.stdout, src, pipeline, &sensors.LoopOptions{Count: f.count, Every: every})
	for _, h := range sensors.Healths(in.Sensors) {
		fmt.Fprintf(d.stdout, "health: %s\n", describeHealth(h))
	}
	return loopErr
}

// readConfigs returns the sensors to read and the config's pipeline spec
// (nil if none), from --config or from the one-sensor flags.
func readConfigs(cmd *cobra.Command, f *readFlags) ([]sensors.Config, *features.PipelineSpec, error) {
	var set []string
	for _, name := range sensorFlags {
		if cmd.Flags().Changed(name) {
			set = append(set, "--"+name)
		}
	}
	switch {
	case f.config != "" && len(set) > 0:
		return nil, nil, usagef("give either --config or a sensor's flags (%s), not both", strings.Join(set, ", "))
	case f.config == "" && f.sensor.Kind == "":
		return nil, nil, usagef("give --config FILE or --kind KIND (one of %s)", strings.Join(sensors.Kinds(), ", "))
	case f.config == "" && len(f.only) > 0:
		return nil, nil, usagef("--sensor selects sensors of --config")
	case f.config == "":
		if err := f.sensor.Validate(); err != nil {
			return nil, nil, &UsageError{Err: err}
		}
		return []sensors.Config{f.sensor}, nil, nil
	}
	cfg, err := LoadConfig(f.config)
	if err != nil {
		return nil, nil, err
	}
	if len(cfg.Sensors) == 0 {
		return nil, nil, fmt.Errorf("%s: no [[sensor]] tables", f.config)
	}
	cfgs := cfg.Sensors
	if len(f.only) > 0 {
		cfgs = nil
		var names []string
		for _, c := range cfg.Sensors {
			eff, _ := c.Effective()
			names = append(names, eff.Name)
			if slices.Contains(f.only, eff.Name) {
				cfgs = append(cfgs, c)
			}
		}
		for _, n := range f.only {
			if !slices.Contains(names, n) {
				return nil, nil, usagef("--sensor %q: %s has no sensor of that name (it has %s)", n, f.config, strings.Join(names, ", "))
			}
		}
	}
	return cfgs, cfg.Features, nil
}

// buildPipeline returns the pipeline --features-from asks for on channels, or
// nil for none. primary is the sensor that paces the samples.
func buildPipeline(fromConfig *features.PipelineSpec, choice string, channels []string, primary sensors.Config) (*features.Pipeline, error) {
	var spec features.PipelineSpec
	switch choice {
	case "none":
		return nil, nil
	case "auto":
		switch {
		case fromConfig != nil:
			spec = *fromConfig
		default:
			spec = synthetic.DefaultSpec()
			names, _ := spec.FeatureNames()
			if features.CanProduce(spec, channels, names) != nil {
				return nil, nil
			}
		}
	case "synthetic":
		spec = synthetic.DefaultSpec()
	default:
		var err error
		if spec, err = LoadSpec(choice); err != nil {
			return nil, err
		}
	}
	if err := sensors.CheckSpecRate(spec, primary); err != nil {
		return nil, err
	}
	return features.NewPipeline(spec, channels)
}

// LoadSpec reads a feature pipeline spec from a TOML file with top-level
// rate and hop and [[feature]] tables.
func LoadSpec(path string) (features.PipelineSpec, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return features.PipelineSpec{}, err
	}
	if len(b) > maxConfigSize {
		return features.PipelineSpec{}, fmt.Errorf("%s: %d bytes; a spec file is at most %d", path, len(b), maxConfigSize)
	}
	spec, err := ParseSpec(string(b))
	if err != nil {
		return spec, fmt.Errorf("%s: %w", path, err)
	}
	return spec, nil
}

// ParseSpec is LoadSpec on the file's contents.
func ParseSpec(doc string) (features.PipelineSpec, error) {
	var spec features.PipelineSpec
	md, err := toml.Decode(doc, &spec)
	if err != nil {
		return spec, tomlError(err)
	}
	if u := md.Undecoded(); len(u) > 0 {
		return spec, fmt.Errorf("unknown key %s", describeKey(u[0]))
	}
	return spec, spec.Validate()
}

func describeHealth(h sensors.Health) string {
	s := fmt.Sprintf("%s %s", h.Sensor, h.State)
	switch h.State {
	case sensors.StateFailed:
		s += fmt.Sprintf(" since %s (%d failures): %s", h.Since.UTC().Format("15:04:05"), h.Failures, h.LastError)
	case sensors.StateSlow:
		s += fmt.Sprintf(" since %s: %s", h.Since.UTC().Format("15:04:05"), h.LastError)
	}
	return s
}
