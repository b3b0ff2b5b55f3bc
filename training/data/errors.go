package data

import (
	"errors"
	"fmt"
)

// Sentinel errors. Callers test for them with errors.Is.
var (
	// ErrTooLarge reports input whose dense matrix would exceed the size
	// of 2^28 values (1 GiB of float32), e.g. a corrupt header or a huge
	// feature index.
	ErrTooLarge = errors.New("data: dataset too large")
	// ErrUnknownLabel reports a label that is not among the expected classes.
	ErrUnknownLabel = errors.New("data: unknown label")
	// ErrUnknownDataset reports a name that is not in Standards.
	ErrUnknownDataset = errors.New("data: unknown standard dataset")
	// ErrOptions reports an invalid Options value or argument.
	ErrOptions = errors.New("data: invalid options")
	// ErrColumn reports a column that was asked for (by name or number)
	// and is not in the file, or a header that cannot be used (a feature
	// column without a name, two columns with the same name).
	ErrColumn = errors.New("data: column")
	// ErrNoColumn reports a column asked for, by name or number, that the
	// file does not have (no header to find a name in, no such name, a
	// number beyond the last column). It wraps ErrColumn: callers that
	// took the column from their user can call it a usage error.
	ErrNoColumn = fmt.Errorf("%w", ErrColumn)
	// ErrTimeOrder reports a row whose time stamp is earlier than the row
	// before it (see docs/DATA.md, "Time order").
	ErrTimeOrder = errors.New("data: rows out of time order")
	// ErrReadSpec reports a ReadSpec text that cannot be parsed.
	ErrReadSpec = errors.New("data: invalid read spec")
	// ErrMissing reports a missing feature value where
	// Options.RefuseMissing refuses them.
	ErrMissing = errors.New("data: missing value")
)

// ParseError reports malformed input. Line is the 1-based line of text
// input; it is 0 when the error is not tied to a line (IDX files, whose
// message names the record or header field instead). Column is the 1-based
// column (field) of delimited text, 0 when the error is not about one
// column; ColumnName is that column's header name, if the file has one.
type ParseError struct {
	File       string
	Line       int
	Column     int
	ColumnName string
	Err        error
}

// Error formats the error as "file:line: column N "name": message", leaving
// out the parts that are unknown.
func (e *ParseError) Error() string {
	where := e.File
	if e.Line > 0 {
		where = fmt.Sprintf("%s:%d", e.File, e.Line)
	}
	switch {
	case e.Column > 0 && e.ColumnName != "":
		return fmt.Sprintf("%s: column %d %q: %v", where, e.Column, e.ColumnName, e.Err)
	case e.Column > 0:
		return fmt.Sprintf("%s: column %d: %v", where, e.Column, e.Err)
	}
	return fmt.Sprintf("%s: %v", where, e.Err)
}

// Unwrap returns the underlying error.
func (e *ParseError) Unwrap() error { return e.Err }

// Location returns where the error is (internal/cli reports it with
// --json): the file's name, line, column and column name, zero if unknown.
func (e *ParseError) Location() (file string, line, column int, columnName string) {
	return e.File, e.Line, e.Column, e.ColumnName
}

// quote renders a token for an error message, shortened so that a
// multi-megabyte garbage line does not end up in a log.
func quote[T ~string | ~[]byte](b T) string {
	const max = 40
	if len(b) > max {
		return fmt.Sprintf("%q...", b[:max])
	}
	return fmt.Sprintf("%q", b)
}

func tooLarge(n, d int) error {
	return fmt.Errorf("%w: %d rows × %d features exceeds %d values", ErrTooLarge, n, d, maxValues)
}
