package bundle

import (
	"encoding/binary"
	"math"
)

// reader reads the fields of a bundle body. Errors are sticky: after the
// first one every read returns a zero value and does nothing, so a section
// can be read straight through and checked once. Every read checks the bytes
// are there first, and count refuses a count the remaining bytes cannot
// hold — so nothing is allocated on the strength of an unchecked number.
type reader struct {
	data    []byte // the bundle up to (not including) the trailer
	pos     int
	section string
	err     error
}

func (r *reader) left() int { return len(r.data) - r.pos }

// fail records the first error, at byte offset at.
func (r *reader) fail(sentinel error, at int, format string, args ...any) {
	if r.err == nil {
		r.err = formatErr(sentinel, r.section, at, format, args...)
	}
}

// take returns the next n bytes.
func (r *reader) take(n int, what string) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > r.left() {
		r.fail(ErrTruncated, r.pos, "%s needs %d bytes, %d left before the trailer", what, n, r.left())
		return nil
	}
	b := r.data[r.pos : r.pos+n : r.pos+n]
	r.pos += n
	return b
}

func (r *reader) u8(what string) byte {
	if b := r.take(1, what); b != nil {
		return b[0]
	}
	return 0
}

func (r *reader) u16(what string) uint16 {
	if b := r.take(2, what); b != nil {
		return binary.LittleEndian.Uint16(b)
	}
	return 0
}

func (r *reader) u32(what string) uint32 {
	if b := r.take(4, what); b != nil {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}

func (r *reader) u64(what string) uint64 {
	if b := r.take(8, what); b != nil {
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

func (r *reader) f32(what string) float32 { return math.Float32frombits(r.u32(what)) }

// uvarint reads a minimally encoded uvarint (at most 10 bytes, no trailing
// zero group), so every value has exactly one encoding.
func (r *reader) uvarint(what string) uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.data[r.pos:])
	switch {
	case n == 0:
		r.fail(ErrTruncated, r.pos, "%s: varint runs into the trailer", what)
		return 0
	case n < 0:
		r.fail(ErrInvalid, r.pos, "%s: varint overflows 64 bits", what)
		return 0
	case n > 1 && r.data[r.pos+n-1] == 0:
		r.fail(ErrInvalid, r.pos, "%s: varint is not minimally encoded", what)
		return 0
	}
	r.pos += n
	return v
}

// varint reads a zigzag-encoded signed varint.
func (r *reader) varint(what string) int64 {
	u := r.uvarint(what)
	return int64(u>>1) ^ -int64(u&1)
}

// count reads a uvarint count in [lo, hi] of items that each take at least
// minBytes of what follows, and refuses it unless the rest of the bundle can
// hold them: that bounds every allocation by the bundle's size.
func (r *reader) count(what string, lo, hi, minBytes int) int {
	at := r.pos
	v := r.uvarint(what)
	if r.err != nil {
		return 0
	}
	if v < uint64(lo) || v > uint64(hi) {
		r.fail(ErrInvalid, at, "%s: %d, want %d..%d", what, v, lo, hi)
		return 0
	}
	if minBytes > 0 && v > uint64(r.left()/minBytes) {
		r.fail(ErrTruncated, at, "%s: %d items need at least %d bytes, %d left", what, v, v*uint64(minBytes), r.left())
		return 0
	}
	return int(v)
}

// str reads a length-prefixed string of at most max bytes and checks it
// with checkLabel.
func (r *reader) str(what string, max int, allowEmpty bool) string {
	at := r.pos
	n := r.count(what+" length", 0, max, 1)
	b := r.take(n, what)
	if r.err != nil {
		return ""
	}
	s := string(b)
	if err := checkLabel(s, max, allowEmpty); err != nil {
		r.fail(ErrInvalid, at, "%s: %v", what, err)
		return ""
	}
	return s
}
