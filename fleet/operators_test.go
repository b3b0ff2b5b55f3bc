package fleet

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/trit-iot/trit/fleet/fleettest"
)

func TestOperatorTokens(t *testing.T) {
	tok, sum, err := newOperatorToken("alice")
	if err != nil {
		t.Fatal(err)
	}
	if tokenName(tok) != "alice" || len(sum) != 64 || !strings.HasPrefix(tok, "alice.") {
		t.Fatalf("token %q (name %q), hash %q", tok, tokenName(tok), sum)
	}
	for _, bad := range []string{"", "0123456789abcdef-test-token", "alice." + strings.Repeat("0", 63), ".x" + strings.Repeat("0", 64), "a b." + strings.Repeat("0", 64)} {
		if n := tokenName(bad); n != "" {
			t.Errorf("tokenName(%q) = %q, want none", bad, n)
		}
	}
}

// Brute force against one operator's name from many addresses: the name's
// budget runs out and further guesses from new addresses are throttled
// without a check, while the operator itself, from an address it signed in
// from before, still signs in.
func TestSignInsPerOperator(t *testing.T) {
	s := NewSignIns(slog.New(slog.NewTextHandler(&fleettest.LockedBuffer{}, nil)))
	now := time.Unix(1e9, 0)
	s.now = func() time.Time { return now }
	from := func(addr string) *http.Request {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = addr
		return r
	}
	right := func() bool { return true }
	checked := 0
	wrong := func() bool { checked++; return false }
	if got := s.AttemptAs(from("192.0.2.1:1"), "console", "alice", right); got != SignedIn {
		t.Fatalf("alice: %v", got)
	}
	codes := map[SignInResult]int{}
	for i := range 200 {
		codes[s.AttemptAs(from("198.51.100."+strconv.Itoa(i)+":1"), "api", "alice", wrong)]++
	}
	if codes[WrongToken] != SignInBurst || codes[Throttled] != 200-SignInBurst || checked != SignInBurst {
		t.Errorf("200 guesses at alice from 200 addresses: %v, %d checked; want %d checked, the rest throttled", codes, checked, SignInBurst)
	}
	if got := s.AttemptAs(from("192.0.2.1:2"), "console", "alice", right); got != SignedIn {
		t.Errorf("alice from her own address during the attack: %v", got)
	}
	if got := s.AttemptAs(from("203.0.113.9:1"), "console", "alice", right); got != Throttled {
		t.Errorf("alice from a new address during the attack: %v, want Throttled", got)
	}
	if s.RetryAfterAs(from("203.0.113.9:1"), "alice") <= 0 {
		t.Error("no Retry-After for a throttled operator")
	}
	if got := s.AttemptAs(from("203.0.113.9:1"), "api", "bob", right); got != SignedIn {
		t.Errorf("another operator: %v", got)
	}
	now = now.Add(signInEvery)
	if got := s.AttemptAs(from("203.0.113.9:1"), "console", "alice", right); got != SignedIn {
		t.Errorf("alice after the budget refilled by one: %v", got)
	}
}
