package wire

import (
	"crypto/sha256"
	"fmt"
)

// Identifier limits. Device IDs, fleet names and rollout IDs are used as
// MQTT topic levels, client IDs, bbolt keys and log fields, so they are kept
// to a small, printable, wildcard-free alphabet.
const (
	MaxIDLen        = 64  // device IDs and fleet names
	MaxRolloutIDLen = 128 // rollout IDs (the agent's store keys its job records by them)
)

// CheckID reports why s cannot be a device ID or fleet name, or returns nil:
// 1..MaxIDLen bytes of [A-Za-z0-9._-], not starting with '.' or '-'.
func CheckID(s string) error { return checkName(s, MaxIDLen) }

// CheckRolloutID is CheckID with the longer limit MaxRolloutIDLen.
func CheckRolloutID(s string) error { return checkName(s, MaxRolloutIDLen) }

func checkName(s string, max int) error {
	if s == "" {
		return fmt.Errorf("empty")
	}
	if len(s) > max {
		return fmt.Errorf("%d bytes, at most %d", len(s), max)
	}
	if s[0] == '.' || s[0] == '-' {
		return fmt.Errorf("%q starts with %q", s, s[0])
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("%q has byte %#02x at %d; allowed are A-Z a-z 0-9 . _ -", s, c, i)
		}
	}
	return nil
}

// CheckHash reports why h cannot be a bundle hash (lowercase hex SHA-256).
func CheckHash(h string) error {
	if len(h) != 2*sha256.Size {
		return fmt.Errorf("%d characters, want %d lowercase hex digits", len(h), 2*sha256.Size)
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return fmt.Errorf("byte %#02x at %d is not a lowercase hex digit", c, i)
		}
	}
	return nil
}
