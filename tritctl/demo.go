package tritctl

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/trit-iot/trit/inference"
	"github.com/trit-iot/trit/internal/cli"
	"github.com/trit-iot/trit/sensors"
	"github.com/trit-iot/trit/sensors/features"
	"github.com/trit-iot/trit/sensors/synthetic"
	"github.com/trit-iot/trit/training"
	"github.com/trit-iot/trit/training/data"
)

// Demo datasets.
const (
	demoMachine = "machine"
	demoCircles = "circles"
)

func newDemoCmd(e *env) *cobra.Command {
	var dir, dataset string
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run the whole job end to end on built-in data (nothing to install)",
		Long: `demo trains and checks a model without hardware or downloads.

--dataset machine (the default) simulates vibrating machines (normal,
imbalance, bearing fault) as an accelerometer and a temperature probe
would see them, turns one-window segments into features with the same
pipeline the agent runs (RMS, peak-to-peak and FFT band energies), trains a
ternary model with a small σ×C search, evaluates it on held-out machines,
writes the model bundle and reads it back, and classifies live windows
from the simulated sensor.

--dataset circles uses the paper's two-circles figure instead.

This runs in-process. 'make demo' (scripts/demo.sh) runs the whole product
instead: trit-fleet, three trit-agents on simulated machines, and a model
trained with 'tritctl train --synthetic machine', signed and rolled out.`,
		Example: `  tritctl demo
  tritctl demo --dataset circles -o demo-files     # keep the files it writes`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			switch dataset {
			case demoMachine:
				return runMachineDemo(e, dir)
			case demoCircles:
				return runCirclesDemo(e, dir)
			}
			return usagef("--dataset %q: want %s or %s", dataset, demoMachine, demoCircles)
		},
	}
	cmd.Flags().StringVarP(&dir, "out", "o", "", "directory for the demo's files, kept (default: a temporary directory, removed afterwards)")
	cli.Renamed(cmd, "out", "dir") // its name before the vocabulary
	cmd.Flags().StringVar(&dataset, "dataset", demoMachine, "data to train on: machine (simulated sensors) or circles")
	return cmd
}

// demoDir returns dir, or a new temporary directory and a function that
// removes it.
func demoDir(dir string) (string, func(), error) {
	if dir != "" {
		return dir, func() {}, os.MkdirAll(dir, 0o755)
	}
	tmp, err := os.MkdirTemp("", "trit-demo-")
	if err != nil {
		return "", nil, err
	}
	return tmp, func() { os.RemoveAll(tmp) }, nil
}

// Machine demo sizes: 600 segments per state, 30 % held out. With p = 1024
// and a 3×3 grid this trains in well under 30 s on one core.
const (
	demoPerState = 600
	demoHoldOut  = 0.3
	demoSeed     = 1
)

// machineDataset simulates perState machine segments per state through the
// real feature pipeline and returns them as a training dataset whose
// classes are the state names in label order.
func machineDataset(spec features.PipelineSpec, perState int, seed uint64) (*data.Dataset, error) {
	sd, err := synthetic.MakeDataset(&synthetic.DatasetOptions{Spec: &spec, PerState: perState, Seed: seed})
	if err != nil {
		return nil, err
	}
	ds := &data.Dataset{Name: "synthetic machine", N: len(sd.Rows), D: len(sd.Features), Features: sd.Features}
	for _, st := range synthetic.States {
		ds.Classes = append(ds.Classes, st.String())
	}
	ds.X = make([]float32, 0, ds.N*ds.D)
	for i, row := range sd.Rows {
		ds.X = append(ds.X, row...)
		ds.Y = append(ds.Y, int32(sd.Labels[i]))
	}
	return ds, nil
}

func runMachineDemo(e *env, dir string) error {
	w := e.stdout
	start := time.Now()
	dir, cleanup, err := demoDir(dir)
	if err != nil {
		return err
	}
	defer cleanup()

	spec := synthetic.DefaultSpec()
	ds, err := machineDataset(spec, demoPerState, demoSeed)
	if err != nil {
		return err
	}
	train, test, err := data.Split(ds, demoHoldOut, demoSeed)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "1. data: %d simulated machines per state (%s), each a %d-sample window at %g Hz\n",
		demoPerState, strings.Join(ds.Classes, ", "), spec.Features[0].Window, spec.Rate)
	fmt.Fprintf(w, "   of a 3-axis accelerometer and a temperature probe, through the agent's feature pipeline:\n")
	fmt.Fprintf(w, "   %d features: %s\n", ds.D, strings.Join(ds.Features, ", "))
	fmt.Fprintf(w, "   %d machines to train on, %d held out for the test\n", train.N, test.N)

	prog := &progress{e: e}
	cfg := &training.Config{P: 1024, Seed: demoSeed, SigmaGrid: []float64{1, 2, 4}, CGrid: []float64{10, 100, 1000}, Progress: prog.report}
	fmt.Fprintf(w, "2. training: p = %d embedding bits, ternary weights, σ and C searched on a validation split\n", cfg.P)
	res, err := training.Train(train, cfg)
	prog.finish()
	if err != nil {
		return err
	}
	coef := len(res.Spec.Sign) * cfg.P
	fmt.Fprintf(w, "   chose σ = %g, C = %g; %d of %d coefficients non-zero; %.1f s\n", res.Sigma, res.C, res.NonZero, coef, res.TrainSeconds)

	m, ev, size, err := demoRoundTrip(w, filepath.Join(dir, "machine.model"), res, train, test, "held-out machines")
	if err != nil {
		return err
	}

	fmt.Fprintf(w, "\n5. live: the simulated sensor through the registry, features in the bundle's order\n")
	if err := demoLive(w, m, spec); err != nil {
		return err
	}

	fmt.Fprintf(w, "\nsummary: test accuracy %.2f%%, training %.1f s, %d of %d coefficients non-zero, model %d bytes, %d features\n",
		ev.Accuracy, res.TrainSeconds, res.NonZero, coef, size, ds.D)
	fmt.Fprintf(w, "demo finished in %.1f s\n", time.Since(start).Seconds())
	return nil
}

// demoLive opens a simulated machine in each state as the agent would (by
// config, through the registry), refuses to go on unless the pipeline can
// produce the bundle's features, and classifies a few windows.
func demoLive(w io.Writer, m *inference.Model, spec features.PipelineSpec) error {
	want := m.Spec().Features
	scores := make([]float32, len(m.Classes()))
	var vec []float32
	for i, st := range synthetic.States {
		cfg := sensors.Config{Kind: "synthetic", State: st.String(), Seed: 1000 + uint64(i)}
		// Virtual time: the windows are computed at once instead of at 1 kHz.
		src, err := sensors.OpenWith(cfg, &sensors.Env{Clock: demoClock{}})
		if err != nil {
			return err
		}
		if err := features.CanProduce(spec, src.Channels(), want); err != nil {
			src.Close()
			return fmt.Errorf("the model's features do not fit the sensors: %w", err)
		}
		p, err := features.NewPipelineFor(spec, src.Channels(), want)
		if err != nil {
			src.Close()
			return err
		}
		var got []string
		for len(got) < 5 {
			r, err := src.Read(context.Background())
			if err != nil {
				src.Close()
				return err
			}
			ready, err := p.Push(r.Values)
			if err != nil {
				src.Close()
				return err
			}
			if !ready {
				continue
			}
			vec = p.Vector(vec)
			c, err := m.Predict(scores, vec)
			if err != nil {
				src.Close()
				return err
			}
			got = append(got, m.Classes()[c])
		}
		src.Close()
		fmt.Fprintf(w, "   machine in state %-13s → 5 windows classified as %s\n", st, strings.Join(got, ", "))
	}
	return nil
}

// demoClock is a clock whose Sleep returns at once, so the paced synthetic
// source runs as fast as the CPU allows.
type demoClock struct{}

func (demoClock) Now() time.Time { return time.Now() }
func (demoClock) Sleep(ctx context.Context, d time.Duration) error {
	return ctx.Err()
}

func runCirclesDemo(e *env, dir string) error {
	w := e.stdout
	start := time.Now()
	dir, cleanup, err := demoDir(dir)
	if err != nil {
		return err
	}
	defer cleanup()
	train := training.TwoCircles(4000, 0.5, 0.1, 1)
	test := training.TwoCircles(2000, 0.5, 0.1, 2)
	fmt.Fprintf(w, "1. data: two concentric noisy circles (the paper's figure), %d training and %d test points\n", train.N, test.N)
	fmt.Fprintln(w, "   no straight line separates them; a Gaussian kernel does")

	prog := &progress{e: e}
	cfg := &training.Config{P: 1024, Seed: 1, SigmaGrid: []float64{0.125, 0.25, 0.5, 1}, CGrid: []float64{0.1, 1, 10}, Progress: prog.report}
	fmt.Fprintf(w, "2. training: p = %d embedding bits, ternary weights, σ and C searched on a validation split\n", cfg.P)
	res, err := training.Train(train, cfg)
	prog.finish()
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "   chose σ = %g, C = %g; %d of %d coefficients non-zero; %.1f s\n", res.Sigma, res.C, res.NonZero, cfg.P, res.TrainSeconds)

	m, _, _, err := demoRoundTrip(w, filepath.Join(dir, "circles.model"), res, train, test, "test points")
	if err != nil {
		return err
	}

	x := []float32{0.05, -0.4}
	scores := make([]float32, 2)
	c, err := m.Predict(scores, x)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\n5. one prediction: point (%g, %g) → %q (scores %.3f, %.3f)\n", x[0], x[1], m.Classes()[c], scores[0], scores[1])
	fmt.Fprintf(w, "\ndemo finished in %.1f s\n", time.Since(start).Seconds())
	return nil
}

// demoRoundTrip writes the trained model as a bundle to path (the one
// bundle path, training.Result.Bundle), reads it back and evaluates what
// was read on test (steps 3 and 4 of both demos).
func demoRoundTrip(w io.Writer, path string, res *training.Result, train, test *data.Dataset, what string) (*inference.Model, *training.Evaluation, int, error) {
	raw, err := res.Bundle(train, training.BundleMeta{ModelID: modelIDFromPath(path), Release: 1})
	if err != nil {
		return nil, nil, 0, fmt.Errorf("%s: %w", path, err)
	}
	if err := writeFileAtomic(path, raw, 0o644, true); err != nil {
		return nil, nil, 0, err
	}
	size := len(raw)
	m, _, err := readModelSized(path)
	if err != nil {
		return nil, nil, 0, err
	}
	fmt.Fprintf(w, "3. model bundle written and read back: %s, %d bytes\n", path, size)
	ev, err := training.Evaluate(m, test, 0)
	if err != nil {
		return nil, nil, 0, err
	}
	fmt.Fprintf(w, "4. test accuracy: %.2f%% (%d of %d %s)\n\n", ev.Accuracy, ev.Correct, ev.N, what)
	printConfusion(w, ev)
	return m, ev, size, nil
}
