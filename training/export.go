package training

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/trit-iot/trit/inference/bundle"
	"github.com/trit-iot/trit/training/data"
)

// BundleMeta is what a bundle carries besides the model.
type BundleMeta struct {
	ModelID  string
	Release  uint64
	Created  time.Time // zero: now
	Expires  time.Time // zero: never
	Hardware string
	MinAgent string // "": bundle.MinAgentVersionFor the model
}

// Bundle encodes the trained model of res, trained on train, as an
// unsigned bundle (sign it with bundle.Sign) carrying meta, the feature
// names, how train was read (so `tritctl eval` needs no flags) and the
// training figures in its info section. It is the one way a trained model
// becomes a file, for tritctl and trit-fleet alike.
func (res *Result) Bundle(train *data.Dataset, meta BundleMeta) ([]byte, error) {
	if meta.Created.IsZero() {
		meta.Created = time.Now()
	}
	// A minimum below what the format needs would be a promise older
	// agents cannot keep (they refuse the format at its version byte).
	need := bundle.MinAgentVersionFor(res.Spec)
	if meta.MinAgent == "" || errors.Is((bundle.Compat{MinAgentVersion: need}).CheckAgent(meta.MinAgent), bundle.ErrAgentTooOld) {
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
	info := map[string]string{bundle.InfoRows: strconv.Itoa(train.N)}
	counts := make([]string, len(train.Classes))
	n := make([]int, len(train.Classes))
	for _, y := range train.Y {
		n[y]++
	}
	for c := range counts {
		counts[c] = strconv.Itoa(n[c])
	}
	info[bundle.InfoClassCounts] = strings.Join(counts, ",")
	if train.Spec != nil {
		rs := *train.Spec
		rs.Features = nil
		info[bundle.InfoRead] = rs.String()
	}
	if res.Validation != "" {
		info[bundle.InfoValidation] = res.Validation
	}
	if res.Selected != nil {
		info[bundle.InfoBalanced] = strconv.FormatFloat(res.Selected.Balanced, 'f', 2, 64)
	}
	s := res.Structure
	weights := "ternary"
	if s.Binary {
		weights = "binary"
	}
	info[bundle.InfoStructure] = fmt.Sprintf("thresholds=%d projection=%d p=%d weights=%s", s.Thresholds, s.Projection, s.P, weights)
	return info
}
