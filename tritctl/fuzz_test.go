package tritctl

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/trit-iot/trit/internal/cli"
)

// FuzzFlags drives the parsers of tritctl's rollout and time flags with
// operator text: --phases and --rate (parsePace), --selector given once
// a line (parseSelector), --since (parseSince) and a bundle's --expires
// (parseExpiry). A refusal is a usage error (exit code 2) naming its
// flag, or for --expires quoting the value; what is accepted holds what
// each flag documents.
func FuzzFlags(f *testing.F) {
	for _, s := range []struct{ a, b string }{
		{"5,50%,100%", ""}, {"", "10,2,20"}, {"1,100%", "10,2,20"}, {"0%", ""}, {"", "NaN,1,1"},
		{"site=north\ntier=a", ""}, {"site=north,site=south", ""}, {"=x", ""},
		{"2h", ""}, {"-2h", ""}, {"0s", ""}, {"2026-04-30T00:00:00Z", ""}, {"2026-04-30", ""}, {"yesterday", ""},
		{"never", ""}, {"2160h", ""}, {"2027-01-01T00:00:00Z", ""}, {"1970-01-01T00:00:00Z", ""}, {"0001-01-01T00:00:00Z", ""},
		{"2562047h47m16.854775807s", ""}, {"9999-12-31T23:59:59+23:59", ""},
	} {
		f.Add(s.a, s.b)
	}
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, a, b string) {
		usage := func(what string, err error, flag string) {
			t.Helper()
			var ue *cli.UsageError
			if !errors.As(err, &ue) || !strings.Contains(err.Error(), flag) {
				t.Fatalf("%s: error %q is not a usage error naming %s", what, err, flag)
			}
		}
		pace, err := parsePace(a, b)
		switch {
		case err != nil:
			usage("parsePace", err, "--")
		case a != "" && b != "":
			t.Fatalf("parsePace(%q, %q): both accepted", a, b)
		case len(pace.Phases) > 0 && pace.Rate != nil, b == "" && pace.Rate != nil, b != "" && pace.Rate == nil:
			t.Fatalf("parsePace(%q, %q) = %+v", a, b, pace)
		}
		if _, err := parseSelector(strings.Split(a, "\n")); err != nil {
			usage("parseSelector", err, "--selector")
		}
		since, err := parseSince(a, now)
		switch {
		case err != nil:
			usage("parseSince", err, "--since "+strconv.Quote(a))
		case !since.Before(now) && isDuration(a):
			t.Fatalf("parseSince(%q) = %v, not before now", a, since)
		}
		exp, err := parseExpiry(a, now)
		switch {
		case err != nil:
			if msg := err.Error(); !strings.Contains(msg, a) && !strings.Contains(msg, strconv.Quote(a)) {
				t.Fatalf("parseExpiry(%q): error %q does not quote the value", a, msg)
			}
		case a == "never":
			if !exp.IsZero() {
				t.Fatalf("never = %v", exp)
			}
		case !exp.After(now) || exp.Unix() <= 0:
			// A bundle stores Unix seconds, 0 for never.
			t.Fatalf("parseExpiry(%q) = %v, not a time after now", a, exp)
		}
	})
}

func isDuration(s string) bool {
	_, err := time.ParseDuration(s)
	return err == nil
}
