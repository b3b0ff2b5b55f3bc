package tritctl

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/training"
	"github.com/trit-iot/trit/training/data"
)

func newRemoteTrainCmd(e *env) *cobra.Command {
	var ff fleetFlags
	var req api.TrainRequest
	var out, labelColumn string
	var asJSON, force bool
	var interval time.Duration
	cmd := &cobra.Command{
		Use:   "remote-train DATASET -o BUNDLE",
		Short: "Train a model on trit-fleet and download it as an unsigned bundle",
		Long: `Ask trit-fleet to train a model on DATASET, a path inside the fleet's
training data directory (or standard:NAME for a standard dataset kept there),
wait for it, and write the result to -o as an unsigned bundle. Sign it with
the offline release key (tritctl bundle sign) and publish it (tritctl publish)
to roll it out: the fleet never holds a release key.`,
		Example: `  tritctl remote-train room.csv --label-column Occupancy --model-id room --release 2 -o room-2.trit
  tritctl bundle sign --key release.key room-2.trit -o room-2.signed.trit
  tritctl publish room-2.signed.trit
  tritctl remote-train standard:usps --model-id usps --release 8 -o usps-8.trit   # a standard dataset kept on the fleet host`,
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			req.Dataset = args[0]
			if out == "" {
				return usagef("give the output file with -o/--out")
			}
			format, err := data.ParseFormat(req.Format)
			if err != nil {
				return usagef("--format: %v", err)
			}
			// "dense" is the name every fleet version knows for csv.
			if req.Format = format.String(); format == data.FormatCSV {
				req.Format = "dense"
			}
			if labelColumn != "" {
				col, err := data.ParseColumn(labelColumn)
				if err != nil {
					return usagef("--label-column: %v", err)
				}
				req.LabelColumn, req.LabelColumnName = col.Index, col.Name
			}
			// Before training, not after: a run can take minutes.
			if _, err := os.Lstat(out); err == nil && !force {
				return fmt.Errorf("%s: %w (use --force to replace it)", out, errExists)
			}
			c, err := ff.client()
			if err != nil {
				return err
			}
			job, err := c.Train(&req)
			if err != nil {
				return err
			}
			start := time.Now()
			for job.State == api.TrainQueued || job.State == api.TrainRunning {
				time.Sleep(interval)
				if !asJSON {
					fmt.Fprintf(e.stderr, "training on the fleet (job %s, %s; tritctl remote-train cancel %s stops it): %s elapsed\n",
						job.ID, job.State, job.ID, time.Since(start).Round(time.Second))
				}
				if job, err = c.TrainJob(job.ID); err != nil {
					return err
				}
			}
			if job.State != api.TrainSucceeded {
				return fmt.Errorf("training job %s %s: %s", job.ID, job.State, job.Error)
			}
			bundleBytes, err := c.TrainedBundle(job.ID)
			if err != nil {
				return err
			}
			if err := writeFileAtomic(out, bundleBytes, 0o644, force); err != nil {
				return err
			}
			if asJSON {
				return writeJSONTo(e.stdout, job)
			}
			fmt.Fprintf(e.stdout, "%s: accuracy %.2f%% (%s set), σ=%g C=%g, %d non-zero, trained in %.1fs\nwrote %s (%d bytes, unsigned)\n",
				job.ID, job.Accuracy, job.AccuracyOn, job.Sigma, job.C, job.NonZero, job.TrainSeconds, out, job.Bytes)
			return nil
		},
	}
	ff.register(cmd)
	f := cmd.Flags()
	f.StringVarP(&out, "out", "o", "", "where to write the unsigned bundle (required)")
	// The former name, hidden, kept working for scripts.
	f.StringVar(&out, "output", "", "deprecated: use --out")
	f.MarkHidden("output")
	f.BoolVar(&force, "force", false, "replace --out if it exists")
	f.StringVar(&req.ModelID, "model-id", "", "model ID in the bundle (required)")
	f.Uint64Var(&req.Release, "release", 0, "release counter, above every earlier release of the model (required)")
	f.StringVar(&req.Format, "format", "auto", "data format, as tritctl train's: auto, csv (delimited text, also called dense), arff, libsvm or idx")
	f.IntVar(&req.Features, "features", 0, "LIBSVM (--format libsvm): number of features, as tritctl train's (0: the largest index seen, if the file holds at least 1 value in 64 of its dense matrix)")
	f.StringVar(&labelColumn, "label-column", "", "CSV: the label column, as in tritctl train: a header name, a column number counted from 1, or last\n(default: the one column named label, class, target or y, else the last column)")
	f.Float64Var(&req.Sigma, "sigma", 0, "kernel width σ (0: search on a validation split)")
	f.Float64Var(&req.C, "c", 0, "regularisation C (0: search)")
	f.IntVar(&req.Budget, "budget", training.DefaultBudget, "size of the signed bundle to fill, in bytes (as tritctl train --budget)")
	f.IntVar(&req.P, "p", 0, "fix the number of random features instead of filling --budget")
	f.StringVar(&req.Hardware, "hardware", "", "hardware/sensor-set label")
	f.StringVar(&req.MinAgent, "min-agent", "", minAgentHelp)
	f.BoolVar(&asJSON, "json", false, "print the job as JSON")
	f.DurationVar(&interval, "interval", 2*time.Second, "polling interval")
	cmd.MarkFlagRequired("model-id")
	cmd.MarkFlagRequired("release")

	cancel := &cobra.Command{
		Use:   "cancel JOB",
		Short: "Cancel a queued or running training job on the fleet",
		Long: `Cancel a training job. A queued job never runs; a running one is marked
cancelled at once and its result is discarded, but the fleet finishes the
training run in the background before it starts the next job.`,
		Example: `  tritctl remote-train cancel train-3`,
		Args:    cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			c, err := ff.client() // --fleet and --token-file are the parent's persistent flags
			if err != nil {
				return err
			}
			job, err := c.CancelTraining(args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "training job %s %s\n", job.ID, job.State)
			return nil
		},
	}
	cmd.AddCommand(cancel)
	return cmd
}
