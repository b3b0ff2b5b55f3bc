package cli

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Renamed makes --old an alias of the flag --name on cmd: a name the
// command had before the vocabulary (docs/CLI.md) settled on --name,
// kept so that scripts do not break, and shown nowhere (help, completion,
// Lint). It returns cmd.
func Renamed(cmd *cobra.Command, name string, old ...string) *cobra.Command {
	fs := cmd.Flags()
	prev := fs.GetNormalizeFunc()
	fs.SetNormalizeFunc(func(f *pflag.FlagSet, s string) pflag.NormalizedName {
		for _, o := range old {
			if s == o {
				return pflag.NormalizedName(name)
			}
		}
		return prev(f, s)
	})
	return cmd
}
