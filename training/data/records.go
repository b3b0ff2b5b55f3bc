package data

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/trit-iot/trit/internal/linelimit"
)

// records yields the fields of a delimited text file one record (row) at a
// time: the tokenizer under the table reader (table.go). Blank lines and
// lines starting with '#' are skipped.
type records interface {
	// next returns the next record, valid until the following call, or
	// io.EOF. Fields may carry surrounding white space.
	next() ([]string, error)
	// line returns the line on which field i of the last record starts.
	line(i int) int
}

// wsRecords splits lines at runs of white space (usps, covtype-style dense
// text). It has no quoting.
type wsRecords struct {
	lr  *lineReader
	rec []string
}

func (w *wsRecords) next() ([]string, error) {
	for {
		b, err := w.lr.next()
		if err != nil {
			return nil, err
		}
		t := trimSpace(b)
		if len(t) == 0 || t[0] == '#' {
			continue
		}
		s := string(t) // one allocation a line; the fields are substrings
		w.rec = w.rec[:0]
		for i := 0; i < len(s); {
			for i < len(s) && isSpace(s[i]) {
				i++
			}
			j := i
			for j < len(s) && !isSpace(s[j]) {
				j++
			}
			if j > i {
				w.rec = append(w.rec, s[i:j])
			}
			i = j
		}
		return w.rec, nil
	}
}

func (w *wsRecords) line(int) int { return w.lr.line }

// csvRecords reads RFC 4180 text with encoding/csv: quoted fields may hold
// the delimiter, doubled quotes and line breaks. Lines are bounded by
// maxLine (linelimit.Reader).
type csvRecords struct {
	r    *csv.Reader
	name string
	off  int // lines before the first one r reads (ARFF's header)
	last int // line of the end of the last record
}

func newCSVRecords(r io.Reader, name string, delim rune, comment rune, off int) *csvRecords {
	lim := &linelimit.Reader{R: r, Max: maxLine, TooLong: func(n int) error { return errLongLine(name, n) }, Line: off}
	cr := csv.NewReader(bufio.NewReaderSize(lim, min(bufSize, 64<<10)))
	cr.Comma = delim
	cr.Comment = comment
	cr.FieldsPerRecord = -1 // the table reader checks, with its own message
	cr.ReuseRecord = true
	cr.TrimLeadingSpace = delim != '\t'
	return &csvRecords{r: cr, name: name, off: off, last: off}
}

func (c *csvRecords) next() ([]string, error) {
	for {
		rec, err := c.r.Read()
		if err == io.EOF {
			return nil, io.EOF
		}
		var pe *csv.ParseError
		var long *ParseError // from the linelimit.Reader
		switch {
		case errors.As(err, &long):
			return nil, long
		case errors.As(err, &pe):
			return nil, &ParseError{File: c.name, Line: pe.Line + c.off, Err: fmt.Errorf("byte %d of the line: %w", pe.Column, pe.Err)}
		case err != nil:
			return nil, &ParseError{File: c.name, Line: c.last + 1, Err: fmt.Errorf("read: %w", err)}
		}
		c.last = c.line(len(rec) - 1)
		if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
			continue // a line of white space
		}
		return rec, nil
	}
}

func (c *csvRecords) line(i int) int {
	l, _ := c.r.FieldPos(i)
	return l + c.off
}

// delimiterCandidates are tried in this order: a file whose every sampled
// line has the same number of tabs is tab-separated even if its text has
// commas, and likewise ';' beats ',' (a ';' file usually has decimal
// commas in some column).
var delimiterCandidates = []byte{'\t', ';', ','}

// sniffLines is how many data lines sniffDelimiter looks at.
const sniffLines = 20

// sniffDelimiter picks the delimiter of delimited text from its first data
// lines (head is the start of the stream): the first candidate that occurs,
// outside double quotes, the same non-zero number of times on each of up to
// sniffLines lines (blank lines and '#' comments skipped). If none is
// consistent, a comma or semicolon in the first line decides, in that
// order; else fields are separated by runs of white space (' ').
func sniffDelimiter(head []byte, full bool) rune {
	var lines [][]byte
	for len(head) > 0 && len(lines) < sniffLines {
		line := head
		i := bytes.IndexByte(head, '\n')
		if i >= 0 {
			line, head = head[:i], head[i+1:]
		} else {
			head = nil
			if full {
				break // cut by the sniff window: may be incomplete
			}
		}
		if t := trimSpace(line); len(t) > 0 && t[0] != '#' {
			lines = append(lines, line)
		}
	}
	if len(lines) == 0 {
		return ' '
	}
	for _, d := range delimiterCandidates {
		n := countOutsideQuotes(lines[0], d)
		ok := n > 0
		for _, l := range lines[1:] {
			ok = ok && countOutsideQuotes(l, d) == n
		}
		if ok {
			return rune(d)
		}
	}
	for _, d := range []byte{',', ';'} {
		if countOutsideQuotes(lines[0], d) > 0 {
			return rune(d)
		}
	}
	return ' '
}

func countOutsideQuotes(line []byte, d byte) int {
	n, quoted := 0, false
	for _, c := range line {
		switch {
		case c == '"':
			quoted = !quoted
		case c == d && !quoted:
			n++
		}
	}
	return n
}

// skipBOM drops a UTF-8 byte order mark (spreadsheet exports start with
// one) so that it does not become part of the first column's name.
func skipBOM(r *bufio.Reader) {
	if b, _ := r.Peek(3); bytes.Equal(b, []byte("\xef\xbb\xbf")) {
		r.Discard(3)
	}
}
