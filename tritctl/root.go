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
	siblings(root, "bundle", "bundles")
	// A fleet collection answers to its name in the singular and the
	// plural: tritctl rollouts list, tritctl device show gw-1.
	for name, alias := range map[string]string{"rollout": "rollouts", "devices": "device", "operators": "operator", "samples": "sample"} {
		if c, _, err := root.Find([]string{name}); err == nil {
			c.Aliases = append(c.Aliases, alias)
		}
	}
	return root
}

// siblings makes each of two command groups whose names differ by a letter
// (bundle: files; bundles: the fleet's registry) name the other when given
// a subcommand only the other has: 'tritctl bundle list' suggests
// 'tritctl bundles list'.
func siblings(root *cobra.Command, a, b string) {
	ca, _, errA := root.Find([]string{a})
	cb, _, errB := root.Find([]string{b})
	if errA != nil || errB != nil {
		return
	}
	point := func(from, to *cobra.Command) {
		check := from.Args
		from.Args = func(c *cobra.Command, args []string) error {
			if len(args) > 0 {
				if sub, _, err := to.Find(args[:1]); err == nil && sub != to {
					return usagef("unknown command %q for %q; did you mean '%s %s'? (%s: %s)", args[0], c.CommandPath(), to.CommandPath(), args[0], to.Name(), to.Short)
				}
			}
			if check != nil {
				return check(c, args)
			}
			return nil
		}
	}
	point(ca, cb)
	point(cb, ca)
}
