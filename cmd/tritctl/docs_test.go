package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDocsAgree: the claims a newcomer reads in several places say the
// same thing — how long the demo takes after the first build (README,
// Makefile, docs/OPERATIONS.md), how long training on the standard
// occupancy set takes (README against docs/BENCHMARKS.md's measurement),
// and no reference doc names a command that no longer exists.
func TestDocsAgree(t *testing.T) {
	root := repoRoot(t)
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		// Line breaks are spaces: a claim may be wrapped anywhere.
		return regexp.MustCompile(`\s*\n\s*(## )?`).ReplaceAllString(string(b), " ")
	}
	demo := regexp.MustCompile(`after the first build,? a run takes about (\d+) s on a quiet 2-core machine|about (\d+) s(?:econds)? on a quiet 2-core machine after the first build`)
	var seconds []string
	for _, name := range []string{"README.md", "Makefile", "docs/OPERATIONS.md"} {
		m := demo.FindStringSubmatch(read(name))
		if m == nil {
			t.Errorf("%s does not say how long the demo takes after the first build (%q)", name, demo)
			continue
		}
		seconds = append(seconds, m[1]+m[2])
	}
	for _, s := range seconds {
		if s != seconds[0] {
			t.Errorf("the demo takes %q s after the first build, depending on the file: README, Makefile, OPERATIONS.md", seconds)
			break
		}
	}

	bench := regexp.MustCompile(`\| occupancy \| 7,090 × 16 \| ([0-9.]+) \|`).FindStringSubmatch(read("docs/BENCHMARKS.md"))
	readme := regexp.MustCompile("tritctl train --standard occupancy -o occupancy.trit` trains on one \\(7,090 rows of 16 sensors: [^)]*?([0-9.]+) s in docs/BENCHMARKS.md").FindStringSubmatch(read("README.md"))
	switch {
	case bench == nil:
		t.Errorf("docs/BENCHMARKS.md has no training time for occupancy")
	case readme == nil:
		t.Errorf("the README does not give occupancy's training time from docs/BENCHMARKS.md")
	case readme[1] != bench[1]:
		t.Errorf("occupancy trains in %s s in the README, %s s in docs/BENCHMARKS.md", readme[1], bench[1])
	}

	docs, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	for _, d := range append(docs, filepath.Join(root, "README.md")) {
		b, _ := os.ReadFile(d)
		if strings.Contains(string(b), "tritctl bench") {
			t.Errorf("%s names tritctl bench, which is trit-bench", filepath.Base(d))
		}
	}
}
