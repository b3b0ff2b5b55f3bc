package fleet

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/trit-iot/trit/fleet/fleettest"
)

// TestSignInsPerAddress: budgets are per address (IPv6 per /64), a
// success spends nothing, a spent budget refills, and the addresses
// tracked are bounded.
func TestSignInsPerAddress(t *testing.T) {
	s := NewSignIns(slog.New(slog.NewTextHandler(&fleettest.LockedBuffer{}, nil)))
	now := time.Unix(1e9, 0)
	s.now = func() time.Time { return now }
	from := func(addr string) *http.Request {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = addr
		return r
	}
	wrong := func() bool { return false }
	right := func() bool { return true }
	for range 20 {
		if got := s.Attempt(from("192.0.2.1:1000"), "api", right); got != SignedIn {
			t.Fatalf("right token: %v", got)
		}
	}
	for i := range SignInBurst {
		if got := s.Attempt(from("192.0.2.1:1000"), "api", wrong); got != WrongToken {
			t.Fatalf("wrong token %d: %v", i, got)
		}
	}
	if got := s.Attempt(from("192.0.2.1:2000"), "console", right); got != Throttled {
		t.Fatalf("the address's next attempt (another port): %v, want Throttled", got)
	}
	if got := s.Attempt(from("192.0.2.2:1000"), "api", right); got != SignedIn {
		t.Fatalf("another address: %v", got)
	}
	if s.RetryAfter(from("192.0.2.1:1")) <= 0 {
		t.Error("no Retry-After for a throttled address")
	}
	now = now.Add(signInEvery)
	if got := s.Attempt(from("192.0.2.1:1000"), "api", right); got != SignedIn {
		t.Fatalf("after the budget refilled by one: %v", got)
	}
	for range SignInBurst {
		s.Attempt(from("[2001:db8:1:2::1]:1000"), "api", wrong)
	}
	if got := s.Attempt(from("[2001:db8:1:2:ffff::9]:1000"), "api", right); got != Throttled {
		t.Errorf("another address of the same /64: %v, want Throttled", got)
	}
	if got := s.Attempt(from("[2001:db8:1:3::1]:1000"), "api", right); got != SignedIn {
		t.Errorf("another /64: %v", got)
	}
	for i := range 3 * maxSignInAddrs {
		s.Attempt(from("10.0."+strconv.Itoa(i/250)+"."+strconv.Itoa(i%250)+":1"), "api", wrong)
	}
	s.Flush()
	if n := len(s.m); n > maxSignInAddrs+1 {
		t.Errorf("%d addresses tracked, bound %d", n, maxSignInAddrs)
	}
}
