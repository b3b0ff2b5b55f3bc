package cli

import (
	"strconv"
	"strings"
)

// ParseGrid reads the value of flag --name that lists a search grid:
// positive numbers separated by commas, "0.5,1,2". "" is no grid (nil). A
// bad value is a usage error.
func ParseGrid(name, s string) ([]float64, error) {
	if s == "" {
		return nil, nil
	}
	var out []float64
	for _, part := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(part), 64)
		if err != nil || !(v > 0) {
			return nil, Usagef("--%s: %q is not a positive number", name, part)
		}
		out = append(out, v)
	}
	return out, nil
}
