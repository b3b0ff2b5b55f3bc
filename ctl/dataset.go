package ctl

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/BurntSushi/toml"
	"github.com/spf13/cobra"

	"github.com/trit-iot/trit/sensors/features"
	"github.com/trit-iot/trit/sensors/synthetic"
	"github.com/trit-iot/trit/training/data"
)

// dataFlags are the flags that say how to read a dataset file.
type dataFlags struct {
	format      string
	labelColumn int
	numFeatures int
	standard    string
	dataDir     string
}

func (f *dataFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.format, "format", "auto", "data format: auto, libsvm, idx or dense")
	cmd.Flags().IntVar(&f.labelColumn, "label-column", 0, "dense text: 0-based column of the label, -1 for the last")
	cmd.Flags().IntVar(&f.numFeatures, "features", 0, "LIBSVM: number of features (0: the largest index seen)")
	cmd.Flags().StringVar(&f.standard, "standard", "", "use a standard dataset by name (usps, mnist, covtype, ijcnn1, cod-rna, a9a, w8a) from --data-dir")
	cmd.Flags().StringVar(&f.dataDir, "data-dir", defaultDataDir(), "directory of the standard datasets (env TRIT_DATA)")
}

func defaultDataDir() string {
	if d := os.Getenv("TRIT_DATA"); d != "" {
		return d
	}
	return filepath.Join("..", "shared", "data")
}

func (f *dataFlags) options() (*data.Options, error) {
	o := &data.Options{LabelColumn: f.labelColumn, NumFeatures: f.numFeatures}
	switch f.format {
	case "auto":
		o.Format = data.FormatAuto
	case "libsvm":
		o.Format = data.FormatLIBSVM
	case "idx":
		o.Format = data.FormatIDX
	case "dense":
		o.Format = data.FormatDense
	default:
		return nil, usagef("--format %q: want auto, libsvm, idx or dense", f.format)
	}
	return o, nil
}

// load reads the dataset at path with the flags' options.
func (f *dataFlags) load(path string) (*data.Dataset, error) {
	o, err := f.options()
	if err != nil {
		return nil, err
	}
	return data.Load(path, o)
}

// standardSets loads the standard train and test split named by --standard.
func (f *dataFlags) standardSets() (train, test *data.Dataset, err error) {
	train, test, err = data.LoadStandard(f.dataDir, f.standard)
	if err != nil {
		return nil, nil, fmt.Errorf("standard dataset %s in %s: %w", f.standard, f.dataDir, err)
	}
	return train, test, nil
}

// Simulated datasets for `tritctl train --synthetic`.
const syntheticMachine = "machine"

// syntheticFlags say how to simulate a training set instead of reading one.
type syntheticFlags struct {
	name     string // "" or syntheticMachine
	features string // TOML file with a [features] table (an agent config); "": the built-in spec
	perState int
	holdOut  float64
}

func (f *syntheticFlags) add(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.name, "synthetic", "", `simulate the training data instead of reading a file: "machine" (vibrating machines: normal, imbalance, bearing_fault)`)
	fl.StringVar(&f.features, "features-from", "", "--synthetic: TOML file whose [features] table is the agent's feature pipeline, e.g. the agent's config file (default: the built-in machine pipeline)")
	fl.IntVar(&f.perState, "per-state", demoPerState, "--synthetic: simulated machines per state")
	fl.Float64Var(&f.holdOut, "hold-out", demoHoldOut, "--synthetic: fraction of the machines held out as the test set")
}

// pipelineSpec returns the feature pipeline the simulated machines go
// through: the [features] table of --features-from, else the built-in one
// the demo agents use. Reading the agent's own config is what makes the
// model's feature names those the agent computes.
func (f *syntheticFlags) pipelineSpec() (features.PipelineSpec, error) {
	if f.features == "" {
		return synthetic.DefaultSpec(), nil
	}
	raw, err := readFileCapped(f.features, 1<<20)
	if err != nil {
		return features.PipelineSpec{}, fmt.Errorf("--features-from: %w", err)
	}
	spec, err := parseFeaturesTable(string(raw))
	if err != nil {
		return features.PipelineSpec{}, fmt.Errorf("--features-from %s: %w", f.features, err)
	}
	return spec, nil
}

// parseFeaturesTable returns the validated [features] table of a TOML
// document. Only that table is read; the rest of an agent config is the
// agent's business (trit-agent check-config validates it).
func parseFeaturesTable(doc string) (features.PipelineSpec, error) {
	var v struct {
		Features *features.PipelineSpec `toml:"features"`
	}
	if _, err := toml.Decode(doc, &v); err != nil {
		return features.PipelineSpec{}, err
	}
	if v.Features == nil {
		return features.PipelineSpec{}, errors.New("no [features] table")
	}
	if err := v.Features.Validate(); err != nil {
		return features.PipelineSpec{}, err
	}
	return *v.Features, nil
}

// sets simulates the dataset named by --synthetic and splits it into a
// training and a held-out test set.
func (f *syntheticFlags) sets(seed uint64) (train, test *data.Dataset, err error) {
	if f.name != syntheticMachine {
		return nil, nil, usagef("--synthetic %q: want %s", f.name, syntheticMachine)
	}
	if f.perState < 10 {
		return nil, nil, usagef("--per-state %d: want at least 10", f.perState)
	}
	if !(f.holdOut > 0 && f.holdOut < 1) {
		return nil, nil, usagef("--hold-out %v: want a fraction in (0, 1)", f.holdOut)
	}
	spec, err := f.pipelineSpec()
	if err != nil {
		return nil, nil, err
	}
	ds, err := machineDataset(spec, f.perState, seed)
	if err != nil {
		return nil, nil, err
	}
	return data.Split(ds, f.holdOut, seed)
}
