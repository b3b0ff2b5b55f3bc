// Package linelimit bounds the lines of a text stream: encoding/csv and
// bufio readers have no bound of their own (or one that fails with a
// message that names nothing), and would hold any line whole.
package linelimit

import (
	"bytes"
	"io"
)

// Reader passes R through and fails, with TooLong's error for the line's
// number (counted from 1), once a line runs past Max bytes. The lines
// before the long one are passed on first, so that they read as they
// would without it; the error comes with the next Read.
type Reader struct {
	R       io.Reader
	Max     int
	TooLong func(line int) error
	Line    int // lines completed so far; set it to number lines from an offset

	run int // bytes of the current line so far
	err error
}

func (l *Reader) Read(p []byte) (int, error) {
	if l.err != nil {
		return 0, l.err
	}
	n, err := l.R.Read(p)
	for i := 0; i < n; {
		j := bytes.IndexByte(p[i:n], '\n')
		end := n
		if j >= 0 {
			end = i + j
		}
		if l.run+end-i > l.Max {
			l.err = l.TooLong(l.Line + 1)
			if i > 0 {
				return i, nil // the whole lines before it; the error comes next
			}
			return 0, l.err
		}
		if j < 0 {
			l.run += end - i
			break
		}
		l.Line++
		l.run, i = 0, end+1
	}
	return n, err
}
