package server

import (
	"log/slog"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/trit-iot/trit/fleet"
	"github.com/trit-iot/trit/fleet/access"
	"github.com/trit-iot/trit/fleet/fleettest"
)

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
	defer func(d time.Duration) { access.SignInLogEvery = d }(access.SignInLogEvery)
	access.SignInLogEvery = 100 * time.Millisecond
	logs := &fleettest.LockedBuffer{}
	f := newFixture(t, func(o *fleet.Options) { o.Logger = slog.New(slog.NewTextHandler(logs, nil)) })
	srv := apiServer(t, f)
	codes := map[int]int{}
	start := time.Now()
	for range 300 {
		code, _ := call(t, srv, "GET", "/v1/devices", "wrong-token-wrong-token", nil)
		codes[code]++
	}
	if codes[http.StatusUnauthorized] != access.SignInBurst || codes[http.StatusTooManyRequests] != 300-access.SignInBurst {
		t.Errorf("300 wrong tokens answered %v: want %d 401s, then 429s", codes, access.SignInBurst)
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
	if most := 2 + int(elapsed/access.SignInLogEvery); lines > most {
		t.Errorf("%d log lines in %v (at most %d: one per %v):\n%.3000s", lines, elapsed, most, access.SignInLogEvery, logs.String())
	}
}

var refusedRE = regexp.MustCompile(`\brefused=(\d+)`)
