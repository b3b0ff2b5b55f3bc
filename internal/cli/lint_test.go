package cli

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestLintVocabulary: the names the vocabulary replaced are refused
// unless hidden (Renamed keeps them working), a pipeline is
// --features-from, --device is repeatable, --min-agent has no fixed
// default, and list, show, status, inspect and create print JSON.
func TestLintVocabulary(t *testing.T) {
	run := func(*cobra.Command, []string) error { return nil }
	root := &cobra.Command{Use: "prog"}
	add := func(name string, flags func(c *cobra.Command)) {
		c := &cobra.Command{Use: name, Example: "  prog " + name, RunE: run}
		flags(c)
		root.AddCommand(c)
	}
	add("ca", func(c *cobra.Command) { c.Flags().String("dir", "pki", "") })
	add("secret", func(c *cobra.Command) { c.Flags().String("password-file", "", "") })
	add("read", func(c *cobra.Command) { c.Flags().String("features", "auto", "") })
	add("pull", func(c *cobra.Command) { c.Flags().String("device", "", "") })
	add("sign", func(c *cobra.Command) { c.Flags().String("min-agent", "0.2.0", "") })
	add("list", func(c *cobra.Command) {})
	add("good", func(c *cobra.Command) {
		c.Flags().StringP("out", "o", "", "")
		c.Flags().Int("features", 0, "")
		c.Flags().StringSlice("device", nil, "")
		c.Flags().String("min-agent", "", "")
		Renamed(c, "out", "dir")
	})
	bad := Lint(root, true)
	for _, want := range []string{"prog ca --dir", "prog secret --password-file", "prog read --features", "prog pull --device", "prog sign --min-agent", "prog list: no --json"} {
		found := false
		for _, b := range bad {
			found = found || strings.HasPrefix(b, want)
		}
		if !found {
			t.Errorf("no finding %q in %q", want, bad)
		}
	}
	for _, b := range bad {
		if strings.HasPrefix(b, "prog good") {
			t.Errorf("finding on a good command: %s", b)
		}
	}
	if len(bad) != 6 {
		t.Errorf("%d findings, want 6: %q", len(bad), bad)
	}
	// A renamed flag's old name still sets the new one.
	var out string
	c := &cobra.Command{Use: "x", RunE: run}
	c.Flags().StringVarP(&out, "out", "o", "", "")
	Renamed(c, "out", "dir")
	c.SetArgs([]string{"--dir", "pki"})
	if err := c.Execute(); err != nil || out != "pki" {
		t.Errorf("--dir pki: %v, out %q", err, out)
	}
}
