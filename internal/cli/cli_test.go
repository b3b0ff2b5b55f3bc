package cli

import (
	"bytes"
	"errors"
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
