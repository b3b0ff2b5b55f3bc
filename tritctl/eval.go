package tritctl

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/spf13/cobra"

	"github.com/trit-iot/trit/inference"
	"github.com/trit-iot/trit/inference/bundle"
	"github.com/trit-iot/trit/internal/cli"
	"github.com/trit-iot/trit/training"
	"github.com/trit-iot/trit/training/data"
)

type evalSummary struct {
	Model      string                `json:"model"`
	Dataset    string                `json:"dataset"`
	Read       string                `json:"read"` // how the data file was read (data.ReadSpec text form)
	Accuracy   float64               `json:"accuracy"`
	Balanced   float64               `json:"balanced_accuracy"` // mean per-class recall, percent
	PerClass   []training.ClassScore `json:"per_class"`
	Rows       int                   `json:"rows"`
	Correct    int                   `json:"correct"`
	P          int                   `json:"p"`
	Classes    []string              `json:"classes"`
	NonZero    int                   `json:"nonzero"`
	ModelBytes int                   `json:"model_bytes"`
	ModelID    string                `json:"model_id"`
	Release    uint64                `json:"release"`
	Signed     bool                  `json:"signed"` // a signature is present; eval does not verify it
	Confusion  [][]int               `json:"confusion"`
	// TrainSeconds is not known to eval; it is present for scripts that read
	// train and eval output alike.
	TrainSeconds float64 `json:"train_seconds"`
	// Confidence: coverage, accuracy on the answered windows, calibration
	// (ECE of the shipped confidence and of the raw scores' softmax) and
	// accuracy-vs-coverage (training.EvaluateConfidence).
	Confidence *training.ConfidenceReport `json:"confidence"`
}

func newEvalCmd(e *env) *cobra.Command {
	var df dataFlags
	var asJSON bool
	var workers int
	var minConf float64
	var maxNovelty int64
	var split string
	cmd := &cobra.Command{
		Use:   "eval [flags] BUNDLE DATA_FILE  |  eval [flags] BUNDLE --standard NAME",
		Short: "Evaluate a model bundle on labelled data: accuracy and confusion matrix",
		Long: `eval reads a bundle (signed or not; the signature is not checked — use
'tritctl bundle verify' for that), runs its self-test, and classifies every
row of DATA_FILE with it.

DATA_FILE is read the way the model's training file was read (the bundle
records it: format, delimiter, header, label column, time columns; a file
with a delimiter of its own, such as ',' for a ';' training file, keeps
it), with
the feature columns found by name, so the columns may come in another order
and extra columns are ignored. Any data flag (--format, --header,
--label-column, …) replaces that record; the model's feature names are
still matched against the file's header when it has one.

With --standard NAME instead of DATA_FILE, the data is the test split of
that standard dataset (in --data-dir, docs/DATA.md), as 'tritctl train
--standard NAME' evaluates it (--split train: its training split).

A calibrated bundle (format 5) also reports confidence and unknown: the
coverage (windows answered), accuracy on the answered windows, how many
were unknown on confidence and on novelty, the expected calibration error
of the shipped confidence beside that of the raw scores' softmax, the
reliability per confidence value, accuracy at coverages from 100% down to
50%, and the unknown rate per tenth of the rows. --min-confidence and
--max-novelty replace the bundle's thresholds, as an agent's config can.`,
		Example: `  tritctl eval room.trit room-next-week.csv          # read as the model's training file was
  tritctl eval room.trit room-next-week.csv --label-column Occupancy --json   # flags instead of the record
  tritctl eval occupancy.trit --standard occupancy --data-dir ../shared/data`,
		Args: func(cmd *cobra.Command, args []string) error {
			switch {
			case df.standard == "" && len(args) != 2:
				return usagef("give BUNDLE and DATA_FILE, or BUNDLE and --standard NAME (got %d arguments)", len(args))
			case df.standard != "" && len(args) != 1:
				return usagef("with --standard give only BUNDLE: the data is the standard dataset's test split")
			case df.standard != "" && df.given():
				return df.standardOnly()
			case split != "test" && split != "train":
				return usagef("--split %q: want test or train", split)
			case split == "train" && df.standard == "":
				return usagef("--split train needs --standard")
			case minConf > 1 || math.IsNaN(minConf):
				return usagef("--min-confidence %g: want 0..1, or negative for the bundle's", minConf)
			case maxNovelty > math.MaxUint32:
				return usagef("--max-novelty %d: at most %d", maxNovelty, uint32(math.MaxUint32))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			raw, err := readFileCapped(args[0], "bundle file", maxFileSize)
			if err != nil {
				return err
			}
			m, br, err := decodeModel(args[0], raw)
			if err != nil {
				return err
			}
			if !m.Calibrated() && (minConf > 0 || maxNovelty > 0) {
				// Without a calibration nothing is unknown: a threshold
				// given would change nothing, and must not look as if it did.
				return usagef("--min-confidence and --max-novelty set the unknown thresholds of a calibrated bundle (format 5): %s has no calibration", args[0])
			}
			var ds *data.Dataset
			if df.standard != "" {
				ds, err = evalStandard(&df, m, split)
			} else {
				if !asJSON {
					df.notes = e.stderr
				}
				ds, err = evalData(&df, args[1], m, readSpecOf(br.Bundle))
			}
			if err != nil {
				return err
			}
			ev, err := training.Evaluate(m, ds, workers)
			if err != nil {
				return err
			}
			spec := m.Spec()
			nz := 0
			for v := range spec.NonZero {
				for _, w := range spec.NonZero[v] {
					nz += popcount(w)
				}
			}
			s := evalSummary{Model: args[0], Dataset: ds.Name, Read: ds.Spec.String(), Accuracy: ev.Accuracy, Balanced: ev.Balanced, PerClass: ev.PerClass, Rows: ev.N, Correct: ev.Correct,
				P: spec.Transform.P, Classes: ev.Classes, NonZero: nz, ModelBytes: len(raw), Confusion: ev.Confusion,
				ModelID: br.ModelID, Release: br.Release, Signed: br.Signed}
			th := m.Thresholds()
			if minConf >= 0 {
				th.MinConfidence = uint8(math.Round(255 * minConf))
			}
			if maxNovelty >= 0 {
				th.MaxNovelty = uint32(maxNovelty)
			}
			if s.Confidence, err = training.EvaluateConfidence(m, ds, th, workers); err != nil {
				return err
			}
			if asJSON {
				return writeJSON(e.stdout, s)
			}
			fmt.Fprintf(e.stdout, "%s on %s: accuracy %.2f%% (%d of %d), balanced %.2f%%\n", args[0], ds.Name, ev.Accuracy, ev.Correct, ev.N, ev.Balanced)
			fmt.Fprintf(e.stdout, "  read as: %s\n", ds.Spec.Describe())
			printConfidence(e.stdout, s.Confidence)
			fmt.Fprintln(e.stdout)
			printConfusion(e.stdout, ev)
			return nil
		},
	}
	df.add(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object instead of text")
	cmd.Flags().IntVar(&workers, "workers", 0, "goroutines (0: all cores)")
	cmd.Flags().Float64Var(&minConf, "min-confidence", -1, "unknown below this calibrated confidence, 0..1 (0: never; negative: the bundle's)")
	cmd.Flags().Int64Var(&maxNovelty, "max-novelty", -1, "unknown above this novelty (0: never; negative: the bundle's)")
	cmd.Flags().StringVar(&split, "split", "test", "with --standard: evaluate the test or the train split")
	return cmd
}

// printConfidence writes the confidence and unknown lines of eval.
func printConfidence(w io.Writer, r *training.ConfidenceReport) {
	if !r.Calibrated {
		fmt.Fprintf(w, "  confidence: the bundle has no calibration (format 5 carries one); raw softmax ECE %.2f%%\n", r.RawECE)
		return
	}
	fmt.Fprintf(w, "  unknown: %d of %d (%.2f%%: %s); coverage %.2f%%, accuracy on answered %.2f%% (all %.2f%%)\n",
		r.Unknown, r.Rows, 100-r.Coverage, unknownReasons(r), r.Coverage, r.Answered, r.Accuracy)
	fmt.Fprintf(w, "  calibration: ECE %.2f%% shipped confidence, %.2f%% raw softmax\n", r.ECE, r.RawECE)
	fmt.Fprint(w, "  reliability (confidence: rows, accuracy):")
	for _, b := range r.Reliability {
		fmt.Fprintf(w, " %.1f%%: %d, %.1f%%;", b.Confidence, b.Rows, b.Accuracy)
	}
	fmt.Fprint(w, "\n  accuracy vs coverage:")
	for _, p := range r.Curve {
		fmt.Fprintf(w, " %.0f%% → %.2f%%;", p.Coverage, p.Accuracy)
	}
	fmt.Fprint(w, "\n  unknown by tenth of the rows:")
	for _, u := range r.Segments {
		fmt.Fprintf(w, " %.2f%%", u)
	}
	fmt.Fprintln(w)
}

// unknownReasons says why windows were unknown, in counts that add up to
// the unknown ones: a window both below the confidence floor and too novel
// is counted once, as both.
func unknownReasons(r *training.ConfidenceReport) string {
	both := max(0, r.LowConf+r.Novel-r.Unknown)
	conf := fmt.Sprintf("confidence < %d/255", r.Thresholds.MinConfidence)
	novel := fmt.Sprintf("novelty > %d", r.Thresholds.MaxNovelty)
	if both == 0 {
		return fmt.Sprintf("%d on %s, %d on %s", r.LowConf, conf, r.Novel, novel)
	}
	return fmt.Sprintf("%d on %s alone, %d on %s alone, %d on both", r.LowConf-both, conf, r.Novel-both, novel, both)
}

// evalStandard returns the test split of the standard dataset --standard
// names, with the model's classes; its features must be the model's.
func evalStandard(df *dataFlags, m *inference.Model, split string) (*data.Dataset, error) {
	train, ds, err := df.standardSets()
	if err != nil {
		return nil, err
	}
	if split == "train" {
		ds = train
	}
	want := m.Spec().Features
	switch {
	case ds.D != m.NumFeatures():
		return nil, fmt.Errorf("%s has %d features, the model takes %d: it was not trained on %s", df.standard, ds.D, m.NumFeatures(), df.standard)
	case want != nil && ds.Features != nil && !slices.Equal(want, ds.Features):
		return nil, fmt.Errorf("%s's features are %q, the model's %q: it was not trained on %s", df.standard, ds.Features, want, df.standard)
	}
	if err := ds.Relabel(m.Classes()); err != nil {
		return nil, fmt.Errorf("%s: %w", df.standard, err)
	}
	ds.Name = df.standard + " (" + split + " split)"
	return ds, nil
}

// readSpecOf returns the read spec a bundle carries (data.ReadSpec text
// form: how its training file was read; bundle.InfoRead), or "" if it
// carries none.
func readSpecOf(b *bundle.Bundle) string { return b.Info[bundle.InfoRead] }

// evalData reads eval's data file: with spec (the model's read spec) when
// no data flag is given, else with the flags, matching the model's feature
// names to the file's header if both have names. The rows get the model's
// classes.
func evalData(df *dataFlags, path string, m *inference.Model, spec string) (*data.Dataset, error) {
	var o *data.Options
	if spec != "" && !df.given() {
		rs, err := data.ParseReadSpec(spec)
		if err != nil {
			return nil, fmt.Errorf("the model's record of how its training data was read: %w (give data flags such as --label-column to read %s)", err, path)
		}
		// The spec leaves the feature names to the bundle's compat section.
		if rs.Features == nil {
			rs.Features = m.Spec().Features
		}
		o = rs.Options()
		if note := ownDelimiter(o, path); note != "" && df.notes != nil {
			fmt.Fprintln(df.notes, note)
		}
	} else {
		var err error
		if o, err = df.options(); err != nil {
			return nil, err
		}
		if o.NumFeatures == 0 && o.Format != data.FormatIDX {
			o.NumFeatures = m.NumFeatures()
		}
		if o.Features == nil {
			o.Features = m.Spec().Features
		}
	}
	ds, err := data.Load(path, o)
	if err != nil {
		if df.given() && errors.Is(err, data.ErrNoColumn) {
			return nil, &cli.UsageError{Err: err} // a column a flag names: a bad flag value
		}
		return nil, err
	}
	if err := ds.Relabel(m.Classes()); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return ds, nil
}

func popcount(x uint64) int {
	n := 0
	for ; x != 0; x &= x - 1 {
		n++
	}
	return n
}
