// Package cli is the one command-line policy of trit's binaries
// (trit-agent with its sensors tool, trit-fleet, tritctl):
//
//   - exit code 0 on success, 1 on a failure, 2 on a usage error (a bad or
//     missing flag, a wrong number of arguments, an unknown command, or an
//     error a command marks with Usagef), or a command's own code (Exit);
//   - errors are printed once, as "program: error", without the usage text;
//     with --json (a command's boolean json flag) a failure is instead one
//     JSON object on stdout (ErrorReport), with the same exit code, so a
//     script that reads stdout always reads JSON (an outcome's own code,
//     Exit, keeps its line on stderr);
//   - --version prints the version of internal/buildinfo.
package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
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
	// Pinned (cobra's default): the packaging scripts check this line.
	root.SetVersionTemplate("{{.Name}} version {{.Version}}\n")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &UsageError{err} })
	markArgs(root)
}

func markArgs(cmd *cobra.Command) {
	if check := cmd.Args; check != nil {
		cmd.Args = func(c *cobra.Command, args []string) error {
			if err := check(c, args); err != nil {
				// cobra's "accepts 1 arg(s), received 0" says neither
				// which command nor what the argument is: the usage
				// line does ("usage: tritctl rollout status ID [flags]").
				// Its "unknown command "x" for "tritctl sub"" names both,
				// and a command's own check says what it wants.
				var own *UsageError
				if errors.As(err, &own) {
					return err
				}
				if !cobraUsage(err) {
					err = fmt.Errorf("%w; usage: %s", err, c.UseLine())
				}
				return &UsageError{err}
			}
			return nil
		}
	}
	for _, sub := range cmd.Commands() {
		markArgs(sub)
	}
}

// VersionLine is what --version prints, for a version command to print
// the same: "trit-agent version 0.4.0".
func VersionLine(root *cobra.Command) string {
	v := root.Version
	if v == "" {
		v = buildinfo.Version
	}
	return root.Name() + " version " + v + "\n"
}

// Run prepares root, runs it with args, prints an error (to stderr, or
// as an ErrorReport on stdout with --json) and returns the exit code.
func Run(root *cobra.Command, args []string, stdout, stderr io.Writer) int {
	Prepare(root)
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteC()
	if err == nil {
		return ExitOK
	}
	code := Code(err)
	var outcome *ExitError
	// An outcome's code (Exit) is not a failure: the command's JSON has
	// said what happened, so its line stays on stderr.
	if !errors.As(err, &outcome) && wantsJSON(cmd, args) {
		r := Report(err)
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if enc.Encode(r) == nil {
			return code
		}
	}
	fmt.Fprintf(stderr, "%s: %v\n", root.Name(), err)
	return code
}

// ErrorReport is what a command run with --json prints on stdout when it
// fails. A successful run's JSON has no "error" key.
type ErrorReport struct {
	Error    string `json:"error"`     // the message, as printed without --json
	ExitCode int    `json:"exit_code"` // the process's exit code: 1 failure, 2 usage error, …
	// Where in an input file, when the error knows (Located): 1-based
	// line and column, the column's header name.
	File       string `json:"file,omitempty"`
	Line       int    `json:"line,omitempty"`
	Column     int    `json:"column,omitempty"`
	ColumnName string `json:"column_name,omitempty"`
}

// Located is an error that knows where in an input file it arose
// (training/data's ParseError); zero values are unknown.
type Located interface {
	Location() (file string, line, column int, columnName string)
}

// Report returns the ErrorReport of err.
func Report(err error) ErrorReport {
	r := ErrorReport{Error: err.Error(), ExitCode: Code(err)}
	var loc Located
	if errors.As(err, &loc) {
		r.File, r.Line, r.Column, r.ColumnName = loc.Location()
	}
	return r
}

// wantsJSON reports whether the command that ran has a boolean json flag
// that was given: set, or among args when parsing stopped before it.
func wantsJSON(cmd *cobra.Command, args []string) bool {
	if cmd == nil {
		return false
	}
	f := cmd.Flags().Lookup("json")
	if f == nil || f.Value.Type() != "bool" {
		return false
	}
	if f.Value.String() == "true" {
		return true
	}
	if i := slices.Index(args, "--"); i >= 0 {
		args = args[:i]
	}
	return slices.Contains(args, "--json") || slices.Contains(args, "--json=true")
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
