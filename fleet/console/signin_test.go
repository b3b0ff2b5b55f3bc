package console

import (
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/trit-iot/trit/fleet/access"
	"github.com/trit-iot/trit/fleet/fleettest"
)

// TestLoginThrottled: 300 wrong tokens from one address in a burst. After
// the first few the address is refused without a check (429), even with
// the right token, until its budget refills; the log gets a line for the
// first refusal and then counts, not 300 lines.
func TestLoginThrottled(t *testing.T) {
	f := newFixture(t)
	logs := &fleettest.LockedBuffer{}
	f.swapConsoleLog(slog.New(slog.NewTextHandler(logs, nil)))
	c := f.client()
	c.get("/console/login")
	codes := map[int]int{}
	for range 300 {
		r := c.post("/console/login", url.Values{"csrf": {c.csrf}, "token": {"not-the-token-at-all"}})
		codes[r.code]++
	}
	if codes[http.StatusUnauthorized] == 0 || codes[http.StatusTooManyRequests] < 250 {
		t.Errorf("300 wrong tokens answered %v: want a few 401s, then 429s", codes)
	}
	r := c.post("/console/login", url.Values{"csrf": {c.csrf}, "token": {testToken}})
	if r.code != http.StatusTooManyRequests || cookie(r, sessionCookie) != nil {
		t.Errorf("the right token from a throttled address: %d, session cookie %v", r.code, cookie(r, sessionCookie))
	}
	f.flushSignIns()
	lines := strings.Count(logs.String(), "\n")
	if lines > 3 {
		t.Errorf("%d log lines for 301 refused sign-ins:\n%.3000s", lines, logs.String())
	}
	if got := refusedCounted(logs.String()); got != 301 {
		t.Errorf("the log lines count %d refused sign-ins, want 301:\n%s", got, logs.String())
	}
}

// swapConsoleLog makes the console log to l, with a sign-in throttle of
// its own that logs there too.
func (f *fixture) swapConsoleLog(l *slog.Logger) {
	f.console.log = l
	a, err := access.NewAuth(f.console.db, testToken, access.NewSignIns(l), f.svc.Audit(), l, f.clk.now)
	if err != nil {
		panic(err)
	}
	f.console.auth = a
}

func (f *fixture) flushSignIns() { f.console.auth.SignIns().Flush() }

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
