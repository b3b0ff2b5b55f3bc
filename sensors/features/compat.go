package features

import (
	"fmt"
	"slices"
	"strings"
)

// FeatureError names a feature a pipeline cannot produce.
type FeatureError struct {
	Feature  string // the wanted feature name
	Position int    // its index in the wanted list; -1 if the list is empty
	Reason   string
}

// Error implements error.
func (e *FeatureError) Error() string {
	if e.Position < 0 {
		return "features: " + e.Reason
	}
	return fmt.Sprintf("features: cannot produce feature %q (position %d): %s", e.Feature, e.Position, e.Reason)
}

// CanProduce reports whether a pipeline built from spec, fed with the
// channels in available, can produce every feature of want (a model
// bundle's ordered feature names). The agent calls it before it accepts a
// bundle. It returns the spec's *SpecError if the spec is invalid, and
// otherwise a *FeatureError for the first feature of want that cannot be
// produced, for a name listed twice, or (Position -1) for an empty want: a
// bundle without feature names ("f0", "f1", ... implied) is refused too,
// because nothing says which input is which.
//
// Names are all it compares: a spec with the same names but another window
// or sample rate yields other values. Keep the spec a model was trained
// with beside its bundle.
func CanProduce(spec PipelineSpec, available []string, want []string) error {
	names, err := spec.FeatureNames()
	if err != nil {
		return err
	}
	// Feature name -> channel of the Spec producing it.
	from := map[string]string{}
	i := 0
	for _, f := range spec.Features {
		for range len(f.Stats) + len(f.Bands) {
			from[names[i]] = f.Channel
			i++
		}
	}
	if len(want) == 0 {
		return &FeatureError{Position: -1, Reason: "the model names no features; a bundle for a sensor gateway must list its ordered feature names"}
	}
	for pos, w := range want {
		ch, ok := from[w]
		switch {
		case slices.Contains(want[:pos], w):
			return &FeatureError{Feature: w, Position: pos, Reason: "listed twice"}
		case !ok:
			return &FeatureError{Feature: w, Position: pos, Reason: "the pipeline spec does not compute it (it computes " + summarize(names) + ")"}
		case !slices.Contains(available, ch):
			return &FeatureError{Feature: w, Position: pos, Reason: fmt.Sprintf("channel %q is not provided by the configured sensors (they provide %s)", ch, summarize(available))}
		}
	}
	return nil
}

// summarize lists up to 8 names for an error message.
func summarize(names []string) string {
	if len(names) == 0 {
		return "nothing"
	}
	if len(names) <= 8 {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s, … (%d in all)", strings.Join(names[:8], ", "), len(names))
}
