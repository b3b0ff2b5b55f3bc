// Package tritctl implements tritctl, the operator's command line: training and
// evaluation of models, keys and bundles, and (with a fleet) publishing and
// rollouts. cmd/tritctl is a thin main around Main.
package tritctl

import (
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/trit-iot/trit/internal/buildinfo"
	"github.com/trit-iot/trit/internal/cli"
)

// Version is the tritctl version (internal/buildinfo).
var Version = buildinfo.Version

// env is what commands read and write, so tests can run them in-process.
type env struct {
	stdout, stderr io.Writer
	// isTerminal reports whether stderr is a terminal (progress bars).
	isTerminal bool
}

// Main runs tritctl with args (without the program name) and returns the
// process exit code: 0 on success, 1 on failure, 2 on a usage error.
func Main(args []string) int {
	e := &env{stdout: os.Stdout, stderr: os.Stderr, isTerminal: stderrIsTerminal()}
	return run(e, args)
}

// run runs tritctl under the binaries' one command-line policy
// (internal/cli: exit codes 0, 1, 2 for usage errors).
func run(e *env, args []string) int { return cli.Run(newRoot(e), args, e.stdout, e.stderr) }

// usagef returns a usage error (exit code 2).
func usagef(format string, a ...any) error { return cli.Usagef(format, a...) }

func newRoot(e *env) *cobra.Command {
	root := &cobra.Command{
		Use:   "tritctl",
		Short: "Train, package and roll out trit models",
		Long: `tritctl trains ternary binary-embedding kernel SVM models (Lei & Lan),
evaluates them, and manages keys, bundles and fleet rollouts.`,
		Version:       Version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newTrainCmd(e), newEvalCmd(e), newDemoCmd(e))
	root.AddCommand(newKeysCmd(e), newBundleCmd(e))
	root.AddCommand(newCertsCmd(e), newPublishCmd(e), newBundlesCmd(e), newRolloutCmd(e), newDevicesCmd(e), newSamplesCmd(e), newRetrainCmd(e), newRemoteTrainCmd(e))
	root.AddCommand(newAuditCmd(e), newOperatorsCmd(e))
	withFleetHints(root)
	return root
}
