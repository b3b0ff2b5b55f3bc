package api

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// The rollout grammar: how an operator writes a rollout request's phases,
// retries, rate and device selector, in tritctl's flags and the console's
// form alike. The fleet checks the parsed request again (bounds, kinds,
// IDs); these parsers only read the text. Their errors name the offending
// part but not the field: each caller says which flag or form field it
// read.

// MaxPhases bounds a rollout's phases.
const MaxPhases = 100

// ParsePhases reads cumulative phase targets, device counts or
// percentages, separated by commas or spaces: "5,50%,100%", "1, 100%". ""
// is no phases: every device at once.
func ParsePhases(s string) ([]Phase, error) {
	var out []Phase
	for _, part := range fields(s) {
		if p, ok := strings.CutSuffix(part, "%"); ok {
			f, err := strconv.ParseFloat(p, 64)
			if err != nil || !(f > 0 && f <= 100) {
				return nil, fmt.Errorf("%q is not a percentage in (0, 100]", part)
			}
			out = append(out, Phase{Percent: f})
			continue
		}
		n, err := strconv.Atoi(part)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is neither a device count nor a percentage", part)
		}
		out = append(out, Phase{Count: n})
	}
	if len(out) > MaxPhases {
		return nil, fmt.Errorf("%d of them, at most %d", len(out), MaxPhases)
	}
	return out, nil
}

// ParseRetries reads retries per failure kind, kind=count pairs separated
// by commas or spaces: "timed-out=2,failed=1". "" is no retries. A kind
// given twice with different counts is an error (as a selector's key).
func ParseRetries(s string) (map[string]int, error) {
	var out map[string]int
	for _, part := range fields(s) {
		k, v, ok := strings.Cut(part, "=")
		n, err := strconv.Atoi(v)
		if !ok || err != nil {
			return nil, fmt.Errorf("%q is not kind=count (kinds %s, %s, %s, %s; e.g. timed-out=2)", part, FailureFailed, FailureRejected, FailureTimedOut, FailureAny)
		}
		if old, dup := out[k]; dup && old != n {
			return nil, fmt.Errorf("%q is given twice", k)
		}
		if out == nil {
			out = map[string]int{}
		}
		out[k] = n
	}
	return out, nil
}

// ParseSelector reads a label selector, key=value pairs separated by
// commas or white space: "site=north, tier=a". A device matches when it
// has every label. "" selects nothing (an empty map).
func ParseSelector(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, part := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' || r == '\r' }) {
		k, v, ok := strings.Cut(part, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%q is not key=value", part)
		}
		if old, dup := out[k]; dup && old != v {
			return nil, fmt.Errorf("%q is given twice", k)
		}
		out[k] = v
	}
	return out, nil
}

// ParseRate reads an exponential pace, base-per-minute,factor,increase-after:
// "10,2,20" starts at 10 devices a minute and doubles after every 20
// successes.
func ParseRate(s string) (*Rate, error) {
	parts := strings.Split(s, ",")
	if len(parts) != 3 {
		return nil, fmt.Errorf("%q: want base-per-minute,factor,increase-after", s)
	}
	base, err1 := strconv.ParseFloat(strings.TrimSpace(parts[0]), 64)
	factor, err2 := strconv.ParseFloat(strings.TrimSpace(parts[1]), 64)
	after, err3 := strconv.Atoi(strings.TrimSpace(parts[2]))
	if err1 != nil || err2 != nil || err3 != nil || math.IsNaN(base) || math.IsNaN(factor) {
		return nil, fmt.Errorf("%q: want numbers base-per-minute,factor,increase-after", s)
	}
	return &Rate{BasePerMinute: base, Factor: factor, IncreaseAfter: after}, nil
}

// fields splits a list written with commas, spaces or both.
func fields(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' })
}
