// Package ctl implements tritctl, the operator's command line: training and
// evaluation of models, keys and bundles, and (with a fleet) publishing and
// rollouts. cmd/tritctl is a thin main around Main.
package ctl

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/trit-iot/trit/internal/buildinfo"
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

func run(e *env, args []string) int {
	root := newRoot(e)
	root.SetArgs(args)
	root.SetOut(e.stdout)
	root.SetErr(e.stderr)
	err := root.Execute()
	if err == nil {
		return 0
	}
	fmt.Fprintf(e.stderr, "tritctl: %v\n", err)
	var x exitError
	if errors.As(err, &x) {
		return x.code
	}
	var u usageError
	// Cobra reports missing required flags as a plain error.
	if errors.As(err, &u) || strings.HasPrefix(err.Error(), "required flag") {
		return 2
	}
	return 1
}

// usageError marks errors in how a command was called.
type usageError struct{ error }

func usagef(format string, a ...any) error { return usageError{fmt.Errorf(format, a...)} }

// exitError is an outcome a script tells apart by the exit code (see
// rollout status --watch).
type exitError struct {
	code int
	error
}

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
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(newTrainCmd(e), newEvalCmd(e), newDemoCmd(e))
	root.AddCommand(newKeysCmd(e), newBundleCmd(e))
	root.AddCommand(newCertsCmd(e), newPublishCmd(e), newRolloutCmd(e), newDevicesCmd(e), newRemoteTrainCmd(e))
	markArgErrors(root)
	return root
}

// markArgErrors makes every command's argument-count errors usage errors
// (exit code 2), like flag errors.
func markArgErrors(cmd *cobra.Command) {
	if check := cmd.Args; check != nil {
		cmd.Args = func(c *cobra.Command, args []string) error {
			if err := check(c, args); err != nil {
				return usageError{err}
			}
			return nil
		}
	}
	for _, sub := range cmd.Commands() {
		markArgErrors(sub)
	}
}
