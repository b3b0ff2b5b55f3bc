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
)

// ParseError reports malformed input. Line is the 1-based line of text
// input; it is 0 when the error is not tied to a line (IDX files, whose
// message names the record or header field instead).
type ParseError struct {
	File string
	Line int
	Err  error
}

// Error formats the error as "file:line: message" (or "file: message").
func (e *ParseError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.File, e.Err)
}

// Unwrap returns the underlying error.
func (e *ParseError) Unwrap() error { return e.Err }

// quote renders a token for an error message, shortened so that a
// multi-megabyte garbage line does not end up in a log.
func quote(b []byte) string {
	const max = 40
	if len(b) > max {
		return fmt.Sprintf("%q...", b[:max])
	}
	return fmt.Sprintf("%q", b)
}

func tooLarge(n, d int) error {
	return fmt.Errorf("%w: %d rows × %d features exceeds %d values", ErrTooLarge, n, d, maxValues)
}
