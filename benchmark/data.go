package benchmark

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/trit-iot/trit/training"
	"github.com/trit-iot/trit/training/data"
)

// dataFlags say which data to use: standard datasets by name, or a file
// read with the loader's detection (format, header, label column) and an
// optional --label-column. tritctl has the full set of reading flags; a
// benchmark runs on the standard splits.
type dataFlags struct {
	standard    string
	dataDir     string
	labelColumn string
}

func (f *dataFlags) add(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.standard, "standard", "", "comma-separated standard datasets ("+strings.Join(data.StandardNames(), ", ")+") from --data-dir")
	fl.StringVar(&f.dataDir, "data-dir", defaultDataDir(), "directory of the standard datasets (env TRIT_DATA)")
	fl.StringVar(&f.labelColumn, "label-column", "", "TRAIN_FILE: the label column, as in tritctl train (default: detected)")
}

// defaultDataDir is data.DefaultDir: $TRIT_DATA, else ../shared/data
// from here or the nearest parent directory that has one.
func defaultDataDir() string { return data.DefaultDir() }

// names returns the --standard names.
func (f *dataFlags) names() []string {
	var out []string
	for _, s := range strings.Split(f.standard, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// loadStandard reads a standard dataset's train and test split exactly as
// `tritctl train --standard` does.
func (f *dataFlags) loadStandard(name string) (train, test *data.Dataset, err error) {
	train, test, err = data.LoadStandard(f.dataDir, name)
	if err != nil {
		return nil, nil, fmt.Errorf("standard dataset %s in %s: %w", name, f.dataDir, err)
	}
	return train, test, nil
}

// load reads a training file.
func (f *dataFlags) load(path string) (*data.Dataset, error) {
	o := &data.Options{}
	if f.labelColumn != "" {
		c, err := data.ParseColumn(f.labelColumn)
		if err != nil {
			return nil, usagef("--label-column: %v", err)
		}
		o.LabelColumn = c
	}
	return data.Load(path, o)
}

// loadTest reads a test file the way train was read and gives it the
// training set's classes.
func (f *dataFlags) loadTest(path string, train *data.Dataset) (*data.Dataset, error) {
	var o *data.Options
	if train.Spec != nil {
		o = train.Spec.Options()
	} else {
		o = &data.Options{NumFeatures: train.D, Features: train.Features}
	}
	test, err := data.Load(path, o)
	if err != nil {
		return nil, err
	}
	if test.D != train.D {
		return nil, fmt.Errorf("%s has %d features, the training data %d", path, test.D, train.D)
	}
	if err := test.Relabel(train.Classes); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return test, nil
}

// childArgs returns the flags that make a child process read data as this
// one does.
func (f *dataFlags) childArgs() []string {
	args := []string{"--data-dir", f.dataDir}
	if f.labelColumn != "" {
		args = append(args, "--label-column", f.labelColumn)
	}
	return args
}

// progress prints training events as plain lines, at most every few
// seconds and at each stage's end; quiet turns it off.
type progress struct {
	e     *env
	quiet bool
	mu    sync.Mutex
	stage string
	last  time.Time
}

func (p *progress) report(ev training.Event) {
	if p.quiet {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if ev.Stage != p.stage || ev.Done == ev.Total || time.Since(p.last) > 5*time.Second {
		fmt.Fprintf(p.e.stderr, "%s: %d/%d\n", ev.Stage, ev.Done, ev.Total)
		p.stage, p.last = ev.Stage, time.Now()
	}
}
