package clitest

import (
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

func tree(example string) func() *cobra.Command {
	return func() *cobra.Command {
		root := &cobra.Command{Use: "prog"}
		var out string
		sub := &cobra.Command{Use: "sub FILE", Args: cobra.ExactArgs(1), Example: example,
			RunE: func(*cobra.Command, []string) error { return nil }}
		sub.Flags().StringVarP(&out, "out", "o", "", "")
		sub.Flags().Int("n", 0, "")
		sub.MarkFlagRequired("out")
		group := &cobra.Command{Use: "group"}
		root.AddCommand(sub, group)
		return root
	}
}

// TestCheck: an example that calls the program with an unknown flag, a
// bad value, a missing required flag, the wrong number of arguments or an
// unknown command is reported; lines of other programs, comments, pipes,
// sudo and watch prefixes and continuation lines are read as a shell does.
func TestCheck(t *testing.T) {
	good := `  prog sub a.txt -o b.txt     # a comment
  # a line of comment only
  sudo -u svc prog sub "a b.txt" --out=c.txt | jq -r .x && echo done
  watch -n 2 prog sub a -o "$(date +%F).txt"
  prog sub a.txt \
      -o d.txt --n 3
  systemctl stop prog-service`
	if bad := Check(tree(good)); len(bad) > 0 {
		t.Errorf("good examples reported: %q", bad)
	}
	for _, ex := range []string{
		"prog sub a.txt -o b --nope",
		"prog sub a.txt -o b --n x",
		"prog sub a.txt",
		"prog sub -o b",
		"prog nosuch",
		"prog group",
		"echo x && prog sub a b -o c",
	} {
		if bad := Check(tree("  " + ex)); len(bad) != 1 || !strings.Contains(bad[0], ex) {
			t.Errorf("%q: %q, want one finding", ex, bad)
		}
	}
	if got := Lines("  a \\\n    b\n  # c\n\n  d"); !slices.Equal(got, []string{"a b", "d"}) {
		t.Errorf("Lines: %q", got)
	}
}
