package main

import (
	"testing"

	"github.com/trit-iot/trit/fleet"
)

// TestConsoleLinkedIn: the binary serves the web console, which it gets by
// importing fleet/console.
func TestConsoleLinkedIn(t *testing.T) {
	if fleet.Console == nil {
		t.Fatal("trit-fleet does not link in the web console (import github.com/trit-iot/trit/fleet/console)")
	}
}
