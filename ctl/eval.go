package ctl

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/trit-iot/trit/training"
	"github.com/trit-iot/trit/training/data"
)

type evalSummary struct {
	Model      string   `json:"model"`
	Dataset    string   `json:"dataset"`
	Accuracy   float64  `json:"accuracy"`
	Rows       int      `json:"rows"`
	Correct    int      `json:"correct"`
	P          int      `json:"p"`
	Classes    []string `json:"classes"`
	NonZero    int      `json:"nonzero"`
	ModelBytes int      `json:"model_bytes"`
	ModelID    string   `json:"model_id"`
	Release    uint64   `json:"release"`
	Signed     bool     `json:"signed"` // a signature is present; eval does not verify it
	Confusion  [][]int  `json:"confusion"`
	// TrainSeconds is not known to eval; it is present for scripts that read
	// train and eval output alike.
	TrainSeconds float64 `json:"train_seconds"`
}

func newEvalCmd(e *env) *cobra.Command {
	var df dataFlags
	var asJSON bool
	var workers int
	cmd := &cobra.Command{
		Use:   "eval [flags] BUNDLE DATA_FILE",
		Short: "Evaluate a model bundle on labelled data: accuracy and confusion matrix",
		Long: `eval reads a bundle (signed or not; the signature is not checked — use
'tritctl bundle verify' for that), runs its self-test, and classifies every
row of DATA_FILE with it.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			raw, err := readFileCapped(args[0], maxFileSize)
			if err != nil {
				return err
			}
			m, br, err := decodeModel(args[0], raw)
			if err != nil {
				return err
			}
			opt, err := df.options()
			if err != nil {
				return err
			}
			if opt.NumFeatures == 0 && opt.Format != data.FormatDense {
				opt.NumFeatures = m.NumFeatures()
			}
			ds, err := data.Load(args[1], opt)
			if err != nil {
				return err
			}
			if err := ds.Relabel(m.Classes()); err != nil {
				return fmt.Errorf("%s: %w", args[1], err)
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
			s := evalSummary{Model: args[0], Dataset: ds.Name, Accuracy: ev.Accuracy, Rows: ev.N, Correct: ev.Correct,
				P: spec.Transform.P, Classes: ev.Classes, NonZero: nz, ModelBytes: len(raw), Confusion: ev.Confusion,
				ModelID: br.ModelID, Release: br.Release, Signed: br.Signed}
			if asJSON {
				return writeJSON(e.stdout, s)
			}
			fmt.Fprintf(e.stdout, "%s on %s: accuracy %.2f%% (%d of %d)\n\n", args[0], ds.Name, ev.Accuracy, ev.Correct, ev.N)
			printConfusion(e.stdout, ev)
			return nil
		},
	}
	df.add(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object instead of text")
	cmd.Flags().IntVar(&workers, "workers", 0, "goroutines (0: all cores)")
	return cmd
}

func popcount(x uint64) int {
	n := 0
	for ; x != 0; x &= x - 1 {
		n++
	}
	return n
}
