package data

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// maxLine is the longest line of text the readers accept, in bytes: far
// more than any real header or row (10,000 columns of 20 characters are
// 200 KB), and a bound on what one malformed line can make a reader hold.
// A longer line is an ErrTooLarge *ParseError naming it. Tests lower it.
var maxLine = 16 << 20

// errLongLine is the error for line n of file name, longer than maxLine.
func errLongLine(name string, n int) error {
	return &ParseError{File: name, Line: n, Err: fmt.Errorf("%w: the line is longer than %s, the longest line trit reads (a row with no line breaks, or not a text file?)",
		ErrTooLarge, byteSize(maxLine))}
}

// byteSize formats n bytes for messages: "16 MiB", "4 KiB" or "100 bytes".
func byteSize(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// lineReader yields the lines of a text stream without their "\n" or
// "\r\n" terminators, counting them for error messages. A line longer
// than maxLine is an error.
type lineReader struct {
	r    *bufio.Reader
	name string
	line int    // number of the line last returned
	long []byte // holds a line longer than r's buffer
}

// next returns the next line, valid until the following call, or io.EOF.
// A read error (e.g. a truncated compressed stream) comes back as a
// *ParseError naming the line being read.
func (lr *lineReader) next() ([]byte, error) {
	b, err := lr.r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		lr.long = append(lr.long[:0], b...)
		for errors.Is(err, bufio.ErrBufferFull) {
			if len(lr.long) > maxLine {
				return nil, errLongLine(lr.name, lr.line+1)
			}
			b, err = lr.r.ReadSlice('\n')
			lr.long = append(lr.long, b...)
		}
		b = lr.long
	}
	if len(bytes.TrimSuffix(b, []byte{'\n'})) > maxLine {
		return nil, errLongLine(lr.name, lr.line+1)
	}
	if err != nil && err != io.EOF {
		return nil, &ParseError{File: lr.name, Line: lr.line + 1, Err: fmt.Errorf("read: %w", err)}
	}
	if len(b) == 0 {
		return nil, io.EOF
	}
	lr.line++
	b = bytes.TrimSuffix(b, []byte{'\n'})
	b = bytes.TrimSuffix(b, []byte{'\r'})
	return b, nil
}

// errorf returns a *ParseError for the line last returned.
func (lr *lineReader) errorf(format string, args ...any) error {
	return &ParseError{File: lr.name, Line: lr.line, Err: fmt.Errorf(format, args...)}
}

// isSpace reports whether c separates fields in whitespace-separated text.
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\v' || c == '\f' || c == '\r' }

// trimSpace trims field-separating white space from both ends of b.
func trimSpace(b []byte) []byte {
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

// fields appends the whitespace-separated fields of line to dst.
func fields(dst [][]byte, line []byte) [][]byte {
	i := 0
	for {
		for i < len(line) && isSpace(line[i]) {
			i++
		}
		if i == len(line) {
			return dst
		}
		j := i
		for j < len(line) && !isSpace(line[j]) {
			j++
		}
		dst = append(dst, line[i:j])
		i = j
	}
}
