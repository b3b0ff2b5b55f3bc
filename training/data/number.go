package data

import (
	"errors"
	"math"
	"slices"
	"strconv"
)

// maxValues caps N*D of a loaded dataset so that a corrupt header or a
// stray huge feature index fails cleanly instead of allocating gigabytes.
// The largest shared dataset (mnist train) has 47,040,000 values. Tests
// lower it.
var maxValues = 1 << 28

var (
	errSyntax    = errors.New("invalid number")
	errRange     = errors.New("out of float32 range")
	errNotFinite = errors.New("not a finite number")
	errNoData    = errors.New("no data rows")
	errStopped   = errors.New("reading stopped")
)

// parseValue parses a feature value as a finite float32, correctly rounded.
func parseValue[T ~string | ~[]byte](b T) (float32, error) {
	// Fast path for short integers (covtype is all integers): up to 7
	// digits is below 2^24, so exactly representable.
	if n := len(b); n > 0 && n <= 8 {
		i, neg := 0, false
		if b[0] == '-' || b[0] == '+' {
			neg, i = b[0] == '-', 1
		}
		if i < n && n-i <= 7 {
			v := 0
			for ; i < n; i++ {
				c := b[i] - '0'
				if c > 9 {
					break
				}
				v = v*10 + int(c)
			}
			if i == n {
				if neg {
					v = -v
				}
				return float32(v), nil
			}
		}
	}
	v, err := strconv.ParseFloat(string(b), 32)
	switch {
	case errors.Is(err, strconv.ErrRange):
		return 0, errRange
	case err != nil:
		return 0, errSyntax
	case math.IsNaN(v) || math.IsInf(v, 0):
		return 0, errNotFinite
	}
	return float32(v), nil
}

// parseIndex parses a LIBSVM feature index: a decimal integer, possibly
// negative so that the caller can say what is wrong with it. An index
// beyond maxValues is ErrTooLarge.
func parseIndex(b []byte) (int, error) {
	i, neg := 0, false
	if len(b) > 0 && b[0] == '-' {
		neg, i = true, 1
	}
	if i == len(b) {
		return 0, errSyntax
	}
	idx := 0
	for ; i < len(b); i++ {
		c := b[i] - '0'
		if c > 9 {
			return 0, errSyntax
		}
		idx = idx*10 + int(c)
		if idx > maxValues {
			return 0, ErrTooLarge
		}
	}
	if neg {
		idx = -idx
	}
	return idx, nil
}

// grow makes room for n more values in x, doubling its capacity (append
// grows large slices by only 1.25x, which costs many copies of a 100 MB
// matrix) but never beyond limit when limit >= len(x)+n.
func grow(x []float32, n, limit int) []float32 {
	if cap(x)-len(x) >= n {
		return x
	}
	c := max(2*cap(x), len(x)+n, 1024)
	if limit >= len(x)+n {
		c = min(c, limit)
	}
	return slices.Grow(x, c-len(x))
}

// isMissing reports whether a CSV or ARFF field (trimmed) marks a missing
// value: empty, "?" (ARFF's and UCI's mark), "NA" or "N/A" (R's), "NaN"
// or "nan" (pandas', numpy's) or "null".
func isMissing(s string) bool {
	switch s {
	case "", "?", "NA", "N/A", "NaN", "nan", "null":
		return true
	}
	return false
}
