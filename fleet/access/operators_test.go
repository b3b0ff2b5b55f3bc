package access

import (
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/store"
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
	s := NewSignIns(slog.New(slog.NewTextHandler(io.Discard, nil)))
	now := time.Unix(1e9, 0)
	s.now = func() time.Time { return now }
	right := func() bool { return true }
	wrong := func() bool { return false }
	if got := s.AttemptAs("192.0.2.1:1", "console", "alice", right); got != SignedIn {
		t.Fatalf("alice: %v", got)
	}
	codes := map[SignInResult]int{}
	for i := range 200 {
		codes[s.AttemptAs("198.51.100."+strconv.Itoa(i)+":1", "api", "alice", wrong)]++
	}
	if codes[WrongToken] != SignInBurst || codes[Throttled] != 200-SignInBurst {
		t.Errorf("200 guesses at alice from 200 addresses: %v; want %d wrong, the rest throttled", codes, SignInBurst)
	}
	// Her own token is never held by others' failures: from her address,
	// from a new one, and from an address that spent its own budget.
	for _, addr := range []string{"192.0.2.1:2", "203.0.113.9:1", "198.51.100.7:1"} {
		if got := s.AttemptAs(addr, "console", "alice", right); got != SignedIn {
			t.Errorf("alice from %s during the attack: %v", addr, got)
		}
	}
	if s.RetryAfterAs("203.0.113.9:1", "alice") <= 0 {
		t.Error("no Retry-After for a throttled operator's name")
	}
	if got := s.AttemptAs("203.0.113.9:1", "api", "alice", wrong); got != Throttled {
		t.Errorf("a wrong guess at alice during the attack: %v, want Throttled", got)
	}
	for range SignInBurst {
		s.AttemptAs("203.0.113.50:1", "api", "", wrong)
	}
	if got := s.AttemptAs("203.0.113.50:1", "api", "bob", right); got != SignedIn {
		t.Errorf("bob's right token from an address ten wrong tokens spent: %v", got)
	}
	if got := s.AttemptAs("203.0.113.50:1", "api", "", right); got != Throttled {
		t.Errorf("a token naming no operator (the token file's) from that address: %v, want Throttled unchecked", got)
	}
}

// The last active admin who is a person is neither disabled nor removed
// (issue 38); with a second admin, either is.
func TestLastAdminKept(t *testing.T) {
	db, err := store.Open(filepath.Join(t.TempDir(), "fleet.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ops := &Operators{DB: db}
	for _, o := range []api.OperatorRequest{{Name: "ann", Role: "admin"}, {Name: "bot", Role: "admin", Machine: true}, {Name: "otto", Role: "operator"}} {
		if _, err := ops.Add(o, "test"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ops.SetDisabled("ann", true); !errors.Is(err, ErrOperator) || !strings.Contains(err.Error(), "last active admin") {
		t.Fatalf("disabling the last admin: %v", err)
	}
	if err := ops.Remove("ann"); !errors.Is(err, ErrOperator) {
		t.Fatalf("removing the last admin: %v", err)
	}
	if _, err := ops.SetDisabled("otto", true); err != nil {
		t.Fatalf("disabling an operator: %v", err)
	}
	if _, err := ops.Add(api.OperatorRequest{Name: "bea", Role: "admin"}, "ann"); err != nil {
		t.Fatal(err)
	}
	if _, err := ops.SetDisabled("ann", true); err != nil {
		t.Fatalf("disabling one of two admins: %v", err)
	}
	if err := ops.Remove("bea"); !errors.Is(err, ErrOperator) {
		t.Fatalf("removing the admin left: %v", err)
	}
}
