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
//	bins n (u8, 1..MaxCalibrationBins) | n−1 edges (f32, finite, ≥ 0,
//	not −0, strictly ascending) | n confidences (u8, strictly ascending) |
//	minimum confidence (u8; 0 = never unknown on confidence) | maximum
//	novelty (uvarint; 0 = never unknown on novelty, else only with a
//	fingerprint, at most 255·MaxFingerprint)
//
// 1 + 4(n−1) + n + 1 + 1..3 bytes: 12 bins cost 60 to 62 bytes.

// maxNovelty bounds the novelty threshold: no window's novelty exceeds
// 1,024 columns of at most 144 (Surprisal[0]) each.
const maxNovelty = 255 * inference.MaxFingerprint

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
	out = append(out, byte(len(c.Confidence)))
	for _, e := range c.Edges {
		out = binary.LittleEndian.AppendUint32(out, math.Float32bits(e))
	}
	out = append(out, c.Confidence...)
	out = append(out, c.MinConfidence)
	return binary.AppendUvarint(out, uint64(c.MaxNovelty))
}

// calibration reads the calibration section of a model with (or without)
// a fingerprint.
func (r *reader) calibration(fingerprint bool) *inference.Calibration {
	at := r.pos
	n := int(r.u8("calibration bins"))
	if r.err == nil && (n < 1 || n > inference.MaxCalibrationBins) {
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
	switch {
	case r.err != nil:
		return nil
	case nov > maxNovelty:
		r.fail(ErrInvalid, at, "maximum novelty %d, at most %d", nov, maxNovelty)
	case nov > 0 && !fingerprint:
		r.fail(ErrInvalid, at, "maximum novelty %d without a fingerprint to measure it", nov)
	}
	c.MaxNovelty = uint32(nov)
	return c
}
