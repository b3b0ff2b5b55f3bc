package api

import (
	"testing"
	"time"
)

func TestParseExpiry(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"720h":                 now.Add(720 * time.Hour),
		"90d":                  now.AddDate(0, 0, 90),
		"2027-01-31":           time.Date(2027, 1, 31, 0, 0, 0, 0, time.UTC),
		"2026-06-01T12:00:00Z": time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC),
	} {
		if got, err := ParseExpiry(in, now); err != nil || !got.Equal(want) {
			t.Errorf("ParseExpiry(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "-1h", "0d", "2025-12-31", "soon", "11y", "4000d", "2040-01-01"} {
		if _, err := ParseExpiry(bad, now); err == nil {
			t.Errorf("ParseExpiry(%q) accepted", bad)
		}
	}
}

func FuzzParseExpiry(f *testing.F) {
	for _, s := range []string{"720h", "90d", "2027-01-31", "2026-06-01T12:00:00Z", "d", "-5d", "1e9h"} {
		f.Add(s)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseExpiry(s, now)
		if err == nil && (!got.After(now) || got.After(now.AddDate(10, 0, 0))) {
			t.Fatalf("ParseExpiry(%q) = %v, outside the next 10 years", s, got)
		}
	})
}
