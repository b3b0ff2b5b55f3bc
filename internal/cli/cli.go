// Package cli is the one command-line policy of trit's binaries
// (trit-agent with its sensors tool, trit-fleet, tritctl):
//
//   - exit code 0 on success, 1 on a failure, 2 on a usage error (a bad or
//     missing flag, a wrong number of arguments, an unknown command, or an
//     error a command marks with Usagef), or a command's own code (Exit);
//   - errors are printed once, as "program: error", without the usage text;
//   - --version prints the version of internal/buildinfo.
package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/trit-iot/trit/internal/buildinfo"
)

// Exit codes.
const (
	ExitOK      = 0
	ExitFailure = 1
	ExitUsage   = 2
)

// UsageError marks an error in how a command was called (exit code 2).
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// Usagef returns a *UsageError.
func Usagef(format string, a ...any) error { return &UsageError{fmt.Errorf(format, a...)} }

// ExitError is an outcome a script tells apart by its exit code (such as
// tritctl rollout status --watch).
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

// Exit returns an *ExitError.
func Exit(code int, err error) error { return &ExitError{Code: code, Err: err} }

// Prepare applies the policy to a command tree: call it once the tree is
// complete. Flag and argument-count errors become usage errors, and the
// root gets --version.
func Prepare(root *cobra.Command) {
	root.SilenceUsage, root.SilenceErrors = true, true
	if root.Version == "" {
		root.Version = buildinfo.Version
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &UsageError{err} })
	markArgs(root)
}

func markArgs(cmd *cobra.Command) {
	if check := cmd.Args; check != nil {
		cmd.Args = func(c *cobra.Command, args []string) error {
			if err := check(c, args); err != nil {
				return &UsageError{err}
			}
			return nil
		}
	}
	for _, sub := range cmd.Commands() {
		markArgs(sub)
	}
}

// Run prepares root, runs it with args, prints an error to stderr and
// returns the exit code.
func Run(root *cobra.Command, args []string, stdout, stderr io.Writer) int {
	Prepare(root)
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.Execute()
	if err == nil {
		return ExitOK
	}
	fmt.Fprintf(stderr, "%s: %v\n", root.Name(), err)
	return Code(err)
}

// Code is the exit code for err.
func Code(err error) int {
	var x *ExitError
	var u *UsageError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &x):
		return x.Code
	case errors.As(err, &u), cobraUsage(err):
		return ExitUsage
	}
	return ExitFailure
}

// cobraUsage recognises the usage errors cobra returns as plain errors: an
// unknown command and missing required flags.
func cobraUsage(err error) bool {
	msg := err.Error()
	return strings.HasPrefix(msg, "unknown command ") || strings.HasPrefix(msg, "required flag(s) ")
}
