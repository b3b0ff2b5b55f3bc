package tritctl

import (
	"encoding/csv"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/wire"
)

// Columns of a samples file besides the features (samplesColumns) and the
// label column to fill in. time is an ISO 8601 time stamp, which tritctl
// train recognises and does not use as a feature.
// window names the window in the fleet's store (api.WindowID), which
// `tritctl samples label` sends the labels for.
var samplesColumns = []string{"window", "device", "predicted", "candidate", "margin", "reason"}

func newSamplesCmd(e *env) *cobra.Command {
	var ff fleetFlags
	cmd := &cobra.Command{Use: "samples", Short: "Collect the windows devices kept for retraining",
		Example: `  tritctl samples pull --device gw-1 -o gw-1.csv`,
		Args:    cobra.NoArgs,
		RunE:    func(*cobra.Command, []string) error { return usagef("samples: give a subcommand (pull, label)") }}
	ff.register(cmd)
	var out string
	var devices, selector []string
	var wait time.Duration
	var force bool
	pull := &cobra.Command{
		Use:   "pull (--device ID ... | --selector label=value) --out FILE.csv",
		Short: "Fetch devices' kept windows (low margin, shadow disagreement, sampled) as a CSV to label",
		Long: `Fetch, through trit-fleet, the windows a device kept for retraining: its
low-margin predictions, the windows on which a shadow candidate disagreed
with the active model, and windows sampled at models.sample_every. The CSV
has a time column, one column per input feature (the model's feature
names), the window's ID in the fleet's store, what was predicted and why
the window was kept, and an empty label column. The fleet stores the
windows it has not stored yet, so they can be labelled: fill in the label
column (leave it empty where you cannot tell) and send the labels back
with 'tritctl samples label', where 'tritctl retrain' finds them:

  tritctl samples pull --device gw-1 --out gw-1.csv
  # fill in the label column
  tritctl samples label gw-1.csv

With --device repeated, or --selector, every device named or matching
is asked in turn and the rows go into one file (the devices must share the model's features); a device
that does not answer is reported and skipped.

docs/FLEET.md "Samples for retraining" walks the whole loop.`,
		Example: `  tritctl samples pull --device gw-1 -o gw-1.csv
  tritctl samples pull --selector site=lab -o lab.csv --wait 30s`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if !force {
				if _, err := os.Stat(out); err == nil {
					return fmt.Errorf("%s: %w (use --force to replace it)", out, errExists)
				}
			}
			c, err := ff.client()
			if err != nil {
				return err
			}
			if (len(devices) == 0) == (len(selector) == 0) {
				return usagef("give --device ID (repeatable) or --selector label=value, not both")
			}
			ids := slices.Compact(slices.Clone(devices))
			if len(selector) > 0 {
				sel, err := parseSelector(selector)
				if err != nil {
					return err
				}
				ds, err := c.Devices()
				if err != nil {
					return err
				}
				ids = nil
				for _, d := range ds {
					if matches(d.Labels, sel) {
						ids = append(ids, d.ID)
					}
				}
				if len(ids) == 0 {
					return fmt.Errorf("no device matches %s", strings.Join(selector, ","))
				}
			}
			var sets []deviceSamples
			for _, id := range ids {
				set, err := c.Samples(id, wait)
				if err != nil {
					if len(ids) == 1 {
						return err
					}
					fmt.Fprintf(e.stderr, "%s skipped: %v\n", id, err)
					continue
				}
				if len(sets) > 0 && !slices.Equal(set.Features, sets[0].set.Features) {
					return fmt.Errorf("%s's samples have features %v, %s's %v: pull them into separate files", id, set.Features, sets[0].device, sets[0].set.Features)
				}
				sets = append(sets, deviceSamples{id, set})
			}
			if len(sets) == 0 {
				return fmt.Errorf("no device sent its samples")
			}
			n, err := writeSamplesCSV(out, sets)
			if err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "%s of %s (%s) written to %s; fill in the label column, then tritctl samples label it\n",
				count(n, "sample"), count(len(sets), "device"), count(len(sets[0].set.Features), "feature"), out)
			return nil
		},
	}
	pull.Flags().StringSliceVar(&devices, "device", nil, "device ID (repeatable)")
	pull.Flags().StringSliceVar(&selector, "selector", nil, "devices by label=value (repeatable; all must match)")
	pull.Flags().StringVarP(&out, "out", "o", "", "CSV file to write (required)")
	pull.Flags().DurationVar(&wait, "wait", 0, "how long the fleet waits for the device (default 20s)")
	pull.Flags().BoolVar(&force, "force", false, "overwrite --out")
	pull.MarkFlagRequired("out")
	cmd.AddCommand(pull, newSamplesLabelCmd(e, &ff))
	return cmd
}

// deviceSamples is one device's sample set.
type deviceSamples struct {
	device string
	set    *wire.SampleSet
}

func matches(labels, selector map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// writeSamplesCSV writes the sets (same features) as one CSV file to
// label and returns its rows.
func writeSamplesCSV(path string, sets []deviceSamples) (int, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return 0, err
	}
	w := csv.NewWriter(f)
	header := append([]string{"time"}, sets[0].set.Features...)
	header = append(append(header, samplesColumns...), "label")
	w.Write(header)
	n := 0
	for _, ds := range sets {
		for _, s := range ds.set.Samples {
			row := []string{time.UnixMilli(s.Time).UTC().Format("2006-01-02T15:04:05.000Z")}
			for _, x := range s.X {
				row = append(row, strconv.FormatFloat(float64(x), 'g', -1, 32))
			}
			row = append(row, api.WindowID(ds.device, s.Time), ds.device, s.Class, s.Candidate, strconv.FormatFloat(s.Margin, 'f', 4, 64), s.Reason, "")
			w.Write(row)
			n++
		}
	}
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return n, f.Close()
}
