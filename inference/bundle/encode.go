package bundle

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/trit-iot/trit/inference"
)

// Encodings chosen by flag bytes (see docs/BUNDLE.md).
const (
	scalerHalf    = 0 // Lo and Hi as float16
	scalerFloat32 = 1 // Lo and Hi as float32 (a value beyond ±MaxHalf)

	keptBitmap = 0 // ceil(P/8) bytes, bit j set if column j is kept
	keptDeltas = 1 // count, first column, then gaps (each >= 1)

	vectorNonZeroOmitted = 1 // weights flag: non-zero plane is all ones, not shipped
)

// Encode returns the unsigned bundle for b: the full layout with an all-zero
// key ID and signature, ready for Sign. It validates every field as Decode
// would, builds the model once to compute the self-test (b.SelfTest, KeyID,
// Signature and Signed are ignored), and never modifies b.
//
// The scaler ships as float16 when every value is a float16 value, as
// float32 when some |value| exceeds MaxHalf, and is refused otherwise: snap
// it with CompactScaler before training. Times are stored as whole seconds.
func Encode(b *Bundle) ([]byte, error) {
	if b == nil || b.Spec == nil {
		return nil, encodeErr("model", "no model spec")
	}
	spec := b.Spec
	if err := spec.Validate(); err != nil {
		return nil, &FormatError{Section: "model", Offset: -1, Err: ErrInvalid, Cause: err}
	}
	d, nv, k := spec.Transform.D, len(spec.Sign), len(spec.Kept)

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

	if tail := k % 64; tail != 0 {
		for c := range nv {
			if spec.Sign[c][k/64]>>tail != 0 {
				return nil, encodeErr("weights", "vector %d has sign bits past the last kept column", c)
			}
		}
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
	out := make([]byte, 0, 1024+4*d+nv*(k/4+8))
	out = append(out, Magic...)
	out = append(out, FormatVersion)

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
	for _, vs := range [][]float32{spec.Scaler.Lo, spec.Scaler.Hi} {
		for _, v := range vs {
			if scalerForm == scalerHalf {
				out = le.AppendUint16(out, float32ToHalf(v))
			} else {
				out = le.AppendUint32(out, math.Float32bits(v))
			}
		}
	}

	tr := spec.Transform
	out = binary.AppendUvarint(out, uint64(tr.Generator))
	out = le.AppendUint64(out, tr.Seed)
	out = le.AppendUint64(out, math.Float64bits(tr.Sigma))
	out = binary.AppendUvarint(out, uint64(tr.D))
	out = binary.AppendUvarint(out, uint64(tr.P))

	out = appendKept(out, spec.Kept, tr.P)

	nb := (k + 7) / 8
	for c := range nv {
		var flag byte
		if allOnes(spec.NonZero[c], k) {
			flag |= vectorNonZeroOmitted
		}
		out = append(out, flag)
		out = appendPlane(out, spec.Sign[c], nb)
		if flag&vectorNonZeroOmitted == 0 {
			out = appendPlane(out, spec.NonZero[c], nb)
		}
	}

	for _, a := range spec.Alpha {
		out = le.AppendUint32(out, math.Float32bits(a))
	}

	out = binary.AppendUvarint(out, uint64(st.Class))
	for _, s := range st.Scores {
		out = binary.AppendVarint(out, int64(s))
	}

	out = append(out, make([]byte, trailerSize)...)
	return out, nil
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

// appendKept writes the kept columns in whichever form is smaller, the
// bitmap on a tie.
func appendKept(out []byte, kept []int32, p int) []byte {
	listSize := uvarintLen(uint64(len(kept)))
	prev := int32(-1)
	for _, j := range kept {
		listSize += uvarintLen(uint64(j - prev))
		prev = j
	}
	if bitmapSize := (p + 7) / 8; bitmapSize <= listSize {
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
	prev = -1
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
