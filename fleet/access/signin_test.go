package access

import (
	"io"
	"log/slog"
	"strconv"
	"testing"
	"time"
)

// TestSignInsPerAddress: budgets are per address (IPv6 per /64), a
// success spends nothing, a spent budget refills, and the addresses
// tracked are bounded.
func TestSignInsPerAddress(t *testing.T) {
	s := NewSignIns(slog.New(slog.NewTextHandler(io.Discard, nil)))
	now := time.Unix(1e9, 0)
	s.now = func() time.Time { return now }
	wrong := func() bool { return false }
	right := func() bool { return true }
	for range 20 {
		if got := s.Attempt("192.0.2.1:1000", "api", right); got != SignedIn {
			t.Fatalf("right token: %v", got)
		}
	}
	for i := range SignInBurst {
		if got := s.Attempt("192.0.2.1:1000", "api", wrong); got != WrongToken {
			t.Fatalf("wrong token %d: %v", i, got)
		}
	}
	if got := s.Attempt("192.0.2.1:2000", "console", right); got != Throttled {
		t.Fatalf("the address's next attempt (another port): %v, want Throttled", got)
	}
	if got := s.Attempt("192.0.2.2:1000", "api", right); got != SignedIn {
		t.Fatalf("another address: %v", got)
	}
	if s.RetryAfter("192.0.2.1:1") <= 0 {
		t.Error("no Retry-After for a throttled address")
	}
	now = now.Add(signInEvery)
	if got := s.Attempt("192.0.2.1:1000", "api", right); got != SignedIn {
		t.Fatalf("after the budget refilled by one: %v", got)
	}
	for range SignInBurst {
		s.Attempt("[2001:db8:1:2::1]:1000", "api", wrong)
	}
	if got := s.Attempt("[2001:db8:1:2:ffff::9]:1000", "api", right); got != Throttled {
		t.Errorf("another address of the same /64: %v, want Throttled", got)
	}
	if got := s.Attempt("[2001:db8:1:3::1]:1000", "api", right); got != SignedIn {
		t.Errorf("another /64: %v", got)
	}
	for i := range 3 * maxSignInAddrs {
		s.Attempt("10.0."+strconv.Itoa(i/250)+"."+strconv.Itoa(i%250)+":1", "api", wrong)
	}
	s.Flush()
	if n := len(s.m); n > maxSignInAddrs+1 {
		t.Errorf("%d addresses tracked, bound %d", n, maxSignInAddrs)
	}
}
