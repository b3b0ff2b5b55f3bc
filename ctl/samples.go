package ctl

import (
	"encoding/csv"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/trit-iot/trit/wire"
)

// Columns of a samples file besides the features (samplesColumns) and the
// label column to fill in. time is an ISO 8601 time stamp, which tritctl
// train recognises and does not use as a feature.
var samplesColumns = []string{"predicted", "candidate", "margin", "reason"}

func newSamplesCmd(e *env) *cobra.Command {
	var ff fleetFlags
	cmd := &cobra.Command{Use: "samples", Short: "Collect the windows devices kept for retraining"}
	ff.register(cmd)
	var device, out string
	var wait time.Duration
	var force bool
	pull := &cobra.Command{
		Use:   "pull --device ID --out FILE.csv",
		Short: "Fetch a device's kept windows (low margin, shadow disagreement, sampled) as a CSV to label",
		Long: `Fetch, through trit-fleet, the windows a device kept for retraining: its
low-margin predictions, the windows on which a shadow candidate disagreed
with the active model, and windows sampled at models.sample_every. The CSV
has a time column, one column per input feature (the model's feature
names), what was predicted and why the window was kept, and an empty
label column: fill it in, then train on the file:

  tritctl samples pull --device gw-001 --out gw-001.csv
  # label the rows (delete those you cannot label)
  tritctl train gw-001.csv --ignore-column ` + "predicted,candidate,margin,reason" + ` -o next.trit

docs/FLEET.md "Samples for retraining" walks the whole loop.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if !force {
				if _, err := os.Stat(out); err == nil {
					return fmt.Errorf("%s exists; refusing to overwrite it (give --force)", out)
				}
			}
			c, err := ff.client()
			if err != nil {
				return err
			}
			path := "/v1/devices/" + url.PathEscape(device) + "/samples"
			if wait > 0 {
				path += "?wait=" + url.QueryEscape(wait.String())
			}
			var set wire.SampleSet
			if err := c.do("GET", path, "", nil, &set); err != nil {
				return err
			}
			if err := writeSamplesCSV(out, &set); err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "%d samples of %s (%d features) written to %s; fill in the label column, then tritctl train it\n",
				len(set.Samples), device, len(set.Features), out)
			return nil
		},
	}
	pull.Flags().StringVar(&device, "device", "", "device ID (required)")
	pull.Flags().StringVarP(&out, "out", "o", "", "CSV file to write (required)")
	pull.Flags().DurationVar(&wait, "wait", 0, "how long the fleet waits for the device (default 20s)")
	pull.Flags().BoolVar(&force, "force", false, "overwrite --out")
	pull.MarkFlagRequired("device")
	pull.MarkFlagRequired("out")
	cmd.AddCommand(pull)
	return cmd
}

// writeSamplesCSV writes set as a CSV file to label.
func writeSamplesCSV(path string, set *wire.SampleSet) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	header := append([]string{"time"}, set.Features...)
	header = append(append(header, samplesColumns...), "label")
	w.Write(header)
	for _, s := range set.Samples {
		row := []string{time.UnixMilli(s.Time).UTC().Format("2006-01-02T15:04:05.000Z")}
		for _, x := range s.X {
			row = append(row, strconv.FormatFloat(float64(x), 'g', -1, 32))
		}
		row = append(row, s.Class, s.Candidate, strconv.FormatFloat(s.Margin, 'f', 4, 64), s.Reason, "")
		w.Write(row)
	}
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	return f.Close()
}
