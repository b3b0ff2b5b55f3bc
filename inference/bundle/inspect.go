package bundle

import (
	"encoding/hex"
	"math/bits"

	"github.com/trit-iot/trit/inference"
)

// Section is one section of an encoded bundle.
type Section struct {
	Name   string `json:"name"`
	Offset int    `json:"offset"`
	Size   int    `json:"size"`
}

// Breakdown is every field of a bundle and where its bytes go, for
// `tritctl bundle inspect` (its JSON form is the --json output). Times are
// Unix seconds, 0 meaning unset; the key ID and signature are hex. Fields
// of sections format 1 does not have are empty for a format-1 bundle.
type Breakdown struct {
	Size          int `json:"size"`
	FormatVersion int `json:"format_version"`

	ModelID   string `json:"model_id"`
	Release   uint64 `json:"release"`
	CreatedAt int64  `json:"created_at"`
	ExpiresAt int64  `json:"expires_at"`

	Features     int      `json:"features"` // D, the raw input count
	FeatureNames []string `json:"feature_names,omitempty"`
	// FeatureMatch says how an agent binds its channels to the inputs:
	// "name" (the bundle ships feature names) or "position" (it does not:
	// input i is the agent's i-th channel).
	FeatureMatch    string `json:"feature_match"`
	MinAgentVersion string `json:"min_agent_version"`
	Hardware        string `json:"hardware"`

	Classes []string `json:"classes"`

	ScalerForm string    `json:"scaler_form"` // "float16" or "float32"
	ScalerClip bool      `json:"scaler_clip"` // scaled values clamped to [-1, 1]
	ScalerLo   []float32 `json:"scaler_lo"`
	ScalerHi   []float32 `json:"scaler_hi"`

	ThresholdsForm  string      `json:"thresholds_form,omitempty"`  // "none" or "float16"; empty in format 1
	ThresholdCount  int         `json:"threshold_count"`            // NT, over all features
	ThresholdWeight int         `json:"threshold_weight,omitempty"` // ρ; 0 when there are neither thresholds nor trees
	Fingerprint     int         `json:"fingerprint_columns"`        // columns of the drift fingerprint; 0 = none
	Thresholds      [][]float32 `json:"thresholds,omitempty"`       // per feature

	TreeCount  int `json:"tree_count"`            // oblivious trees (format 3 or 4); 0 = none
	TreeDepth  int `json:"tree_depth,omitempty"`  // levels of every tree
	TreePlanes int `json:"tree_planes,omitempty"` // columns per leaf: 2..4 in format 4, 1 in format 3, 0 without trees
	// TreeColumns is NL = TreeCount·2^TreeDepth·TreePlanes, the tree leaf
	// columns; plane b's weigh ρ·2^b.
	TreeColumns int `json:"tree_columns"`
	// TreeFeatures counts the tree tests on each input feature (nil
	// without trees): which sensors the trees' interactions use.
	TreeFeatures []int `json:"tree_features,omitempty"`

	Projection *ProjectionInfo `json:"projection,omitempty"` // nil: none

	// Calibration is the format-5 calibration (margin bin edges, their
	// confidences ×255, the unknown thresholds); nil: none.
	Calibration *inference.Calibration `json:"calibration,omitempty"`

	Generator  uint32  `json:"generator"`
	Seed       uint64  `json:"seed,string"`
	Sigma      float64 `json:"sigma"`
	TransformD int     `json:"transform_d"` // the transform's inputs: D, the projection's outputs, or 0 when P = 0
	P          int     `json:"p"`           // random features; 0: none

	Columns     int     `json:"columns"`   // embedding width NT + NL + P
	KeptForm    string  `json:"kept_form"` // "bitmap", "deltas" or "all"
	KeptColumns []int32 `json:"kept_columns"`

	Vectors []VectorInfo `json:"vectors"`

	SelfTestClass  int     `json:"selftest_class"`
	SelfTestScores []int32 `json:"selftest_scores"`

	Info map[string]string `json:"info,omitempty"`

	Signed    bool   `json:"signed"` // trailer not all zero; Inspect does not verify it
	KeyID     string `json:"key_id"`
	Signature string `json:"signature"`

	// Sections are every section in order, with its offset and size;
	// their sizes add up to Size. Names: magic, header, compat, classes,
	// scaler, thresholds, trees, projection, transform, kept, weights,
	// alpha, selftest, fingerprint, info, signature (the 72-byte trailer).
	// Formats 3 and 4 have them all; format 2 has no trees section; format
	// 1 no thresholds, trees, projection, fingerprint or info section.
	Sections []Section `json:"sections"`

	// Bundle is the decoded bundle itself (Signed there means only that
	// a signature is present: Inspect verifies nothing).
	Bundle *Bundle `json:"-"`
}

// Packing describes one stored ternary vector: its values and its form
// (see docs/BUNDLE.md): "sign" (sign plane only: no zero), "planes" (sign
// and non-zero planes) or "base3" (five weights a byte).
type Packing struct {
	Plus          int     `json:"plus"`            // coefficients +1
	Minus         int     `json:"minus"`           // coefficients -1
	Zero          int     `json:"zero"`            // coefficients 0
	Form          string  `json:"form"`            // "sign", "planes" or "base3"
	Bytes         int     `json:"bytes"`           // payload, without the flags byte
	BitsPerWeight float64 `json:"bits_per_weight"` // 8·Bytes per coefficient; 0 for none
}

// VectorInfo summarises one ternary weight vector (over the kept columns).
type VectorInfo struct {
	Packing
	Alpha          float32 `json:"alpha"`
	NonZeroOmitted bool    `json:"nonzero_plane_omitted"` // form "sign"
	SelfTestScore  int32   `json:"selftest_score"`
	SignPlaneBytes int     `json:"sign_plane_bytes"`    // 0 in the base-3 form
	NonZeroBytes   int     `json:"nonzero_plane_bytes"` // 0 unless form "planes"
	// SignBitsIgnored counts sign bits set where the weight is 0 (format 1
	// only; format 2 refuses them).
	SignBitsIgnored int `json:"sign_bits_ignored,omitempty"`
}

// ProjectionInfo summarises the projection (format 2).
type ProjectionInfo struct {
	Inputs  int             `json:"inputs"`  // D
	Outputs int             `json:"outputs"` // r, the transform's inputs
	Rows    []ProjectionRow `json:"rows"`    // per output
}

// ProjectionRow summarises one projection output: its ternary coefficients
// over the inputs, scale and bias.
type ProjectionRow struct {
	Packing
	Scale float32 `json:"scale"`
	Bias  float32 `json:"bias"`
}

// packing summarises the ternary vector (sign, nz) of n coordinates stored
// in the given form.
func packing(sign, nz []uint64, n int, form byte) Packing {
	p := Packing{Form: packName(form), Bytes: packedSize(form, n)}
	for i, z := range nz {
		p.Plus += bits.OnesCount64(z & sign[i])
		p.Minus += bits.OnesCount64(z &^ sign[i])
	}
	p.Zero = n - p.Plus - p.Minus
	if n > 0 {
		p.BitsPerWeight = 8 * float64(p.Bytes) / float64(n)
	}
	return p
}

// Inspect decodes a bundle without verifying its signature, checking its
// expiry or capping its size (allocations stay bounded by len(data)), and
// reports every field and the byte count of every section. Use Decode to
// decide whether to trust a bundle; Inspect is for looking at one.
func Inspect(data []byte) (*Breakdown, error) {
	if err := checkPreamble(data); err != nil {
		return nil, err
	}
	b, l, err := parse(data)
	if err != nil {
		return nil, err
	}
	if err := b.Spec.Validate(); err != nil {
		return nil, &FormatError{Section: "model", Offset: -1, Err: ErrInvalid, Cause: err}
	}
	s := b.Spec
	out := &Breakdown{
		Size:            len(data),
		FormatVersion:   b.Format,
		ModelID:         b.Header.ModelID,
		Release:         b.Header.Release,
		CreatedAt:       unixSeconds(b.Header.CreatedAt),
		ExpiresAt:       unixSeconds(b.Header.ExpiresAt),
		Features:        s.NumFeatures(),
		FeatureNames:    b.Compat.Features,
		FeatureMatch:    "position",
		MinAgentVersion: b.Compat.MinAgentVersion,
		Hardware:        b.Compat.Hardware,
		Classes:         s.Classes,
		ScalerForm:      "float16",
		ScalerClip:      s.Scaler.Clip,
		ScalerLo:        s.Scaler.Lo,
		ScalerHi:        s.Scaler.Hi,
		ThresholdCount:  s.NumThresholds(),
		ThresholdWeight: thresholdWeight(s),
		TreeCount:       s.Trees.Count(),
		TreeColumns:     s.NumTreeColumns(),
		Fingerprint:     fingerprintColumns(s),
		Calibration:     s.Calibration,
		Generator:       s.Transform.Generator,
		Seed:            s.Transform.Seed,
		Sigma:           s.Transform.Sigma,
		TransformD:      s.Transform.D,
		P:               s.Transform.P,
		Columns:         s.Columns(),
		KeptForm:        "bitmap",
		KeptColumns:     s.Kept,
		SelfTestClass:   b.SelfTest.Class,
		SelfTestScores:  b.SelfTest.Scores,
		Info:            b.Info,
		Signed:          b.Signed,
		KeyID:           hex.EncodeToString(b.KeyID[:]),
		Signature:       hex.EncodeToString(b.Signature[:]),
		Sections:        l.sections,
		Bundle:          b,
	}
	if b.Compat.Features != nil {
		out.FeatureMatch = "name"
	}
	if s.Thresholds != nil {
		// [] rather than null in JSON for a feature without thresholds.
		out.Thresholds = make([][]float32, len(s.Thresholds))
		for i, list := range s.Thresholds {
			out.Thresholds[i] = append([]float32{}, list...)
		}
	}
	if tr := s.Trees; tr != nil {
		out.TreeDepth = tr.Depth
		out.TreePlanes = tr.NumPlanes()
		out.TreeFeatures = make([]int, s.NumFeatures())
		for _, f := range tr.Feature {
			out.TreeFeatures[f]++
		}
	}
	if l.scalerForm == scalerFloat32 {
		out.ScalerForm = "float32"
	}
	if b.Format >= 2 {
		out.ThresholdsForm = "none"
		if l.thresholdsForm == thresholdsHalf {
			out.ThresholdsForm = "float16"
		}
	}
	switch l.keptForm {
	case keptDeltas:
		out.KeptForm = "deltas"
	case keptAll:
		out.KeptForm = "all"
	}
	if p := s.Projection; p != nil {
		d := s.NumFeatures()
		out.Projection = &ProjectionInfo{Inputs: d, Outputs: p.Out()}
		for o := range p.Out() {
			out.Projection.Rows = append(out.Projection.Rows, ProjectionRow{
				Packing: packing(p.Sign[o], p.NonZero[o], d, l.projectionForms[o]),
				Scale:   p.Scale[o],
				Bias:    p.Bias[o],
			})
		}
	}
	k := len(s.Kept)
	nb := (k + 7) / 8
	for c := range s.Sign {
		form := l.vectorForms[c]
		v := VectorInfo{
			Packing:        packing(s.Sign[c], s.NonZero[c], k, form),
			Alpha:          s.Alpha[c],
			NonZeroOmitted: form == packSign,
			SelfTestScore:  b.SelfTest.Scores[c],
		}
		if form != packBase3 {
			v.SignPlaneBytes = nb
		}
		if form == packPlanes {
			v.NonZeroBytes = nb
		}
		for i, nz := range s.NonZero[c] {
			v.SignBitsIgnored += bits.OnesCount64(s.Sign[c][i] &^ nz)
		}
		out.Vectors = append(out.Vectors, v)
	}
	return out, nil
}

// thresholdWeight is ρ as the bundle stores it: 1 for an unset weight, 0
// without thresholds or trees.
func thresholdWeight(s *inference.ModelSpec) int {
	switch {
	case s.AxisColumns() == 0:
		return 0
	case s.ThresholdWeight == 0:
		return 1
	}
	return int(s.ThresholdWeight)
}

func fingerprintColumns(s *inference.ModelSpec) int {
	if s.Fingerprint == nil {
		return 0
	}
	return len(s.Fingerprint.Columns)
}
