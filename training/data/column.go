package data

import (
	"fmt"
	"strconv"
	"strings"
)

// Column refers to a column of a delimited text or ARFF file, by header
// name or by position. Columns are numbered from 1, as in error messages;
// Index -1 is the last column. The zero Column means "not given" (the
// reader's default applies).
//
// When Name is set it is what the reader matches (exactly, against the
// header row); Index is then only informational: a Column in a ReadSpec
// filled by a reader carries both, so that a message can say "column 19
// "Room_Occupancy_Count"".
type Column struct {
	Name  string
	Index int
}

// ParseColumn parses a column as a user writes it: "last" or "-1" is the
// last column, a positive decimal number is a 1-based position, anything
// else is a header name. A header name that is itself a number can only be
// chosen by position.
func ParseColumn(s string) (Column, error) {
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		return Column{}, fmt.Errorf("%w: empty column", ErrOptions)
	case strings.EqualFold(s, "last") || s == "-1":
		return Column{Index: -1}, nil
	}
	if n, err := strconv.Atoi(s); err == nil {
		if n < 1 {
			return Column{}, fmt.Errorf("%w: column %d: columns are numbered from 1 (or -1 for the last)", ErrOptions, n)
		}
		return Column{Index: n}, nil
	} else if isDecimal(s) {
		return Column{}, fmt.Errorf("%w: column %s is out of range", ErrOptions, s)
	}
	return Column{Name: s}, nil
}

// isDecimal reports whether s is an optionally signed run of digits.
func isDecimal(s string) bool {
	s = strings.TrimPrefix(strings.TrimPrefix(s, "-"), "+")
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// IsZero reports whether c is the zero Column (not given).
func (c Column) IsZero() bool { return c.Name == "" && c.Index == 0 }

// String returns c as ParseColumn reads it back, except for a name that
// looks like a number (see ParseColumn).
func (c Column) String() string {
	switch {
	case c.Name != "":
		return c.Name
	case c.Index == -1:
		return "last"
	case c.Index == 0:
		return ""
	}
	return strconv.Itoa(c.Index)
}

// describe renders c for messages: `column 19 "Room_Occupancy_Count"`,
// `column 3`, `column "S1_Temp"` or `the last column`.
func (c Column) describe() string {
	switch {
	case c.Name != "" && c.Index > 0:
		return fmt.Sprintf("column %d %q", c.Index, c.Name)
	case c.Name != "":
		return fmt.Sprintf("column %q", c.Name)
	case c.Index == -1:
		return "the last column"
	}
	return fmt.Sprintf("column %d", c.Index)
}

func (c Column) check() error {
	if c.Name == "" && c.Index < -1 {
		return fmt.Errorf("%w: column %d: columns are numbered from 1 (or -1 for the last)", ErrOptions, c.Index)
	}
	return nil
}

// Header says whether the first row of a delimited text file names the
// columns.
type Header int

// Header modes.
const (
	HeaderAuto Header = iota // detect (see docs/DATA.md)
	HeaderYes                // the first row is a header
	HeaderNo                 // there is no header: every row is data
)

// ParseHeader parses "auto", "yes" or "no".
func ParseHeader(s string) (Header, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "auto":
		return HeaderAuto, nil
	case "yes":
		return HeaderYes, nil
	case "no":
		return HeaderNo, nil
	}
	return 0, fmt.Errorf("%w: header %q: want auto, yes or no", ErrOptions, s)
}

// String returns "auto", "yes" or "no".
func (h Header) String() string {
	switch h {
	case HeaderAuto:
		return "auto"
	case HeaderYes:
		return "yes"
	case HeaderNo:
		return "no"
	}
	return fmt.Sprintf("Header(%d)", int(h))
}

// ParseDelimiter parses a delimiter as a user writes it: "" or "auto"
// (detect), "tab" or `\t`, "space" or "whitespace" (runs of white space),
// "comma", "semicolon", or any single character that can separate CSV
// fields.
func ParseDelimiter(s string) (rune, error) {
	var r rune
	switch strings.ToLower(s) {
	case "", "auto":
		return 0, nil
	case "tab", `\t`:
		r = '\t'
	case "space", "whitespace", " ":
		r = ' '
	case "comma":
		r = ','
	case "semicolon":
		r = ';'
	default:
		rs := []rune(s)
		if len(rs) != 1 {
			return 0, fmt.Errorf("%w: delimiter %q: want one character, tab, space, comma, semicolon or auto", ErrOptions, s)
		}
		r = rs[0]
	}
	if err := checkDelimiter(r); err != nil {
		return 0, err
	}
	return r, nil
}

// ParseDecimal parses the decimal mark of the numbers in delimited text:
// auto (or empty: detect), "." (dot, point) or "," (comma).
func ParseDecimal(s string) (rune, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "auto":
		return 0, nil
	case ".", "dot", "point":
		return '.', nil
	case ",", "comma":
		return ',', nil
	}
	return 0, fmt.Errorf("%w: decimal mark %q: want auto, . or ,", ErrOptions, s)
}

// checkDelimiter accepts 0 (detect), ' ' (white space) and whatever
// encoding/csv accepts as a field delimiter.
func checkDelimiter(r rune) error {
	switch {
	case r == 0 || r == ' ':
		return nil
	case r < 0 || r == '\r' || r == '\n' || r == '"' || r == '#' || r == 0xFFFD || !strconv.IsPrint(r) && r != '\t':
		return fmt.Errorf("%w: delimiter %q", ErrOptions, r)
	}
	return nil
}
