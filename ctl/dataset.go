package ctl

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

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
