package bundle

import (
	"encoding/hex"
	"math/bits"
)

// Section is one section of an encoded bundle.
type Section struct {
	Name   string `json:"name"`
	Offset int    `json:"offset"`
	Size   int    `json:"size"`
}

// Breakdown is every field of a bundle and where its bytes go, for
// `tritctl bundle inspect` (its JSON form is the --json output). Times are
// Unix seconds, 0 meaning unset; the key ID and signature are hex.
type Breakdown struct {
	Size          int `json:"size"`
	FormatVersion int `json:"format_version"`

	ModelID   string `json:"model_id"`
	Release   uint64 `json:"release"`
	CreatedAt int64  `json:"created_at"`
	ExpiresAt int64  `json:"expires_at"`

	Features        int      `json:"features"`
	FeatureNames    []string `json:"feature_names,omitempty"`
	MinAgentVersion string   `json:"min_agent_version"`
	Hardware        string   `json:"hardware"`

	Classes []string `json:"classes"`

	ScalerForm string    `json:"scaler_form"` // "float16" or "float32"
	ScalerLo   []float32 `json:"scaler_lo"`
	ScalerHi   []float32 `json:"scaler_hi"`

	Generator uint32  `json:"generator"`
	Seed      uint64  `json:"seed,string"`
	Sigma     float64 `json:"sigma"`
	P         int     `json:"p"`

	KeptForm    string  `json:"kept_form"` // "bitmap" or "deltas"
	KeptColumns []int32 `json:"kept_columns"`

	Vectors []VectorInfo `json:"vectors"`

	SelfTestClass  int     `json:"selftest_class"`
	SelfTestScores []int32 `json:"selftest_scores"`

	Signed    bool   `json:"signed"` // trailer not all zero; Inspect does not verify it
	KeyID     string `json:"key_id"`
	Signature string `json:"signature"`

	Sections []Section `json:"sections"`

	// Bundle is the decoded bundle itself (Signed there means only that
	// a signature is present: Inspect verifies nothing).
	Bundle *Bundle `json:"-"`
}

// VectorInfo summarises one ternary weight vector.
type VectorInfo struct {
	Plus            int     `json:"plus"`  // weights +1
	Minus           int     `json:"minus"` // weights -1
	Zero            int     `json:"zero"`  // kept columns with weight 0
	Alpha           float32 `json:"alpha"`
	NonZeroOmitted  bool    `json:"nonzero_plane_omitted"`
	SelfTestScore   int32   `json:"selftest_score"`
	SignPlaneBytes  int     `json:"sign_plane_bytes"`
	NonZeroBytes    int     `json:"nonzero_plane_bytes"`
	SignBitsIgnored int     `json:"sign_bits_ignored,omitempty"` // sign bits set where the weight is 0
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
		FormatVersion:   int(data[len(Magic)]),
		ModelID:         b.Header.ModelID,
		Release:         b.Header.Release,
		CreatedAt:       unixSeconds(b.Header.CreatedAt),
		ExpiresAt:       unixSeconds(b.Header.ExpiresAt),
		Features:        s.Transform.D,
		FeatureNames:    b.Compat.Features,
		MinAgentVersion: b.Compat.MinAgentVersion,
		Hardware:        b.Compat.Hardware,
		Classes:         s.Classes,
		ScalerForm:      "float16",
		ScalerLo:        s.Scaler.Lo,
		ScalerHi:        s.Scaler.Hi,
		Generator:       s.Transform.Generator,
		Seed:            s.Transform.Seed,
		Sigma:           s.Transform.Sigma,
		P:               s.Transform.P,
		KeptForm:        "bitmap",
		KeptColumns:     s.Kept,
		SelfTestClass:   b.SelfTest.Class,
		SelfTestScores:  b.SelfTest.Scores,
		Signed:          b.Signed,
		KeyID:           hex.EncodeToString(b.KeyID[:]),
		Signature:       hex.EncodeToString(b.Signature[:]),
		Sections:        l.sections,
		Bundle:          b,
	}
	if l.scalerForm == scalerFloat32 {
		out.ScalerForm = "float32"
	}
	if l.keptForm == keptDeltas {
		out.KeptForm = "deltas"
	}
	nb := (len(s.Kept) + 7) / 8
	for c := range s.Sign {
		v := VectorInfo{
			Alpha:          s.Alpha[c],
			NonZeroOmitted: l.nzOmitted[c],
			SelfTestScore:  b.SelfTest.Scores[c],
			SignPlaneBytes: nb,
		}
		if !v.NonZeroOmitted {
			v.NonZeroBytes = nb
		}
		for i, nz := range s.NonZero[c] {
			sg := s.Sign[c][i]
			v.Plus += bits.OnesCount64(nz & sg)
			v.Minus += bits.OnesCount64(nz &^ sg)
			v.SignBitsIgnored += bits.OnesCount64(sg &^ nz)
		}
		v.Zero = len(s.Kept) - v.Plus - v.Minus
		out.Vectors = append(out.Vectors, v)
	}
	return out, nil
}
