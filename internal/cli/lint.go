package cli

import (
	"fmt"
	"slices"

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
//   - --config has the shorthand -c;
//   - the same concept has the same name (docs/CLI.md): no --dir or
//     --password-file (what a command writes is --out), no --trusted (the
//     key a command uses is --key), no --features that names a feature
//     pipeline (that is --features-from; LIBSVM's --features is a number);
//   - --device and --selector are repeatable;
//   - --min-agent has no fixed default (the model's format decides);
//   - a command that lists, shows, inspects or creates something (list,
//     show, status, inspect, create) has --json.
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
		if f := c.Flag("json"); c.Runnable() && slices.Contains(jsonCommands, c.Name()) && (f == nil || f.Hidden) {
			out = append(out, fmt.Sprintf("%s: no --json (every command that lists, shows or creates something prints JSON with --json)", c.CommandPath()))
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
			case renamed[f.Name] != "":
				bad("%s", renamed[f.Name])
			case f.Name == "features" && typ != "int":
				bad("a feature pipeline is --features-from everywhere (--features is LIBSVM's number of features)")
			case (f.Name == "device" || f.Name == "selector") && typ != "stringSlice" && typ != "stringArray":
				bad("--%s is repeatable everywhere", f.Name)
			case f.Name == "min-agent" && f.DefValue != "":
				bad("--min-agent's default is the model's (the first agent that reads its format), not %s", f.DefValue)
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

// renamed are flag names the vocabulary replaced, and what replaced them;
// a command keeps such a name only hidden (Renamed).
var renamed = map[string]string{
	"dir":           "the directory a command writes is --out (-o), as every file it writes",
	"password-file": "a new secret's file is --out (-o), as every file a command writes",
	"trusted":       "the key file a command uses is --key",
}

// jsonCommands are the names of commands that print what they list, show
// or create: each has --json.
var jsonCommands = []string{"list", "show", "status", "inspect", "create"}
