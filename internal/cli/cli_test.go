package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/trit-iot/trit/internal/buildinfo"
)

func tree() *cobra.Command {
	root := &cobra.Command{Use: "prog"}
	var n int
	sub := &cobra.Command{Use: "sub", Args: cobra.NoArgs, RunE: func(*cobra.Command, []string) error {
		switch n {
		case 1:
			return Usagef("--n 1 is not allowed")
		case 3:
			return Exit(3, errors.New("partial"))
		case 4:
			return errors.New("failed")
		}
		return nil
	}}
	sub.Flags().IntVar(&n, "n", 0, "")
	var req string
	need := &cobra.Command{Use: "need", RunE: func(*cobra.Command, []string) error { return nil }}
	need.Flags().StringVar(&req, "x", "", "")
	need.MarkFlagRequired("x")
	root.AddCommand(sub, need)
	return root
}

// TestExitCodes: every kind of usage error exits 2, as documented; a
// command's own code and failures are kept.
func TestExitCodes(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"sub"}, 0},
		{[]string{"sub", "--n", "1"}, 2}, // Usagef
		{[]string{"sub", "--nope"}, 2},   // unknown flag
		{[]string{"sub", "--n", "x"}, 2}, // bad flag value
		{[]string{"sub", "extra"}, 2},    // argument count
		{[]string{"nosuch"}, 2},          // unknown command
		{[]string{"need"}, 2},            // missing required flag
		{[]string{"sub", "--n", "3"}, 3}, // Exit
		{[]string{"sub", "--n", "4"}, 1}, // failure
	} {
		var out, errOut bytes.Buffer
		if got := Run(tree(), c.args, &out, &errOut); got != c.code {
			t.Errorf("%q: exit %d, want %d (%s)", c.args, got, c.code, errOut.String())
		}
		if c.code != 0 && !strings.HasPrefix(errOut.String(), "prog: ") {
			t.Errorf("%q: stderr %q, want one line starting prog:", c.args, errOut.String())
		}
	}
	var out bytes.Buffer
	if code := Run(tree(), []string{"--version"}, &out, &out); code != 0 || !strings.Contains(out.String(), buildinfo.Version) {
		t.Errorf("--version: %d %q", code, out.String())
	}
}

// located is an error that knows where in a file it arose, as
// training/data's ParseError does.
type located struct{}

func (located) Error() string { return "room.csv:3: column 4 \"Temp\": invalid number \"warm\"" }
func (located) Location() (string, int, int, string) {
	return "room.csv", 3, 4, "Temp"
}

// TestJSONErrors: with --json a failure is one JSON object on stdout (and
// nothing on stderr), with the exit code it always has; without --json,
// with a --json that is not a switch, or for an outcome's code, errors
// stay on stderr.
func TestJSONErrors(t *testing.T) {
	newTree := func() *cobra.Command {
		root := &cobra.Command{Use: "prog"}
		var asJSON bool
		var n int
		var file string
		sub := &cobra.Command{Use: "sub", Args: cobra.NoArgs, RunE: func(*cobra.Command, []string) error {
			switch n {
			case 1:
				return Usagef("--n 1 is not allowed")
			case 2:
				return fmt.Errorf("reading: %w", located{})
			case 3:
				return Exit(3, errors.New("partial"))
			}
			return errors.New("failed")
		}}
		sub.Flags().BoolVar(&asJSON, "json", false, "")
		sub.Flags().IntVar(&n, "n", 0, "")
		other := &cobra.Command{Use: "other", RunE: func(*cobra.Command, []string) error { return errors.New("failed") }}
		other.Flags().StringVar(&file, "json", "", "a file, not a switch")
		root.AddCommand(sub, other)
		return root
	}
	for _, c := range []struct {
		args []string
		code int
		want ErrorReport
	}{
		{[]string{"sub", "--json"}, 1, ErrorReport{Error: "failed", ExitCode: 1}},
		{[]string{"sub", "--json", "--n", "1"}, 2, ErrorReport{Error: "--n 1 is not allowed", ExitCode: 2}},
		{[]string{"sub", "--json", "--n", "x"}, 2, ErrorReport{Error: `invalid argument "x" for "--n" flag: strconv.ParseInt: parsing "x": invalid syntax`, ExitCode: 2}},
		{[]string{"sub", "--n", "x", "--json"}, 2, ErrorReport{Error: `invalid argument "x" for "--n" flag: strconv.ParseInt: parsing "x": invalid syntax`, ExitCode: 2}},
		{[]string{"sub", "--json", "extra"}, 2, ErrorReport{Error: `unknown command "extra" for "prog sub"`, ExitCode: 2}},
		{[]string{"sub", "--json", "--n", "2"}, 1, ErrorReport{Error: `reading: room.csv:3: column 4 "Temp": invalid number "warm"`, ExitCode: 1,
			File: "room.csv", Line: 3, Column: 4, ColumnName: "Temp"}},
	} {
		var out, errOut bytes.Buffer
		code := Run(newTree(), c.args, &out, &errOut)
		var got ErrorReport
		if err := json.Unmarshal(out.Bytes(), &got); err != nil || code != c.code || errOut.Len() != 0 || got != c.want {
			t.Errorf("%q: exit %d, stdout %q, stderr %q\nwant exit %d, stdout %+v and nothing on stderr", c.args, code, out.String(), errOut.String(), c.code, c.want)
		}
	}
	// An outcome's own code (Exit) is not a failure: its JSON, if any, is
	// the command's, and the line stays on stderr.
	for _, c := range []struct {
		args []string
		code int
		line string
	}{
		{[]string{"sub"}, 1, "prog: failed\n"},
		{[]string{"other", "--json", "f.json"}, 1, "prog: failed\n"},
		{[]string{"sub", "--json", "--n", "3"}, 3, "prog: partial\n"},
	} {
		var out, errOut bytes.Buffer
		if code := Run(newTree(), c.args, &out, &errOut); code != c.code || out.Len() != 0 || errOut.String() != c.line {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want %d and %q on stderr", c.args, code, out.String(), errOut.String(), c.code, c.line)
		}
	}
}

// TestArgumentCountNamesUsage: a wrong number of arguments printed only
// cobra's "accepts 1 arg(s), received 0"; the usage line now says which
// command and what it takes.
func TestArgumentCountNamesUsage(t *testing.T) {
	root := &cobra.Command{Use: "prog"}
	status := &cobra.Command{Use: "status ID", Args: cobra.ExactArgs(1), RunE: func(*cobra.Command, []string) error { return nil }}
	group := &cobra.Command{Use: "rollout"}
	group.AddCommand(status)
	root.AddCommand(group)
	var out, errOut bytes.Buffer
	if code := Run(root, []string{"rollout", "status"}, &out, &errOut); code != ExitUsage {
		t.Fatalf("exit %d, want %d", code, ExitUsage)
	}
	if want := "prog: accepts 1 arg(s), received 0; usage: prog rollout status ID [flags]\n"; errOut.String() != want {
		t.Errorf("stderr %q, want %q", errOut.String(), want)
	}
}
