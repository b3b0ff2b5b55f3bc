// Package benchmark implements trit-bench, the benchmarks behind
// docs/BENCHMARKS.md: the paper's comparison with its baselines (paper,
// table, figures) and the comparison with general-purpose peers at the
// same byte budget (peers). It is a research tool, not part of the
// operator's tritctl; cmd/trit-bench is a thin main around Main.
package benchmark

import (
	"encoding/json"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/trit-iot/trit/internal/buildinfo"
	"github.com/trit-iot/trit/internal/cli"
)

// env is what commands read and write, so tests can run them in-process.
type env struct {
	stdout, stderr io.Writer
}

// Main runs trit-bench with args (without the program name) and returns
// the process exit code under the binaries' one command-line policy
// (internal/cli): 0 on success, 1 on failure, 2 on a usage error.
func Main(args []string) int {
	return run(&env{stdout: os.Stdout, stderr: os.Stderr}, args)
}

func run(e *env, args []string) int {
	return cli.Run(newRoot(e), args, e.stdout, e.stderr)
}

// usagef returns an error in how a command was called (exit code 2).
func usagef(format string, a ...any) error { return cli.Usagef(format, a...) }

func newRoot(e *env) *cobra.Command {
	root := &cobra.Command{
		Use:   "trit-bench",
		Short: "Benchmark trit against the paper's baselines and against general-purpose peers",
		Long: `trit-bench measures what docs/BENCHMARKS.md reports:
  paper    the paper's Table 2: trit against RFE, Fastfood, BJLE and BCSIK at the same p
  table    re-render saved 'paper --json' outputs as one Markdown table
  figures  the paper's figures and the peers' accuracy-against-bytes curve as PNGs
  peers    trit at its default byte budget against an int8 MLP, XGBoost and linear and
           RBF SVMs (scikit-learn, via scripts/peers/peers.py) on the same splits and scaling
  loop     the replay of closing the loop: a recording's test period in blocks, the static
           model against retraining on a share of each block's labels, and the peers refitted
           on the same labels (scripts/peers/loop.py)
  retrain  the time and peak memory of one retraining on generated data
  suite    trit's default judged on the shift suite (later and unseen rows) beside the
           peers tuned on the same folds: ranks, deficits, calibration and unknown`,
		Version:       buildinfo.Version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newPaperCmd(e), newTableCmd(e), newFiguresCmd(e), newPeersCmd(e), newSuiteCmd(e), newLoopCmd(e), newRetrainTimeCmd(e))
	return root
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
