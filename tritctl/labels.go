package tritctl

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/trit-iot/trit/api"
)

// maxLabelFile bounds a labels file: 10,000 labelled rows of a few
// hundred features fit with room to spare.
const maxLabelFile = 256 << 20

func newSamplesLabelCmd(e *env, ff *fleetFlags) *cobra.Command {
	var labelCol, windowCol string
	cmd := &cobra.Command{
		Use:   "label FILE.csv",
		Short: "Send the labels of pulled windows to the fleet (a CSV from samples pull, label column filled in)",
		Long: `Read a CSV written by 'tritctl samples pull' whose label column you filled
in, and label those windows in the fleet's store, where 'tritctl retrain'
and the fleet's retraining find them. Rows with an empty label are left
unlabelled; the other columns are not read. The fleet applies the file's
labels all together or not at all: a window it does not store, a class
that is not one of the classes of the model that classified the window,
or a window labelled before (or twice in the file) refuses the whole file,
saying which window. At most 10,000 labels a file.`,
		Example: `  tritctl samples pull --device gw-1 -o gw-1.csv
  # fill in the label column
  tritctl samples label gw-1.csv`,
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			raw, err := readFileCapped(args[0], "labels file", maxLabelFile)
			if err != nil {
				return err
			}
			labels, empty, err := parseLabels(args[0], raw, windowCol, labelCol)
			if err != nil {
				return err
			}
			if len(labels) == 0 {
				return fmt.Errorf("%s: no row has a label (%d rows with the %s column empty): fill it in first", args[0], empty, labelCol)
			}
			c, err := ff.client()
			if err != nil {
				return err
			}
			res, err := c.Label(&api.LabelRequest{Labels: labels, Via: api.LabelCLI})
			if err != nil {
				return fmt.Errorf("%s: nothing labelled: %w", args[0], err)
			}
			fmt.Fprintf(e.stdout, "%s labelled", count(res.Labelled, "window"))
			if empty > 0 {
				fmt.Fprintf(e.stdout, "; %s without a label left as they were", count(empty, "row"))
			}
			fmt.Fprintln(e.stdout)
			return nil
		},
	}
	cmd.Flags().StringVar(&labelCol, "label-column", "label", "the column holding the labels")
	cmd.Flags().StringVar(&windowCol, "window-column", "window", "the column holding the windows' IDs")
	return cmd
}

// maxLabelsPerFile is the fleet's bound on one request (fleet.MaxLabelsPerRequest).
const maxLabelsPerFile = 10_000

// parseLabels reads the window and label columns of a labels CSV (comma,
// semicolon or tab separated, as a spreadsheet may save it) and returns
// the labels and the number of rows left without one. A row without a
// window ID, a window twice, or more labels than one request takes is an
// error naming the line.
func parseLabels(name string, raw []byte, windowCol, labelCol string) ([]api.Label, int, error) {
	var lastErr error
	for _, delim := range []rune{',', ';', '\t'} {
		r := csv.NewReader(bytes.NewReader(raw))
		r.Comma, r.FieldsPerRecord, r.ReuseRecord = delim, -1, true
		header, err := r.Read()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil, 0, fmt.Errorf("%s: empty file", name)
			}
			return nil, 0, fmt.Errorf("%s: %w", name, err)
		}
		wi, li := slices.Index(header, windowCol), slices.Index(header, labelCol)
		if wi < 0 || li < 0 {
			lastErr = fmt.Errorf("%s: the header has no %q and %q columns (it has %q): give --window-column and --label-column", name, windowCol, labelCol, header)
			continue
		}
		var labels []api.Label
		empty := 0
		lineOf := map[string]int{}
		for {
			rec, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, 0, fmt.Errorf("%s: %w", name, err)
			}
			line, _ := r.FieldPos(0)
			if len(rec) <= max(wi, li) {
				return nil, 0, fmt.Errorf("%s line %d: %d fields, the header has %d", name, line, len(rec), len(header))
			}
			w, l := strings.TrimSpace(rec[wi]), strings.TrimSpace(rec[li])
			if l == "" {
				empty++
				continue
			}
			if w == "" {
				return nil, 0, fmt.Errorf("%s line %d: label %q for no window (the %s column is empty)", name, line, l, windowCol)
			}
			if first, dup := lineOf[w]; dup {
				return nil, 0, fmt.Errorf("%s line %d: window %s is labelled on line %d already", name, line, w, first)
			}
			lineOf[w] = line
			if len(labels) == maxLabelsPerFile {
				return nil, 0, fmt.Errorf("%s line %d: more than %d labels: split the file", name, line, maxLabelsPerFile)
			}
			labels = append(labels, api.Label{Window: w, Label: l})
		}
		return labels, empty, nil
	}
	return nil, 0, lastErr
}
