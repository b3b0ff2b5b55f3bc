package replay

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// parseValue parses one number; NaN and infinities are refused because a
// single one poisons every feature of its window.
func parseValue(s string) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%q is not a finite number", s)
	}
	return v, nil
}

// parseTime parses a time column: RFC 3339 ("2025-01-02T15:04:05.5Z") or
// seconds since the Unix epoch ("1735830245.5").
func parseTime(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.Abs(v) > 1e11 {
		return time.Time{}, fmt.Errorf("time %q is neither RFC 3339 nor seconds since 1970", s)
	}
	sec := math.Floor(v)
	return time.Unix(int64(sec), int64((v-sec)*1e9)).UTC(), nil
}

// checkHeader validates CSV column names and returns the index of the time
// column (-1 if none). timeColumn names it; "" picks a column called "time"
// or "timestamp", if any.
func checkHeader(header []string, timeColumn string) (int, error) {
	timeCol := -1
	seen := map[string]bool{}
	for i, h := range header {
		h = strings.TrimSpace(h)
		switch {
		case h == "":
			return -1, fmt.Errorf("column %d has no name", i+1)
		case seen[h]:
			return -1, fmt.Errorf("column %q appears twice", h)
		case timeColumn != "" && h == timeColumn,
			timeColumn == "" && (strings.EqualFold(h, "time") || strings.EqualFold(h, "timestamp")):
			if timeCol >= 0 {
				return -1, fmt.Errorf("two time columns, %q and %q; set time_column", header[timeCol], h)
			}
			timeCol = i
		}
		seen[h] = true
	}
	if timeColumn != "" && timeCol < 0 {
		return -1, fmt.Errorf("no time column %q in the header", timeColumn)
	}
	if len(header)-btoi(timeCol >= 0) == 0 {
		return -1, errors.New("no data columns")
	}
	return timeCol, nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// parseLIBSVM parses one LIBSVM line "label index:value ..." into dst,
// where dst[0] is the label and dst[i] the value of feature i (1-based);
// absent features are 0. Indices must increase strictly and fit in dst.
// Anything after '#' is a comment. It reports false for a blank line.
func parseLIBSVM(line string, dst []float64) (bool, error) {
	if i := strings.IndexByte(line, '#'); i >= 0 {
		line = line[:i]
	}
	fields := strings.Fields(line)
	if len(fields) == 0 {
		return false, nil
	}
	clear(dst)
	label, err := parseValue(fields[0])
	if err != nil {
		return false, fmt.Errorf("label: %w", err)
	}
	dst[0] = label
	last := 0
	for _, f := range fields[1:] {
		is, vs, ok := strings.Cut(f, ":")
		if !ok {
			return false, fmt.Errorf("%q is not index:value", f)
		}
		idx, err := strconv.Atoi(is)
		if err != nil || idx < 1 {
			return false, fmt.Errorf("%q: index must be an integer >= 1", f)
		}
		if idx <= last {
			return false, fmt.Errorf("%q: indices must increase (previous was %d)", f, last)
		}
		if idx >= len(dst) {
			return false, fmt.Errorf("%q: index %d is beyond the %d features configured (dims)", f, idx, len(dst)-1)
		}
		v, err := parseValue(vs)
		if err != nil {
			return false, fmt.Errorf("feature %d: %w", idx, err)
		}
		dst[idx], last = v, idx
	}
	return true, nil
}

// maxIndexLIBSVM returns the largest feature index on a line, for sizing
// when dims is not configured; errors are left to parseLIBSVM.
func maxIndexLIBSVM(line string) int {
	if i := strings.IndexByte(line, '#'); i >= 0 {
		line = line[:i]
	}
	fields := strings.Fields(line)
	m := 0
	for _, f := range fields[min(1, len(fields)):] {
		is, _, _ := strings.Cut(f, ":")
		if idx, err := strconv.Atoi(is); err == nil {
			m = max(m, idx)
		}
	}
	return m
}
