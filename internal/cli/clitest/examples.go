// Package clitest checks what a program's help promises: that every
// example of every command parses as the program parses it. It is for
// tests (it needs a shell parser the programs do not).
package clitest

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"mvdan.cc/sh/v3/syntax"
)

// Example is one line of a command's Example text: a shell command line
// (continuation lines joined), as a user would paste it.
type Example struct {
	Command string // the command whose help shows it, "tritctl rollout create"
	Line    string
}

// Examples returns every example line of the tree under root, in the
// order of the tree (a command, then its subcommands by name). Lines that
// are only a comment are left out.
func Examples(root *cobra.Command) []Example {
	var out []Example
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" {
			return
		}
		for _, l := range Lines(c.Example) {
			out = append(out, Example{c.CommandPath(), l})
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	return out
}

// Lines splits an Example text into shell lines: continuations ("\" at
// the end) joined, indentation and comment-only lines dropped.
func Lines(text string) []string {
	var out []string
	cont := false
	for _, l := range strings.Split(text, "\n") {
		l = strings.TrimSpace(l)
		switch {
		case cont:
			out[len(out)-1] = strings.TrimSpace(strings.TrimSuffix(out[len(out)-1], `\`)) + " " + l
		case l == "" || strings.HasPrefix(l, "#"):
			continue
		default:
			out = append(out, l)
		}
		cont = strings.HasSuffix(l, `\`)
	}
	return out
}

// Calls returns the calls of program in a shell line: the words of each
// simple command (in pipes, lists, after sudo -u USER or watch -n N) whose
// first word is program, without it. Words that are not literal text
// ($(date +%F), $VAR) read as "X".
func Calls(line, program string) ([][]string, error) {
	f, err := syntax.NewParser().Parse(strings.NewReader(line), "")
	if err != nil {
		return nil, err
	}
	var calls [][]string
	syntax.Walk(f, func(n syntax.Node) bool {
		call, ok := n.(*syntax.CallExpr)
		if !ok {
			return true
		}
		var words []string
		for _, w := range call.Args {
			words = append(words, literal(w))
		}
		words = dropPrefix(words)
		if len(words) > 0 && words[0] == program {
			calls = append(calls, words[1:])
		}
		return true
	})
	return calls, nil
}

// dropPrefix removes the commands that run another: sudo [-u USER] and
// watch [-n N].
func dropPrefix(w []string) []string {
	for len(w) > 0 {
		switch w[0] {
		case "sudo":
			w = w[1:]
			if len(w) >= 2 && w[0] == "-u" {
				w = w[2:]
			}
		case "watch":
			w = w[1:]
			if len(w) >= 2 && w[0] == "-n" {
				w = w[2:]
			}
		default:
			return w
		}
	}
	return w
}

func literal(w *syntax.Word) string {
	var b strings.Builder
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			b.WriteString(p.Value)
		case *syntax.SglQuoted:
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				if l, ok := q.(*syntax.Lit); ok {
					b.WriteString(l.Value)
				} else {
					b.WriteString("X")
				}
			}
		default:
			b.WriteString("X")
		}
	}
	return b.String()
}

// Check parses every call of the program in every example of the tree
// newRoot builds, as the program would — the command exists, its flags
// and their values parse, the arguments are what it takes, required flags
// are there — without running it, and returns one line per example that
// does not. Each call gets a new tree (parsing sets flags). Examples of
// other programs (systemctl, jq) are not checked.
func Check(newRoot func() *cobra.Command) []string {
	var bad []string
	name := newRoot().Name()
	for _, ex := range Examples(newRoot()) {
		calls, err := Calls(ex.Line, name)
		if err != nil {
			bad = append(bad, fmt.Sprintf("%s: example %q: not a shell line: %v", ex.Command, ex.Line, err))
			continue
		}
		for _, args := range calls {
			if err := parse(newRoot(), args); err != nil {
				bad = append(bad, fmt.Sprintf("%s: example %q: %v", ex.Command, ex.Line, err))
			}
		}
	}
	return bad
}

// parse does what cobra does with args before it runs a command.
func parse(root *cobra.Command, args []string) error {
	cmd, rest, err := root.Find(args)
	if err != nil {
		return err
	}
	if !cmd.Runnable() {
		return fmt.Errorf("%q runs nothing", cmd.CommandPath())
	}
	if err := cmd.ParseFlags(rest); err != nil {
		return err
	}
	if err := cmd.ValidateArgs(cmd.Flags().Args()); err != nil {
		return err
	}
	if err := cmd.ValidateRequiredFlags(); err != nil {
		return err
	}
	return cmd.ValidateFlagGroups()
}
