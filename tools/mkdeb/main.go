// Command mkdeb builds one Debian package from an nfpm configuration with
// nfpm's library (pinned in this module's go.mod). It is what `make dist`
// runs: nfpm's own command needs modules that cannot be fetched here (its
// RPM and MSIX packagers), and trit ships only .debs.
//
//	mkdeb -config dist/trit-agent.yaml -target dist/out/
//
// Environment variables anywhere in the configuration (${VERSION},
// ${BUILD}, …) are expanded from the environment before it is parsed; an
// unset one is an error, so a typo cannot package the wrong file.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/goreleaser/nfpm/v2"
	"github.com/goreleaser/nfpm/v2/deb"
)

func main() {
	config := flag.String("config", "", "nfpm configuration file (YAML)")
	target := flag.String("target", ".", "output directory (the package gets Debian's conventional file name)")
	flag.Parse()
	if *config == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: mkdeb -config FILE [-target DIR]")
		os.Exit(2)
	}
	path, err := build(*config, *target)
	if err != nil {
		fmt.Fprintf(os.Stderr, "mkdeb: %s: %v\n", *config, err)
		os.Exit(1)
	}
	fmt.Println(path)
}

func build(config, dir string) (string, error) {
	raw, err := os.ReadFile(config)
	if err != nil {
		return "", err
	}
	var unset []string
	text := os.Expand(string(raw), func(name string) string {
		v, ok := os.LookupEnv(name)
		if !ok {
			unset = append(unset, name)
		}
		return v
	})
	if len(unset) > 0 {
		return "", fmt.Errorf("environment variables not set: %s", strings.Join(unset, ", "))
	}
	cfg, err := nfpm.Parse(strings.NewReader(text))
	if err != nil {
		return "", err
	}
	info, err := cfg.Get("deb")
	if err != nil {
		return "", err
	}
	info = nfpm.WithDefaults(info)
	if err := nfpm.PrepareForPackager(info, "deb"); err != nil {
		return "", err
	}
	pkg := deb.Default
	path := filepath.Join(dir, pkg.ConventionalFileName(info))
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	info.Target = path
	if err := pkg.Package(info, f); err != nil {
		f.Close()
		os.Remove(path)
		return "", err
	}
	return path, f.Close()
}
