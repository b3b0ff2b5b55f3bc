// Package buildinfo holds the one version the three binaries (trit-agent,
// trit-fleet, tritctl) report. Release builds set it with
//
//	-ldflags "-X github.com/trit-iot/trit/internal/buildinfo.Version=1.2.3"
//
// It is "major.minor.patch": agents compare it with a bundle's minimum
// agent version, so it must parse as one.
package buildinfo

// Version is the version of this build.
var Version = "0.5.0"
