package bundle

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/trit-iot/trit/inference"
)

// Encodings chosen by form bytes (see docs/BUNDLE.md; the ternary vector
// forms are in pack.go).
const (
	scalerHalf    = 0 // Lo and Hi as float16
	scalerFloat32 = 1 // Lo and Hi as float32 (a value beyond ±MaxHalf)

	scalerClip = 1 // format 2 scaler flags: clip scaled values to [-1, 1]

	projectionNone    = 0
	projectionPresent = 1

	keptBitmap = 0 // ceil(columns/8) bytes, bit j set if column j is kept
	keptDeltas = 1 // count, first column, then gaps (each >= 1)
	keptAll    = 2 // format 2: every column is kept; nothing follows
)

// Encode returns the unsigned bundle for b: the full layout with an all-zero
// key ID and signature, ready for Sign. It validates every field as Decode
// would, builds the model once to compute the self-test (b.SelfTest, KeyID,
// Signature and Signed are ignored), parses what it wrote as Decode does
// (an error rather than a bundle every agent would refuse), and never
// modifies b.
//
// It writes format b.Format, or with b.Format 0 the oldest of formats 2
// to 4 that can express the model: 4 for a model with tree leaf planes
// (Trees.NumPlanes() > 1), 3 for one with one-plane trees, else 2, so a
// model reads on every agent that can run it. Format 4 holds only models
// with leaf planes and formats 1 to 3 none, so such a model has one format.
// Every choice of form is the canonical one (the smallest; see
// docs/BUNDLE.md), so a model has exactly one encoding in each format from
// 2 on. The scaler
// ships as float16 when every value is a float16 value, as float32 when
// some |value| exceeds MaxHalf, and is refused otherwise: snap it with
// CompactScaler before training, the thresholds with CompactThresholds and
// the trees with CompactTrees. Times are stored as whole seconds.
func Encode(b *Bundle) ([]byte, error) {
	if b == nil || b.Spec == nil {
		return nil, encodeErr("model", "no model spec")
	}
	spec := b.Spec
	format := b.Format
	if format == 0 {
		format = formatFor(spec)
	}
	if format < OldestFormat || format > FormatVersion {
		return nil, encodeErr("magic", "format version %d, this encoder writes %d..%d", format, OldestFormat, FormatVersion)
	}
	if err := spec.Validate(); err != nil {
		return nil, &FormatError{Section: "model", Offset: -1, Err: ErrInvalid, Cause: err}
	}
	d, nv, k := spec.NumFeatures(), len(spec.Sign), len(spec.Kept)
	nt, na := spec.NumThresholds(), spec.AxisColumns()
	v2, v3 := format >= 2, format >= 3
	switch need := treeFormat(spec.Trees); {
	case format == calibrationFormat && spec.Calibration == nil:
		return nil, encodeErr("calibration", "format 5 is for calibrated models, and this model has no calibration; write format %d", need)
	case format < calibrationFormat && spec.Calibration != nil:
		return nil, encodeErr("calibration", "format %d has no calibration; write format 5", format)
	case format == calibrationFormat && spec.Calibration.Offsets != nil && !hasOffsets(spec.Calibration):
		return nil, encodeErr("calibration", "offsets all zero: a model without offsets has none (leave them nil)")
	case format == calibrationFormat:
	case !v3 && need > 2:
		return nil, encodeErr("trees", "format %d has no trees; write format %d", format, need)
	case format == 3 && need == 4:
		return nil, encodeErr("trees", "format 3 has no tree leaf planes (the trees have %d); write format 4", spec.Trees.NumPlanes())
	case format == 4 && need < 4:
		return nil, encodeErr("trees", "format 4 is for tree leaf planes, and this model has %s; write format %d", planesText(spec.Trees), need)
	}
	if !v2 {
		switch {
		case spec.Scaler.Clip:
			return nil, encodeErr("scaler", "format 1 cannot clip scaled values; write format 2")
		case nt > 0:
			return nil, encodeErr("thresholds", "format 1 has no thresholds; write format 2")
		case spec.Projection != nil:
			return nil, encodeErr("projection", "format 1 has no projection; write format 2")
		case len(b.Info) > 0:
			return nil, encodeErr("info", "format 1 has no info section; write format 2")
		case spec.Fingerprint != nil:
			return nil, encodeErr("fingerprint", "format 1 has no fingerprint; write format 2")
		}
	}

	h := b.Header
	if err := checkLabel(h.ModelID, MaxModelID, false); err != nil {
		return nil, encodeErr("header", "model ID: %v", err)
	}
	if h.Release == 0 {
		return nil, encodeErr("header", "release counter is 0, want >= 1")
	}
	created, expires := unixSeconds(h.CreatedAt), unixSeconds(h.ExpiresAt)
	if err := checkTimes(created, expires); err != nil {
		return nil, encodeErr("header", "%v", err)
	}

	names := b.Compat.Features
	switch {
	case names == nil:
		names = spec.Features
	case spec.Features != nil && !slices.Equal(names, spec.Features):
		return nil, encodeErr("compat", "Compat.Features and Spec.Features differ")
	}
	if names != nil && len(names) != d {
		return nil, encodeErr("compat", "%d feature names for %d features", len(names), d)
	}
	if err := checkNames(names, "feature name"); err != nil {
		return nil, encodeErr("compat", "%v", err)
	}
	if _, err := parseVersion(b.Compat.MinAgentVersion); err != nil {
		return nil, encodeErr("compat", "minimum agent version %q: %v", b.Compat.MinAgentVersion, err)
	}
	if len(b.Compat.MinAgentVersion) > MaxVersion {
		return nil, encodeErr("compat", "minimum agent version is %d bytes, at most %d", len(b.Compat.MinAgentVersion), MaxVersion)
	}
	if err := checkLabel(b.Compat.Hardware, MaxLabel, true); err != nil {
		return nil, encodeErr("compat", "hardware label: %v", err)
	}

	if len(spec.Classes) > MaxClasses {
		return nil, encodeErr("classes", "%d classes, at most %d", len(spec.Classes), MaxClasses)
	}
	if err := checkNames(spec.Classes, "class"); err != nil {
		return nil, encodeErr("classes", "%v", err)
	}

	if err := checkScaler(spec.Scaler, d); err != nil {
		return nil, encodeErr("scaler", "%v", err)
	}
	scalerForm, err := chooseScalerForm(spec.Scaler)
	if err != nil {
		return nil, encodeErr("scaler", "%v", err)
	}
	if err := checkThresholds(spec.Thresholds); err != nil {
		return nil, encodeErr("thresholds", "%v", err)
	}
	if err := checkTrees(spec.Trees); err != nil {
		return nil, encodeErr("trees", "%v", err)
	}
	if spec.Transform.P == 0 && math.Float64bits(spec.Transform.Sigma) != 0 {
		return nil, encodeErr("transform", "no random features (p = 0) but σ = %g: every field must be 0", spec.Transform.Sigma)
	}

	if tail := k % 64; tail != 0 {
		for c := range nv {
			if spec.Sign[c][k/64]>>tail != 0 {
				return nil, encodeErr("weights", "vector %d has sign bits past the last kept column", c)
			}
		}
	}
	if pr := spec.Projection; pr != nil {
		if tail := d % 64; tail != 0 {
			for o := range pr.Sign {
				if pr.Sign[o][d/64]>>tail != 0 {
					return nil, encodeErr("projection", "output %d has sign bits past the last input", o)
				}
			}
		}
	}
	if fp := spec.Fingerprint; fp != nil && len(fp.Columns) == 0 {
		return nil, encodeErr("fingerprint", "a fingerprint without columns: leave it nil")
	}
	infoKeys, err := infoKeys(b.Info)
	if err != nil {
		return nil, encodeErr("info", "%v", err)
	}

	m, err := inference.New(spec)
	if err != nil {
		return nil, &FormatError{Section: "model", Offset: -1, Err: ErrInvalid, Cause: err}
	}
	st, err := runSelfTest(m)
	if err != nil {
		return nil, &FormatError{Section: "selftest", Offset: -1, Err: ErrInvalid, Cause: err}
	}

	le := binary.LittleEndian
	tests := 0
	if spec.Trees != nil {
		tests = len(spec.Trees.Feature)
	}
	out := make([]byte, 0, 1024+4*d+2*nt+4*tests+nv*(k/4+8))
	out = append(out, Magic...)
	out = append(out, byte(format))

	out = appendString(out, h.ModelID)
	out = le.AppendUint64(out, h.Release)
	out = le.AppendUint64(out, uint64(created))
	out = le.AppendUint64(out, uint64(expires))

	out = binary.AppendUvarint(out, uint64(d))
	out = binary.AppendUvarint(out, uint64(len(names)))
	for _, n := range names {
		out = appendString(out, n)
	}
	out = appendString(out, b.Compat.MinAgentVersion)
	out = appendString(out, b.Compat.Hardware)

	out = binary.AppendUvarint(out, uint64(len(spec.Classes)))
	for _, c := range spec.Classes {
		out = appendString(out, c)
	}

	out = append(out, scalerForm)
	if v2 {
		var flags byte
		if spec.Scaler.Clip {
			flags |= scalerClip
		}
		out = append(out, flags)
	}
	for _, vs := range [][]float32{spec.Scaler.Lo, spec.Scaler.Hi} {
		for _, v := range vs {
			if scalerForm == scalerHalf {
				out = le.AppendUint16(out, float32ToHalf(v))
			} else {
				out = le.AppendUint32(out, math.Float32bits(v))
			}
		}
	}

	if v2 {
		if nt == 0 {
			out = append(out, thresholdsNone)
		} else {
			out = append(out, thresholdsHalf)
			rho := uint64(spec.ThresholdWeight)
			if rho == 0 {
				rho = 1
			}
			out = binary.AppendUvarint(out, rho)
			for i := range d {
				list := spec.Thresholds[i]
				out = binary.AppendUvarint(out, uint64(len(list)))
				for _, v := range list {
					out = le.AppendUint16(out, float32ToHalf(v))
				}
			}
		}
		if v3 {
			out = appendTrees(out, spec, d, nt, format)
		}

		if pr := spec.Projection; pr == nil {
			out = append(out, projectionNone)
		} else {
			out = append(out, projectionPresent)
			out = binary.AppendUvarint(out, uint64(pr.Out()))
			for o := range pr.Out() {
				out = appendPacked(out, canonicalPack(d, hasZero(pr.NonZero[o], d)), pr.Sign[o], pr.NonZero[o], d, true)
				out = le.AppendUint32(out, math.Float32bits(pr.Scale[o]))
				out = le.AppendUint32(out, math.Float32bits(pr.Bias[o]))
			}
		}
	}

	tr := spec.Transform
	out = binary.AppendUvarint(out, uint64(tr.Generator))
	out = le.AppendUint64(out, tr.Seed)
	out = le.AppendUint64(out, math.Float64bits(tr.Sigma))
	out = binary.AppendUvarint(out, uint64(tr.D))
	out = binary.AppendUvarint(out, uint64(tr.P))

	out = appendKept(out, spec.Kept, na+tr.P, format)

	for c := range nv {
		form := canonicalPack(k, hasZero(spec.NonZero[c], k))
		if !v2 && form == packBase3 {
			form = packPlanes
		}
		out = appendPacked(out, form, spec.Sign[c], spec.NonZero[c], k, v2)
	}

	for _, a := range spec.Alpha {
		out = le.AppendUint32(out, math.Float32bits(a))
	}

	out = binary.AppendUvarint(out, uint64(st.Class))
	for _, s := range st.Scores {
		out = binary.AppendVarint(out, int64(s))
	}

	if v2 {
		out = appendFingerprint(out, spec.Fingerprint)
		if format >= calibrationFormat {
			out = appendCalibration(out, spec.Calibration)
		}
		out = binary.AppendUvarint(out, uint64(len(infoKeys)))
		for _, key := range infoKeys {
			out = appendString(out, key)
			out = appendString(out, b.Info[key])
		}
	}

	out = append(out, make([]byte, trailerSize)...)
	// What the encoder writes, every agent's decoder must read: a bundle it
	// would refuse is an error here, at training or publish time, rather
	// than a release every gateway turns down.
	if err := checkPreamble(out); err != nil {
		return nil, encodeErr("model", "the bundle written does not decode: %v", err)
	}
	if _, _, err := parse(out); err != nil {
		return nil, encodeErr("model", "the bundle written does not decode: %v", err)
	}
	return out, nil
}

// appendFingerprint writes the fingerprint section: a count F (0: none),
// then F gaps between kept-column indexes (the first is index+1), then F
// rate bytes.
func appendFingerprint(out []byte, fp *inference.Fingerprint) []byte {
	if fp == nil {
		return append(out, 0)
	}
	out = binary.AppendUvarint(out, uint64(len(fp.Columns)))
	prev := int32(-1)
	for _, c := range fp.Columns {
		out = binary.AppendUvarint(out, uint64(c-prev))
		prev = c
	}
	return append(out, fp.Rates...)
}

// planesText describes the trees of a model that format 4 cannot hold.
func planesText(t *inference.Trees) string {
	if t == nil {
		return "no trees"
	}
	return "one plane"
}

func encodeErr(section, format string, args ...any) *FormatError {
	return formatErr(ErrInvalid, section, -1, format, args...)
}

// chooseScalerForm returns scalerHalf if every value is a float16 value,
// scalerFloat32 if some value is beyond the float16 range, and an error if
// the scaler was not snapped with CompactScaler.
func chooseScalerForm(s inference.Scaler) (byte, error) {
	if !halfRange(s.Lo) || !halfRange(s.Hi) {
		return scalerFloat32, nil
	}
	for _, side := range []struct {
		name string
		vs   []float32
	}{{"Lo", s.Lo}, {"Hi", s.Hi}} {
		for i, v := range side.vs {
			if !isHalf(v) {
				return 0, fmt.Errorf("%s[%d] = %g is not a float16 value; snap the scaler with CompactScaler before training", side.name, i, v)
			}
		}
	}
	return scalerHalf, nil
}

func appendString(out []byte, s string) []byte {
	out = binary.AppendUvarint(out, uint64(len(s)))
	return append(out, s...)
}

// keptListSize is the size of the gap-list form of the kept columns, without
// its form byte.
func keptListSize(kept []int32) int {
	n := uvarintLen(uint64(len(kept)))
	prev := int32(-1)
	for _, j := range kept {
		n += uvarintLen(uint64(j - prev))
		prev = j
	}
	return n
}

// keptForm is the canonical form of the kept columns among cols columns:
// in format 2 "all" when every column is kept, else whichever is smaller,
// the bitmap on a tie.
func keptForm(kept []int32, cols int, format int) byte {
	if format >= 2 && len(kept) == cols {
		return keptAll
	}
	if (cols+7)/8 <= keptListSize(kept) {
		return keptBitmap
	}
	return keptDeltas
}

// appendKept writes the kept columns among cols columns in the canonical
// form.
func appendKept(out []byte, kept []int32, cols int, format int) []byte {
	switch keptForm(kept, cols, format) {
	case keptAll:
		return append(out, keptAll)
	case keptBitmap:
		bitmapSize := (cols + 7) / 8
		out = append(out, keptBitmap)
		start := len(out)
		out = append(out, make([]byte, bitmapSize)...)
		for _, j := range kept {
			out[start+int(j>>3)] |= 1 << (j & 7)
		}
		return out
	}
	// The first delta is from -1, so it is column+1 and every delta is >= 1.
	out = append(out, keptDeltas)
	out = binary.AppendUvarint(out, uint64(len(kept)))
	prev := int32(-1)
	for _, j := range kept {
		out = binary.AppendUvarint(out, uint64(j-prev))
		prev = j
	}
	return out
}

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// appendPlane writes the first nb bytes of a bit plane, little-endian.
func appendPlane(out []byte, words []uint64, nb int) []byte {
	for i := range nb {
		out = append(out, byte(words[i/8]>>(8*(i%8))))
	}
	return out
}

// allOnes reports whether the first n bits of the plane are all set.
func allOnes(words []uint64, n int) bool {
	for i := 0; i < n/64; i++ {
		if words[i] != math.MaxUint64 {
			return false
		}
	}
	if tail := n % 64; tail != 0 {
		mask := uint64(1)<<tail - 1
		return words[n/64]&mask == mask
	}
	return true
}
