package data

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// IDX magic numbers: 0x08 = unsigned byte elements, then the number of
// dimensions.
const (
	idxImagesMagic = 0x00000803 // 2051: uint8, n × rows × cols
	idxLabelsMagic = 0x00000801 // 2049: uint8, n
)

// idxChunk is the most of an image readIDX reads at once.
const idxChunk = 64 << 10

// maxRatio bounds the compression ratio assumed when preallocating for a
// compressed IDX file; typical ratios are 5 (images) to 60 (labels).
const maxRatio = 256

// readIDX reads an MNIST IDX images file and its labels file. Header counts
// are checked against maxValues and, for uncompressed files, against the
// file sizes before anything is allocated. For compressed files the matrix
// is preallocated only up to a plausible compression ratio and grown as
// data actually arrives, so a corrupt header in a tiny file cannot force a
// large allocation. Values are the raw pixels 0..255 as float32.
func readIDX(imgSrc, lblSrc *source, o *Options) (*Dataset, error) {
	img, lbl := imgSrc.r, lblSrc.r
	name, lname := imgSrc.name, lblSrc.name
	size, lsize := imgSrc.size, lblSrc.size
	fail := func(file, format string, args ...any) error {
		return &ParseError{File: file, Err: fmt.Errorf(format, args...)}
	}
	var h [16]byte
	if err := readFull(img, h[:4]); err != nil {
		return nil, fail(name, "header: %w", err)
	}
	switch m := binary.BigEndian.Uint32(h[0:]); m {
	case idxImagesMagic:
	case idxLabelsMagic:
		return nil, fail(name, "an IDX labels file; load the images file")
	default:
		return nil, fail(name, "magic %#08x, want %#08x (IDX uint8 images)", m, idxImagesMagic)
	}
	if err := readFull(img, h[4:]); err != nil {
		return nil, fail(name, "header: %w", err)
	}
	n := int64(binary.BigEndian.Uint32(h[4:]))
	rows := int64(binary.BigEndian.Uint32(h[8:]))
	cols := int64(binary.BigEndian.Uint32(h[12:]))
	if rows == 0 || cols == 0 {
		return nil, fail(name, "image size %d×%d", rows, cols)
	}
	if rows > int64(maxValues) || cols > int64(maxValues) || rows*cols > int64(maxValues) ||
		n*rows*cols > int64(maxValues) {
		return nil, fail(name, "header: %d images of %d×%d: %w", n, rows, cols, ErrTooLarge)
	}
	d := int(rows * cols)
	if want := 16 + n*int64(d); size >= 0 && size != want {
		return nil, fail(name, "%d bytes, header says %d images of %d×%d (%d bytes)", size, n, rows, cols, want)
	}

	var lh [8]byte
	if err := readFull(lbl, lh[:]); err != nil {
		return nil, fail(lname, "header: %w", err)
	}
	if m := binary.BigEndian.Uint32(lh[0:]); m != idxLabelsMagic {
		return nil, fail(lname, "magic %#08x, want %#08x (IDX uint8 labels)", m, idxLabelsMagic)
	}
	if ln := int64(binary.BigEndian.Uint32(lh[4:])); ln != n {
		return nil, fail(lname, "%d labels for %d images in %s", ln, n, name)
	}
	if want := 8 + n; lsize >= 0 && lsize != want {
		return nil, fail(lname, "%d bytes, header says %d labels (%d bytes)", lsize, n, want)
	}

	count := int(n)
	if o.MaxRows > 0 && o.MaxRows < count {
		count = o.MaxRows
	}
	prealloc := count
	if size < 0 {
		plausible := int64(maxRatio) * max(imgSrc.stored, 1<<16)
		prealloc = min(count, int(plausible/int64(d)))
	}
	x := make([]float32, 0, prealloc*d)
	y := make([]int32, 0, prealloc)
	lab := newLabeler()
	// An image is read in pieces of at most idxChunk bytes, and x grows by
	// each piece as it arrives: a header may declare images of up to
	// maxValues pixels, and a buffer for a whole one, allocated before
	// reading, was 256 MiB for a 16-byte file that declares no images or
	// a compressed one that ends after its header.
	buf := make([]byte, min(d, idxChunk))
	for i := range count {
		for j := 0; j < d; {
			k := min(d-j, len(buf))
			if err := readFull(img, buf[:k]); err != nil {
				return nil, fail(name, "image %d of %d: %w", i+1, n, err)
			}
			x = grow(x, k, count*d)
			row := x[len(x) : len(x)+k]
			for q, p := range buf[:k] {
				row[q] = float32(p)
			}
			x = x[:len(x)+k]
			j += k
		}
		c, err := lbl.ReadByte()
		if err != nil {
			return nil, fail(lname, "label %d of %d: %w", i+1, n, noEOF(err))
		}
		y = append(y, lab.id(digits[c]))
	}
	if count == int(n) {
		// Reading to the end also makes gzip verify its checksum.
		if err := atEOF(img); err != nil {
			return nil, fail(name, "after %d images: %w", n, err)
		}
		if err := atEOF(lbl); err != nil {
			return nil, fail(lname, "after %d labels: %w", n, err)
		}
	}
	if count == 0 {
		return nil, fail(name, "%w", errNoData)
	}
	return &Dataset{Name: name, X: x, N: count, D: d, Y: y, Classes: lab.finish(y),
		Spec: &ReadSpec{Format: FormatIDX, NumFeatures: d}}, nil
}

// digits holds the label strings of the byte values, so reading a label
// does not allocate.
var digits = func() (s [256][]byte) {
	for i := range s {
		s[i] = []byte(strconv.Itoa(i))
	}
	return s
}()

// readFull is io.ReadFull reporting a short read (even of zero bytes) as
// io.ErrUnexpectedEOF.
func readFull(r io.Reader, b []byte) error {
	_, err := io.ReadFull(r, b)
	return noEOF(err)
}

func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// atEOF checks that r has no more data.
func atEOF(r io.Reader) error {
	var b [1]byte
	for {
		n, err := r.Read(b[:])
		if n > 0 {
			return errors.New("unexpected trailing data")
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
