package cli

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Lint checks a command tree against the flag vocabulary the four programs
// share (docs/CLI.md) and returns what breaks it, one line per finding:
//
//   - every command that runs something has an Example (unless
//     examples is false);
//   - -o is --out, the file (or directory, or prefix) a command writes;
//     there is no --output;
//   - --json is a switch (print JSON instead of text), never a file;
//   - --force is a switch (replace an existing output file);
//   - --label-column is a string (NAME, N counted from 1, or last);
//   - --config has the shorthand -c.
//
// Hidden flags (the deprecated names kept for scripts) are not checked.
// Tests of each program call it on the program's whole tree.
func Lint(root *cobra.Command, examples bool) []string {
	var out []string
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" {
			return
		}
		if examples && c.Runnable() && c.Example == "" {
			out = append(out, fmt.Sprintf("%s: no Example", c.CommandPath()))
		}
		check := func(f *pflag.Flag) {
			if f.Hidden {
				return
			}
			bad := func(format string, a ...any) {
				out = append(out, fmt.Sprintf("%s --%s: %s", c.CommandPath(), f.Name, fmt.Sprintf(format, a...)))
			}
			typ := f.Value.Type()
			switch {
			case f.Shorthand == "o" && f.Name != "out":
				bad("-o is --out everywhere")
			case f.Name == "out" && f.Shorthand != "o":
				bad("--out has the shorthand -o everywhere")
			case f.Name == "output":
				bad("the output file is --out (-o)")
			case f.Name == "json" && typ != "bool":
				bad("--json is a switch (JSON on stdout), not a %s; a file to write is --out", typ)
			case f.Name == "force" && typ != "bool":
				bad("--force is a switch")
			case f.Name == "label-column" && typ != "string":
				bad("--label-column takes NAME, N (from 1) or last: a string, not a %s", typ)
			case f.Name == "config" && f.Shorthand != "c":
				bad("--config has the shorthand -c everywhere")
			}
		}
		c.NonInheritedFlags().VisitAll(check)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	return out
}
