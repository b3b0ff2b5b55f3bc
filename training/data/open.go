package data

import (
	"bufio"
	"bytes"
	"compress/bzip2"
	"compress/gzip"
	"fmt"
	"io"

	"github.com/ulikunitz/xz"
)

// bufSize is the read buffer for both the compressed and the decompressed
// stream: large reads keep the decompressors and the line scanner busy.
// Fuzz tests lower it, which also exercises lines longer than the buffer.
var bufSize = 1 << 20

// Magic numbers of the supported compression formats.
var (
	magicGzip  = []byte{0x1f, 0x8b}
	magicBzip2 = []byte("BZh")
	magicXz    = []byte{0xfd, '7', 'z', 'X', 'Z', 0x00}
)

// decompress recognises a compressed stream by its magic bytes and returns a
// buffered reader of the decompressed bytes, or r itself when the stream is
// not compressed. A damaged header is a *ParseError.
//
// Decompression runs on its own goroutine, overlapping with parsing (xz
// decoding alone is most of covtype's load time). The caller must call stop
// once done with the stream, even after an error or an early finish; stop
// ends the goroutine and waits for it, so r is not read after stop returns.
func decompress(r *bufio.Reader, name string) (dr *bufio.Reader, stop func(), err error) {
	head, _ := r.Peek(len(magicXz))
	var zr io.Reader
	switch {
	case bytes.HasPrefix(head, magicGzip):
		zr, err = gzip.NewReader(r)
	case bytes.HasPrefix(head, magicBzip2):
		zr = bzip2.NewReader(r)
	case bytes.HasPrefix(head, magicXz):
		zr, err = xz.NewReader(r)
	default:
		return r, func() {}, nil
	}
	if err != nil {
		return nil, nil, &ParseError{File: name, Err: fmt.Errorf("compressed header: %w", err)}
	}
	pr, pw := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, bufSize)
		_, err := io.CopyBuffer(pw, safeReader{zr}, buf)
		pw.CloseWithError(err) // nil means io.EOF for the reader
	}()
	stop = func() {
		pr.CloseWithError(errStopped)
		<-done
	}
	return bufio.NewReaderSize(pr, bufSize), stop, nil
}

// safeReader turns a panic inside a decompressor into a read error: input
// is untrusted and this package promises errors, never panics, even for
// third-party decoders we cannot audit.
type safeReader struct{ r io.Reader }

func (s safeReader) Read(p []byte) (n int, err error) {
	defer func() {
		if v := recover(); v != nil {
			n, err = 0, fmt.Errorf("decompressor failed: %v", v)
		}
	}()
	return s.r.Read(p)
}
