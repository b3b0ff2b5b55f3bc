package bundle

import (
	"encoding/binary"
	"math"

	"github.com/trit-iot/trit/inference"
)

// The calibration section (format 5 only, and always present there: a
// model has a calibration exactly when its bundle is format 5), between
// the fingerprint and the info sections:
//
//	bins n and flags (u8: n = the low 5 bits, 1..MaxCalibrationBins;
//	bit 7: an out-of-range weight follows the maximum novelty; bit 6:
//	offsets follow it; bit 5 zero) | n−1 edges (f32, finite, ≥ 0,
//	not −0, strictly ascending) | n confidences (u8, strictly ascending) |
//	minimum confidence (u8; 0 = never unknown on confidence) | maximum
//	novelty (uvarint; 0 = never unknown on novelty, else only with a
//	fingerprint or an out-of-range weight, at most maxNovelty) | with
//	bit 7 only: the out-of-range weight W (uvarint, 1..MaxOutsideWeight)
//	| with bit 6 only: one offset per weight vector (zigzag varint,
//	|offset| ≤ MaxOffset; not all zero)
//
// 1 + 4(n−1) + n + 1 + 1..4 (+ 1..2) (+ 1..4 per vector) bytes: 12 bins
// cost at most 65 bytes and offsets a few more. A bundle without bit 7
// or 6 (the first format-5 bundles) decodes and predicts as before.

// maxNovelty bounds the novelty threshold of a model with d features: no
// window's novelty exceeds 1,024 columns of at most 144 (Surprisal[0])
// each, plus d features of at most 2·MaxOutsideWeight.
func maxNovelty(d int) uint64 {
	return 255*uint64(inference.MaxFingerprint) + 2*inference.MaxOutsideWeight*uint64(d)
}

// calibrationOutside is the bins byte's flag for an out-of-range weight
// (Calibration.Outside); calibrationBins masks the count.
const (
	calibrationOutside = 0x80
	calibrationOffsets = 0x40
	calibrationBins    = 0x1f
)

// calibrationFormat is the format that carries a calibration.
const calibrationFormat = 5

// formatFor is the format Encode writes for spec by default: 5 with a
// calibration, else the oldest the trees allow (treeFormat).
func formatFor(spec *inference.ModelSpec) int {
	if spec.Calibration != nil {
		return calibrationFormat
	}
	return treeFormat(spec.Trees)
}

// appendCalibration writes the calibration section of c (not nil).
func appendCalibration(out []byte, c *inference.Calibration) []byte {
	n := byte(len(c.Confidence))
	if c.Outside > 0 {
		n |= calibrationOutside
	}
	if hasOffsets(c) {
		n |= calibrationOffsets
	}
	out = append(out, n)
	for _, e := range c.Edges {
		out = binary.LittleEndian.AppendUint32(out, math.Float32bits(e))
	}
	out = append(out, c.Confidence...)
	out = append(out, c.MinConfidence)
	out = binary.AppendUvarint(out, uint64(c.MaxNovelty))
	if c.Outside > 0 {
		out = binary.AppendUvarint(out, uint64(c.Outside))
	}
	if hasOffsets(c) {
		for _, o := range c.Offsets {
			out = binary.AppendVarint(out, int64(o))
		}
	}
	return out
}

// hasOffsets reports whether c has offsets other than zeros: all zeros
// are no offsets (one encoding per model).
func hasOffsets(c *inference.Calibration) bool {
	for _, o := range c.Offsets {
		if o != 0 {
			return true
		}
	}
	return false
}

// calibration reads the calibration section of a model with d features,
// nv weight vectors and (or without) a fingerprint.
func (r *reader) calibration(d, nv int, fingerprint bool) *inference.Calibration {
	at := r.pos
	flags := r.u8("calibration bins")
	n := int(flags & calibrationBins)
	switch {
	case r.err != nil:
	case flags&^(calibrationBins|calibrationOutside|calibrationOffsets) != 0:
		r.fail(ErrInvalid, at, "calibration bins byte %#02x sets bit 5, which no format-5 writer uses", flags)
	case n < 1 || n > inference.MaxCalibrationBins:
		r.fail(ErrInvalid, at, "%d calibration bins, want 1..%d", n, inference.MaxCalibrationBins)
	}
	if r.err != nil {
		return nil
	}
	c := &inference.Calibration{Edges: make([]float32, n-1)}
	for i := range c.Edges {
		at := r.pos
		e := r.f32("calibration edge")
		if r.err == nil && (!(e >= 0) || e-e != 0 || math.Signbit(float64(e)) || (i > 0 && e <= c.Edges[i-1])) {
			r.fail(ErrInvalid, at, "edge %d is %g: edges must be finite, ≥ 0 (not −0) and strictly ascending", i, e)
		}
		c.Edges[i] = e
	}
	at = r.pos
	conf := r.take(n, "calibration confidences")
	if r.err != nil {
		return nil
	}
	for i := 1; i < n; i++ {
		if conf[i] <= conf[i-1] {
			r.fail(ErrInvalid, at+i, "bin %d's confidence %d is not above bin %d's %d: confidences must strictly ascend", i, conf[i], i-1, conf[i-1])
			return nil
		}
	}
	c.Confidence = append([]uint8(nil), conf...)
	c.MinConfidence = r.u8("minimum confidence")
	at = r.pos
	nov := r.uvarint("maximum novelty")
	if flags&calibrationOutside != 0 {
		at := r.pos
		w := r.uvarint("out-of-range weight")
		if r.err == nil && (w < 1 || w > inference.MaxOutsideWeight) {
			r.fail(ErrInvalid, at, "out-of-range weight %d, want 1..%d", w, inference.MaxOutsideWeight)
		}
		c.Outside = uint16(w)
	}
	if flags&calibrationOffsets != 0 {
		at := r.pos
		c.Offsets = make([]int32, nv)
		zero := true
		for i := range c.Offsets {
			at := r.pos
			o := r.varint("offset")
			if r.err == nil && (o > inference.MaxOffset || o < -inference.MaxOffset) {
				r.fail(ErrInvalid, at, "offset %d is %d, at most %d in magnitude", i, o, inference.MaxOffset)
			}
			c.Offsets[i] = int32(o)
			zero = zero && o == 0
		}
		if r.err == nil && zero {
			r.fail(ErrInvalid, at, "offsets flagged but all zero: a model without offsets has no offsets section")
		}
	}
	switch {
	case r.err != nil:
		return nil
	case nov > maxNovelty(d):
		r.fail(ErrInvalid, at, "maximum novelty %d, at most %d", nov, maxNovelty(d))
	case nov > 0 && !fingerprint && c.Outside == 0:
		r.fail(ErrInvalid, at, "maximum novelty %d without a fingerprint or the out-of-range term to measure it", nov)
	}
	c.MaxNovelty = uint32(nov)
	return c
}
