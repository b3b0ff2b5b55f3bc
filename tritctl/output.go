package tritctl

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/trit-iot/trit/training"
)

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// printConfusion writes a confusion matrix with true classes as rows.
func printConfusion(w io.Writer, ev *training.Evaluation) {
	tw := tabwriter.NewWriter(w, 2, 0, 1, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "true\\pred\t")
	fmt.Fprintln(tw, strings.Join(ev.Classes, "\t")+"\trecall\t")
	for i, row := range ev.Confusion {
		fmt.Fprintf(tw, "%s\t", ev.Classes[i])
		total := 0
		for _, n := range row {
			fmt.Fprintf(tw, "%d\t", n)
			total += n
		}
		if total > 0 {
			fmt.Fprintf(tw, "%.1f%%\t", 100*float64(row[i])/float64(total))
		} else {
			fmt.Fprint(tw, "-\t")
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
}
