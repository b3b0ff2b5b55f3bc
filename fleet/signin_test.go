package fleet

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

var refusedRE = regexp.MustCompile(`\brefused=(\d+)`)

// refusedCounted sums the refused=N of the log's lines.
func refusedCounted(logs string) int {
	n := 0
	for _, m := range refusedRE.FindAllStringSubmatch(logs, -1) {
		k, _ := strconv.Atoi(m[1])
		n += k
	}
	return n
}

// TestAPIWrongTokensThrottled: 300 wrong API tokens from one address in a
// burst: a few 401s, then 429s with Retry-After without the token being
// checked (the right one included); the log has a line for the first and
// then the counts once per window (shortened here), not 300 lines.
func TestAPIWrongTokensThrottled(t *testing.T) {
	defer func(d time.Duration) { signInLogEvery = d }(signInLogEvery)
	signInLogEvery = 100 * time.Millisecond
	logs := &lockedBuffer{}
	f := newFixture(t, func(o *Options) { o.Logger = slog.New(slog.NewTextHandler(logs, nil)) })
	srv := apiServer(t, f)
	codes := map[int]int{}
	start := time.Now()
	for range 300 {
		code, _ := call(t, srv, "GET", "/v1/devices", "wrong-token-wrong-token", nil)
		codes[code]++
	}
	if codes[http.StatusUnauthorized] != signInBurst || codes[http.StatusTooManyRequests] != 300-signInBurst {
		t.Errorf("300 wrong tokens answered %v: want %d 401s, then 429s", codes, signInBurst)
	}
	req, _ := http.NewRequest("GET", srv.URL+"/v1/devices", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Errorf("the right token from a throttled address: %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	waitUntil(t, "the counts of 301 refusals logged", func() bool { return refusedCounted(logs.String()) >= 301 })
	elapsed := time.Since(start)
	lines := strings.Count(logs.String(), "sign-in")
	if got := refusedCounted(logs.String()); got != 301 {
		t.Errorf("the log counts %d refusals, want 301:\n%s", got, logs.String())
	}
	if most := 2 + int(elapsed/signInLogEvery); lines > most {
		t.Errorf("%d log lines in %v (at most %d: one per %v):\n%.3000s", lines, elapsed, most, signInLogEvery, logs.String())
	}
}

// TestSignInsPerAddress: budgets are per address (IPv6 per /64), a
// success spends nothing, a spent budget refills, and the addresses
// tracked are bounded.
func TestSignInsPerAddress(t *testing.T) {
	s := NewSignIns(slog.New(slog.NewTextHandler(&lockedBuffer{}, nil)))
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
	for i := range signInBurst {
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
	for range signInBurst {
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
