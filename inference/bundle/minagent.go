package bundle

import "github.com/trit-iot/trit/inference"

// DefaultMinAgentVersion is the minimum agent version a bundle carries
// unless its model needs a newer agent (MinAgentVersionFor): the first
// agent to read format 2, the format of every model without trees.
const DefaultMinAgentVersion = "0.2.0"

// minAgentVersions maps each format to the first agent release that reads
// it. An older agent refuses the bundle at its version byte, before the
// compat section can tell why.
var minAgentVersions = map[int]string{
	1: "0.1.0",
	2: DefaultMinAgentVersion,
	3: "0.3.0", // trees
	4: "0.4.0", // tree leaf planes
	5: "0.5.0", // calibrated confidence and unknown
}

// MinAgentVersion returns the first agent release that reads bundles of
// the given format, or "" for a format this package does not know.
func MinAgentVersion(format int) string { return minAgentVersions[format] }

// MinAgentVersionFor returns the first agent release that reads the
// bundle Encode writes for spec (Bundle.Format 0). A bundle's minimum
// agent version should be at least this, so that the fleet and `bundle
// inspect` tell which agents can run it.
func MinAgentVersionFor(spec *inference.ModelSpec) string {
	return MinAgentVersion(formatFor(spec))
}
