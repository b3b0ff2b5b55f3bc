package tritctl

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/spf13/cobra"

	"github.com/trit-iot/trit/internal/cli"
	"github.com/trit-iot/trit/sensors/features"
	"github.com/trit-iot/trit/sensors/synthetic"
	"github.com/trit-iot/trit/training/data"
)

// dataFlags are the flags that say how to read a dataset file; train and eval
// share them. Columns are numbered from 1, as in error messages.
type dataFlags struct {
	format        string
	header        string
	labelColumn   string
	timeColumns   []string
	timeOrdered   bool
	shuffled      bool
	refuseMissing bool
	keepRowNums   bool
	delimiter     string
	decimal       string
	ignore        []string
	groupColumn   string
	skipUnlabel   bool
	numFeatures   int
	standard      string
	dataDir       string
	cmd           *cobra.Command // to tell which flags were given
	notes         io.Writer      // where loadTest says how it read a test file (nil: nowhere)
}

// dataReadFlags are the flags that say how to read a file (as opposed to
// which file): eval reads with the model's read spec unless one is given.
var dataReadFlags = []string{"format", "header", "label-column", "time-column", "time-ordered", "shuffled", "refuse-missing", "keep-row-numbers", "delimiter", "decimal", "ignore-column", "group-column", "skip-unlabelled", "features"}

func (f *dataFlags) add(cmd *cobra.Command) {
	fl := cmd.Flags()
	f.cmd = cmd
	fl.StringVar(&f.format, "format", "auto", "data format: auto, csv (delimited text, also called dense), arff, libsvm or idx")
	fl.StringVar(&f.header, "header", "auto", "CSV: the first row names the columns: auto (detect), yes or no")
	fl.StringVar(&f.labelColumn, "label-column", "", "CSV/ARFF: the label column: a header name, a column number counted from 1, or last\n(default: the one column named label, class, target or y, else the last column)")
	fl.StringSliceVar(&f.timeColumns, "time-column", nil, "CSV/ARFF: time-stamp column, by name or number from 1; repeat or comma-separate (a date column\nand a time column make one time stamp); none: no time column (default: detect, by the header\nnames time, timestamp, date, datetime or by values that are dates). Time columns order the\nrows and are not features")
	fl.BoolVar(&f.timeOrdered, "time-ordered", false, "the rows are a recording in time order, oldest first, even without a time column\n(default: detected from the rows; docs/TRAINING.md)")
	fl.BoolVar(&f.refuseMissing, "refuse-missing", false, "CSV/ARFF: a missing value (empty, ?, NA, N/A, NaN, nan, null) is an error\n(default: read as missing; it takes the middle of its feature's range)")
	fl.BoolVar(&f.shuffled, "shuffled", false, "the rows are independent samples in no particular order, not a recording\n(default: detected from the rows; docs/TRAINING.md)")
	fl.BoolVar(&f.keepRowNums, "keep-row-numbers", false, "CSV/ARFF: keep a column that holds just the row number (each value one more than the one before,\nas R and pandas write an index) as a feature (default: left out, and said so)")
	fl.StringVar(&f.delimiter, "delimiter", "auto", "CSV: column delimiter: auto (',', ';' or tab, else white space), tab, space (runs of white space) or one character")
	fl.StringVar(&f.decimal, "decimal", "auto", "CSV: the numbers' decimal mark: auto (a decimal comma, \"14,03\", is detected when the delimiter is not ','), . or ,")
	fl.StringSliceVar(&f.ignore, "ignore-column", nil, "CSV/ARFF: column to skip, by name or number from 1; repeat or comma-separate")
	fl.StringVar(&f.groupColumn, "group-column", "", "CSV/ARFF: the column naming each row's group — the person, device, room or site it was recorded\nfor — by name or number from 1; none: no group column. Not a feature: the model is validated\nby leaving whole groups out, as it will meet new ones (default: a column named user, subject,\nperson, participant, patient, device, phone, room, site, station or location, with or without \"id\")")
	fl.BoolVar(&f.skipUnlabel, "skip-unlabelled", false, "CSV/ARFF: drop rows whose label is missing (empty, ?, NA, NaN, null …) and say how many\n(default: such a row is an error)")
	fl.IntVar(&f.numFeatures, "features", 0, "LIBSVM: number of features (0: the largest index seen, if the file holds at least 1 value in 64 of its dense matrix)")
	fl.StringVar(&f.standard, "standard", "", "use a standard dataset by name ("+strings.Join(data.StandardNames(), ", ")+") from --data-dir")
	fl.StringVar(&f.dataDir, "data-dir", defaultDataDir(), "directory of the standard datasets (default: $TRIT_DATA, else ../shared/data here or in the nearest parent directory that has one)")
}

// defaultDataDir is data.DefaultDir: $TRIT_DATA, else ../shared/data
// from here or the nearest parent directory that has one.
func defaultDataDir() string { return data.DefaultDir() }

// given reports whether any flag that says how to read a file was given.
func (f *dataFlags) given() bool { return len(f.givenNames()) > 0 }

// givenNames returns the flags that say how to read a file that were
// given, as --name.
func (f *dataFlags) givenNames() []string {
	var names []string
	for _, name := range dataReadFlags {
		if f.cmd != nil && f.cmd.Flags().Changed(name) {
			names = append(names, "--"+name)
		}
	}
	return names
}

// standardOnly refuses the flags that say how to read a file beside
// --standard: a standard dataset is read as docs/DATA.md defines it.
func (f *dataFlags) standardOnly() error {
	if f.standard == "" {
		return nil
	}
	return f.noReadFlags("--standard reads its dataset as docs/DATA.md defines it: give no data flags with it, or give its file to read it another way")
}

// noReadFlags refuses, saying why and naming them, the flags that say how
// to read a file, for data that is not read from one: a flag that would
// change nothing must not be taken silently.
func (f *dataFlags) noReadFlags(why string) error {
	if names := f.givenNames(); len(names) > 0 {
		return usagef("%s (given: %s)", why, strings.Join(names, ", "))
	}
	return nil
}

// options converts the flags to data.Options; a bad value is a usage error.
func (f *dataFlags) options() (*data.Options, error) {
	bad := func(flag string, err error) error { return &cli.UsageError{Err: fmt.Errorf("--%s: %w", flag, err)} }
	format, err := data.ParseFormat(f.format)
	if err != nil {
		return nil, bad("format", err)
	}
	header, err := data.ParseHeader(f.header)
	if err != nil {
		return nil, bad("header", err)
	}
	delim, err := data.ParseDelimiter(f.delimiter)
	if err != nil {
		return nil, bad("delimiter", err)
	}
	decimal, err := data.ParseDecimal(f.decimal)
	if err != nil {
		return nil, bad("decimal", err)
	}
	if f.timeOrdered && f.shuffled {
		return nil, usagef("--time-ordered and --shuffled contradict each other")
	}
	o := &data.Options{Format: format, NumFeatures: f.numFeatures, Header: header, Delimiter: delim, Decimal: decimal, Ordered: f.timeOrdered, Shuffled: f.shuffled, RefuseMissing: f.refuseMissing, KeepRowNumbers: f.keepRowNums, SkipUnlabelled: f.skipUnlabel}
	switch g := strings.TrimSpace(f.groupColumn); {
	case strings.EqualFold(g, "none"):
		o.NoGroup = true
	case g != "":
		if o.GroupColumn, err = data.ParseColumn(g); err != nil {
			return nil, bad("group-column", err)
		}
	}
	if f.labelColumn != "" {
		if o.LabelColumn, err = data.ParseColumn(f.labelColumn); err != nil {
			return nil, bad("label-column", err)
		}
	}
	for _, s := range f.timeColumns {
		if strings.EqualFold(strings.TrimSpace(s), "none") {
			o.NoTime = true
			continue
		}
		c, err := data.ParseColumn(s)
		if err != nil {
			return nil, bad("time-column", err)
		}
		o.TimeColumns = append(o.TimeColumns, c)
	}
	if o.NoTime && len(o.TimeColumns) > 0 {
		return nil, usagef("--time-column none cannot be combined with time columns")
	}
	for _, s := range f.ignore {
		c, err := data.ParseColumn(s)
		if err != nil {
			return nil, bad("ignore-column", err)
		}
		o.Ignore = append(o.Ignore, c)
	}
	return o, nil
}

// load reads the dataset at path with the flags' options.
func (f *dataFlags) load(path string) (*data.Dataset, error) {
	o, err := f.options()
	if err != nil {
		return nil, err
	}
	ds, err := data.Load(path, o)
	if errors.Is(err, data.ErrNoColumn) {
		// A column named by a flag (--label-column, --time-column, …)
		// that the file does not have: a bad flag value (exit code 2).
		return nil, &cli.UsageError{Err: err}
	}
	return ds, err
}

// loadTest reads a test file the way train was read (train.Spec: the same
// label column, the feature columns by name in the training order, so a
// test file may order its columns differently or have more), and gives it
// the training set's classes. Data made in memory (no Spec) is matched by
// the flags.
func (f *dataFlags) loadTest(path string, train *data.Dataset) (*data.Dataset, error) {
	var o *data.Options
	if train.Spec != nil {
		o = train.Spec.Options()
		o.Ordered = f.timeOrdered
	} else {
		var err error
		if o, err = f.options(); err != nil {
			return nil, err
		}
		if o.NumFeatures == 0 && o.Format != data.FormatIDX {
			o.NumFeatures = train.D
		}
		o.Features = train.Features
	}
	note := ""
	if !f.changed("delimiter") && !f.changed("decimal") {
		note = ownDelimiter(o, path)
	}
	test, err := data.Load(path, o)
	if err != nil {
		if errors.Is(err, data.ErrColumn) && train.Spec != nil {
			how := "read as the training file was"
			if note != "" {
				how = note
			}
			err = fmt.Errorf("%w (the test file is %s: %s; give --delimiter, --header or --label-column if it differs)", err, how, train.Spec.Describe())
		}
		return nil, err
	}
	if note != "" && f.notes != nil {
		fmt.Fprintf(f.notes, "%s\n", note)
	}
	if test.D != train.D {
		return nil, fmt.Errorf("%s has %d features, the training data %d", path, test.D, train.D)
	}
	if err := test.Relabel(train.Classes); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return test, nil
}

// changed reports whether flag name was given.
func (f *dataFlags) changed(name string) bool { return f.cmd != nil && f.cmd.Flags().Changed(name) }

// ownDelimiter lets a file read with another file's read spec (train
// --test, eval) keep a delimiter of its own: a comma-separated test file
// for a ';' training file. Only a delimiter detection finds is replaced
// (one given to read the training file, such as '|', is kept), and with a
// new delimiter the decimal mark is detected again. It returns a note
// saying so when the delimiter changed, else "".
func ownDelimiter(o *data.Options, path string) string {
	if o.Format != data.FormatCSV || !strings.ContainsRune(",;\t ", o.Delimiter) {
		return ""
	}
	d, err := data.SniffDelimiter(path)
	if err != nil || d == o.Delimiter {
		return "" // an error is the Load's to report
	}
	note := fmt.Sprintf("reading %s with its own delimiter %s (the training file's is %s)", filepath.Base(path), delimiterName(d), delimiterName(o.Delimiter))
	o.Delimiter, o.Decimal = d, 0
	return note
}

func delimiterName(d rune) string {
	switch d {
	case ' ':
		return "white space"
	case '\t':
		return "tab"
	}
	return fmt.Sprintf("%q", d)
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
	raw, err := readFileCapped(f.features, "configuration file", 1<<20)
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
