package bundle

import (
	"errors"
	"testing"

	"github.com/trit-iot/trit/inference"
)

// Every format this package reads has a first agent, and a newer format
// needs a newer agent.
func TestMinAgentVersionPerFormat(t *testing.T) {
	prev := ""
	for f := OldestFormat; f <= FormatVersion; f++ {
		v := MinAgentVersion(f)
		if _, err := parseVersion(v); err != nil {
			t.Fatalf("format %d: minimum agent %q: %v", f, v, err)
		}
		if prev != "" && !errors.Is((Compat{MinAgentVersion: v}).CheckAgent(prev), ErrAgentTooOld) {
			t.Errorf("format %d needs agent %s, not newer than format %d's %s", f, v, f-1, prev)
		}
		prev = v
	}
	if v := MinAgentVersion(FormatVersion + 1); v != "" {
		t.Errorf("unknown format: %q", v)
	}
}

// The minimum follows the format Encode writes for the model.
func TestMinAgentVersionFor(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec *inference.ModelSpec
	}{
		{"no trees", tinySpec(t)},
		{"trees", tinyTreeSpec(t)},
		{"leaf planes", tinyPlanesSpec(t)},
	} {
		format := int(encodeTiny(t, tc.spec)[len(Magic)]) // the version byte
		if got, want := MinAgentVersionFor(tc.spec), MinAgentVersion(format); got != want {
			t.Errorf("%s: format %d, MinAgentVersionFor %q, want %q", tc.name, format, got, want)
		}
	}
	if MinAgentVersionFor(tinySpec(t)) != DefaultMinAgentVersion {
		t.Error("a model without trees needs more than the default minimum")
	}
}
