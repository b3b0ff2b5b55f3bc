package training

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/trit-iot/trit/inference"
	"github.com/trit-iot/trit/inference/bundle"
	"github.com/trit-iot/trit/training/data"
)

// MinAgentVersion is the oldest agent that runs the bundles training
// writes: the first to read bundle format 2. A model with trees needs
// MinAgentVersionTrees, the first to read format 3, and one whose trees
// have leaf planes MinAgentVersionTreePlanes, the first to read format 4;
// Bundle raises a lower minimum to it, so the fleet and `bundle inspect`
// show which agents can run it (an older agent refuses it already at the
// format version, and the fleet refuses a rollout to agents it knows are
// older).
const (
	MinAgentVersion           = "0.2.0"
	MinAgentVersionTrees      = "0.3.0"
	MinAgentVersionTreePlanes = "0.4.0"
)

// minAgent is the oldest agent that reads spec's bundle format.
func minAgent(spec *inference.ModelSpec) string {
	switch {
	case spec.Trees.NumPlanes() > 1:
		return MinAgentVersionTreePlanes
	case spec.Trees != nil:
		return MinAgentVersionTrees
	}
	return MinAgentVersion
}

// BundleMeta is what a bundle carries besides the model.
type BundleMeta struct {
	ModelID  string
	Release  uint64
	Created  time.Time // zero: now
	Expires  time.Time // zero: never
	Hardware string
	MinAgent string // "": MinAgentVersion
}

// Info keys training writes into a bundle's info section (agents ignore
// it; tools show it).
const (
	InfoRead        = "read"               // data.ReadSpec text, without the feature names (the compat section has them)
	InfoRows        = "train.rows"         // training rows
	InfoClassCounts = "train.class_counts" // rows per class, comma-separated in class order
	InfoValidation  = "train.validation"   // how candidates were validated
	InfoBalanced    = "train.balanced"     // validation balanced accuracy of the chosen model, percent
	InfoStructure   = "train.structure"    // thresholds, projection, p, weights
)

// Bundle encodes the trained model of res, trained on train, as an
// unsigned bundle (sign it with bundle.Sign) carrying meta, the feature
// names, how train was read (so `tritctl eval` needs no flags) and the
// training figures in its info section. It is the one way a trained model
// becomes a file, for tritctl and trit-fleet alike.
func (res *Result) Bundle(train *data.Dataset, meta BundleMeta) ([]byte, error) {
	if meta.Created.IsZero() {
		meta.Created = time.Now()
	}
	if meta.MinAgent == "" {
		meta.MinAgent = MinAgentVersion
	}
	if need := minAgent(res.Spec); errors.Is((bundle.Compat{MinAgentVersion: need}).CheckAgent(meta.MinAgent), bundle.ErrAgentTooOld) {
		meta.MinAgent = need
	}
	b := &bundle.Bundle{
		Header: bundle.Header{ModelID: meta.ModelID, Release: meta.Release, CreatedAt: meta.Created, ExpiresAt: meta.Expires},
		Compat: bundle.Compat{Features: res.Spec.Features, MinAgentVersion: meta.MinAgent, Hardware: meta.Hardware},
		Spec:   res.Spec,
		Info:   res.info(train),
	}
	raw, err := bundle.Encode(b)
	if err != nil {
		return nil, fmt.Errorf("training: bundling the model: %w", err)
	}
	return raw, nil
}

// info is the bundle info section for res.
func (res *Result) info(train *data.Dataset) map[string]string {
	info := map[string]string{InfoRows: strconv.Itoa(train.N)}
	counts := make([]string, len(train.Classes))
	n := make([]int, len(train.Classes))
	for _, y := range train.Y {
		n[y]++
	}
	for c := range counts {
		counts[c] = strconv.Itoa(n[c])
	}
	info[InfoClassCounts] = strings.Join(counts, ",")
	if train.Spec != nil {
		rs := *train.Spec
		rs.Features = nil
		info[InfoRead] = rs.String()
	}
	if res.Validation != "" {
		info[InfoValidation] = res.Validation
	}
	if res.Selected != nil {
		info[InfoBalanced] = strconv.FormatFloat(res.Selected.Balanced, 'f', 2, 64)
	}
	s := res.Structure
	weights := "ternary"
	if s.Binary {
		weights = "binary"
	}
	info[InfoStructure] = fmt.Sprintf("thresholds=%d projection=%d p=%d weights=%s", s.Thresholds, s.Projection, s.P, weights)
	return info
}
