package console

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet/access"
	"github.com/trit-iot/trit/store"
	"github.com/trit-iot/trit/wire"
)

// pages are every page a signed-in operator can open in the standard
// fixture (see populate).
var pages = []string{"/console/", "/console/devices", "/console/devices/gw-1", "/console/rollouts", "/console/rollouts/r1",
	"/console/new-rollout", "/console/bundles"}

// populate gives the fixture two devices, two releases (the first with
// training figures) and a running two-phase rollout r1 of release 1.
func populate(f *fixture) (h1, h2 string) {
	f.t.Helper()
	f.device("gw-1", map[string]string{"site": "north"}, map[string]uint64{"normal": 10, "fault": 3})
	f.device("gw-2", map[string]string{"site": "north"}, nil)
	h1 = f.bundle("vib", 1, map[string]string{"train.balanced": "97.50", "train.rows": "200", "train.class_counts": "150,50"})
	h2 = f.bundle("vib", 2, nil)
	if _, err := f.svc.CreateRollout(api.RolloutRequest{ID: "r1", Bundle: h1, Selector: map[string]string{"site": "north"},
		Pace: api.Pace{Phases: []api.Phase{{Count: 1}, {Percent: 100}}}, Abort: api.AbortPolicy{On: api.FailureAny, MinExecuted: 1}}); err != nil {
		f.t.Fatal(err)
	}
	f.svc.Tick()
	return h1, h2
}

func TestLogin(t *testing.T) {
	f := newFixture(t)
	c := f.client()
	if r := c.get("/"); r.code != http.StatusSeeOther || r.header.Get("Location") != "/console/" {
		t.Fatalf("/: %d to %q, want a redirect to the console", r.code, r.header.Get("Location"))
	}
	if r := c.get("/console/devices?status=online"); r.code != http.StatusSeeOther ||
		r.header.Get("Location") != "/console/login?next="+url.QueryEscape("/console/devices?status=online") {
		t.Fatalf("a page without a session: %d to %q", r.code, r.header.Get("Location"))
	}
	r := c.get("/console/login")
	lc := cookie(r, loginCookie)
	if r.code != http.StatusOK || lc == nil || !lc.HttpOnly || lc.SameSite != http.SameSiteStrictMode || lc.Secure || lc.Value != c.csrf {
		t.Fatalf("login page: %d, cookie %+v, form token %q", r.code, lc, c.csrf)
	}

	// The form's double-submit token is required.
	if r := c.post("/console/login", url.Values{"token": {testToken}}); r.code != http.StatusForbidden || cookie(r, sessionCookie) != nil {
		t.Fatalf("login without the form token: %d, session cookie %v", r.code, cookie(r, sessionCookie))
	}
	c.get("/console/login")
	if r := c.post("/console/login", url.Values{"csrf": {c.csrf}, "token": {"not-the-token-at-all"}}); r.code != http.StatusUnauthorized ||
		cookie(r, sessionCookie) != nil || !strings.Contains(r.body, "not a valid operator token") {
		t.Fatalf("wrong token: %d, session cookie %v", r.code, cookie(r, sessionCookie))
	}
	c.get("/console/login")
	r = c.post("/console/login", url.Values{"csrf": {c.csrf}, "token": {testToken}, "next": {"/console/devices?status=online"}})
	sc := cookie(r, sessionCookie)
	if r.code != http.StatusSeeOther || r.header.Get("Location") != "/console/devices?status=online" {
		t.Fatalf("login: %d to %q", r.code, r.header.Get("Location"))
	}
	if sc == nil || !sc.HttpOnly || sc.SameSite != http.SameSiteStrictMode || sc.Secure || sc.Path != "/console/" || len(sc.Value) < 43 {
		t.Fatalf("session cookie %+v", sc)
	}
	if r := c.get("/console/devices"); r.code != http.StatusOK || !strings.Contains(r.body, "Sign out") {
		t.Fatalf("after login: %d", r.code)
	}
	// A second login is a new session; the first stays valid.
	c2 := f.client().login()
	if c2.csrf == c.csrf {
		t.Fatal("two sessions share a CSRF token")
	}
	if r := c.get("/console/"); r.code != http.StatusOK {
		t.Fatalf("first session after a second login: %d", r.code)
	}
}

func TestLoginNextStaysInTheConsole(t *testing.T) {
	for next, want := range map[string]string{
		"/console/devices?q=a":       "/console/devices?q=a",
		"//evil.example/console/":    "/console/",
		"https://evil.example/":      "/console/",
		"/console/../v1/devices":     "/console/../v1/devices", // still this origin
		"/v1/devices":                "/console/",
		"/console/\\evil":            "/console/",
		"javascript:alert(1)":        "/console/",
		"/console/login?next=/x":     "/console/",
		"":                           "/console/",
		"/console//evil.example/x":   "/console/",
		"/console/devices\r\nX-A: b": "/console/",
	} {
		if got := safeNext(next); got != want {
			t.Errorf("safeNext(%q) = %q, want %q", next, got, want)
		}
	}
}

func TestSecureCookieOverTLS(t *testing.T) {
	f := newFixture(t)
	get := httptest.NewRequest("GET", "https://fleet.example/console/login", nil)
	rec := httptest.NewRecorder()
	f.console.ServeHTTP(rec, get)
	lc := cookie(response{header: rec.Header()}, loginCookie)
	if lc == nil || !lc.Secure {
		t.Fatalf("login cookie over TLS: %+v", lc)
	}
	form := url.Values{"csrf": {lc.Value}, "token": {testToken}}
	post := httptest.NewRequest("POST", "https://fleet.example/console/login", strings.NewReader(form.Encode()))
	post.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	post.AddCookie(lc)
	rec = httptest.NewRecorder()
	f.console.ServeHTTP(rec, post)
	sc := cookie(response{header: rec.Header()}, sessionCookie)
	if rec.Code != http.StatusSeeOther || sc == nil || !sc.Secure || !sc.HttpOnly || sc.SameSite != http.SameSiteStrictMode {
		t.Fatalf("login over TLS: %d, session cookie %+v", rec.Code, sc)
	}
}

func TestSecureCookieBehindATLSProxy(t *testing.T) {
	f := newFixture(t)
	c := f.client()
	r := c.get("/console/login", "X-Forwarded-Proto", "https")
	if lc := cookie(r, loginCookie); lc == nil || !lc.Secure {
		t.Fatalf("login cookie behind a TLS proxy: %+v", lc)
	}
}

func TestSessionsEnd(t *testing.T) {
	f := newFixture(t)
	populate(f)
	c := f.client().login()

	// Live refreshes do not keep a session alive; page views do.
	f.clk.advance(20 * time.Minute)
	if r := c.get("/console/rollouts/r1?part=live", "HX-Request", "true"); r.code != http.StatusOK {
		t.Fatalf("live refresh: %d", r.code)
	}
	f.clk.advance(11 * time.Minute)
	r := c.get("/console/rollouts/r1?part=live", "HX-Request", "true")
	if r.code != http.StatusNoContent || r.header.Get("HX-Redirect") != "/console/login" {
		t.Fatalf("live refresh after 31 idle minutes: %d, HX-Redirect %q", r.code, r.header.Get("HX-Redirect"))
	}
	if r := c.get("/console/"); r.code != http.StatusSeeOther {
		t.Fatalf("page after 31 idle minutes: %d", r.code)
	}

	// Activity keeps a session for at most MaxAge.
	c = f.client().login()
	for range 13 * 2 {
		f.clk.advance(29 * time.Minute)
		if r := c.get("/console/"); r.code != http.StatusOK {
			break
		}
	}
	if r := c.get("/console/"); r.code != http.StatusSeeOther {
		t.Fatalf("a session used every 29 minutes still valid after %v", 26*29*time.Minute)
	}

	// Logout ends it at once, and needs the CSRF token.
	c = f.client().login()
	if r := c.post("/console/logout", nil); r.code != http.StatusForbidden {
		t.Fatalf("logout without the CSRF token: %d", r.code)
	}
	if r := c.get("/console/"); r.code != http.StatusOK {
		t.Fatalf("session after a refused logout: %d", r.code)
	}
	old := c.c.Jar.Cookies(mustURL(t, f.srv.URL+"/console/"))
	r = c.post("/console/logout", url.Values{"csrf": {c.csrf}})
	if r.code != http.StatusSeeOther || r.header.Get("Location") != "/console/login" {
		t.Fatalf("logout: %d to %q", r.code, r.header.Get("Location"))
	}
	// The old cookie, replayed, is worthless.
	replay := f.client()
	replay.c.Jar.SetCookies(mustURL(t, f.srv.URL+"/console/"), old)
	if r := replay.get("/console/"); r.code != http.StatusSeeOther {
		t.Fatalf("a logged-out session's cookie still works: %d", r.code)
	}
}

func TestSessionsAreBounded(t *testing.T) {
	db, err := store.Open(filepath.Join(t.TempDir(), "fleet.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s := newSessions(slog.New(slog.NewTextHandler(io.Discard, nil)), db, time.Hour, time.Hour, 3, time.Now)
	var ids []string
	for range 5 {
		id, err := s.create(access.Principal{Name: access.TokenFileOperator, Role: access.RoleAdmin})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	kept := 0
	if err := db.ForEach(store.FleetConsoleSessions, func(string, []byte) error { kept++; return nil }); err != nil || kept != 3 {
		t.Fatalf("%d sessions kept (%v), want 3", kept, err)
	}
	valid := 0
	for _, id := range ids {
		req := httptest.NewRequest("GET", "/console/", nil)
		req.AddCookie(&http.Cookie{Name: sessionCookie, Value: id})
		if _, ok, err := s.lookup(req, false); err != nil {
			t.Fatal(err)
		} else if ok {
			valid++
		}
	}
	if valid != 3 {
		t.Fatalf("%d sessions valid, want 3", valid)
	}
}

// TestSessionsEvictedPerOperator: an operator who signs in again and
// again (a viewer, 260 times against the default 256) ends their own
// oldest sessions, never another operator's; before, the bound was global
// and a viewer could sign every admin out.
func TestSessionsEvictedPerOperator(t *testing.T) {
	db, err := store.Open(filepath.Join(t.TempDir(), "fleet.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	clk := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	s := newSessions(slog.New(slog.NewTextHandler(io.Discard, nil)), db, time.Hour, time.Hour, 4, func() time.Time { return clk })
	admin, err := s.create(access.Principal{Name: "alice", Role: access.RoleAdmin})
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		clk = clk.Add(time.Second) // the admin's session is the least recently seen of all
		if _, err := s.create(access.Principal{Name: "mallory", Role: access.RoleViewer}); err != nil {
			t.Fatal(err)
		}
	}
	req := httptest.NewRequest("GET", "/console/", nil)
	req.AddCookie(&http.Cookie{Name: sessionCookie, Value: admin})
	if _, ok, err := s.lookup(req, false); err != nil || !ok {
		t.Fatalf("the admin's session after a viewer signed in 10 times (bound 4): valid %v, %v", ok, err)
	}
	per := map[string]int{}
	db.ForEach(store.FleetConsoleSessions, func(_ string, raw []byte) error {
		var x store.ConsoleSession
		json.Unmarshal(raw, &x)
		per[x.Operator]++
		return nil
	})
	if per["alice"] != 1 || per["mallory"] != 3 {
		t.Fatalf("sessions kept per operator %v, want alice 1, mallory 3", per)
	}
}

func mustURL(t *testing.T, s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestCSRF(t *testing.T) {
	f := newFixture(t)
	populate(f)
	c := f.client().login()
	state := func() api.RolloutState {
		r, err := f.svc.GetRollout("r1")
		if err != nil {
			t.Fatal(err)
		}
		return r.State
	}
	for _, tc := range []struct {
		name   string
		form   url.Values
		header []string
	}{
		{"no token", url.Values{"reason": {"x"}}, nil},
		{"empty token", url.Values{"csrf": {""}}, nil},
		{"wrong token", url.Values{"csrf": {strings.Repeat("A", 43)}}, nil},
		{"another session's token", url.Values{"csrf": {f.client().login().csrf}}, nil},
		{"cross-site, with the token", url.Values{"csrf": {c.csrf}}, []string{"Sec-Fetch-Site", "cross-site"}},
		{"other origin, with the token", url.Values{"csrf": {c.csrf}}, []string{"Origin", "http://evil.example"}},
	} {
		if r := c.post("/console/rollouts/r1/pause", tc.form, tc.header...); r.code != http.StatusForbidden {
			t.Errorf("%s: HTTP %d, want 403", tc.name, r.code)
		}
		if st := state(); st != api.RolloutRunning {
			t.Fatalf("%s: the rollout is %s", tc.name, st)
		}
	}
	if r := c.post("/console/rollouts", url.Values{"id": {"r2"}, "bundle": {"x"}, "selector": {"site=north"}}); r.code != http.StatusForbidden {
		t.Errorf("create without the token: HTTP %d", r.code)
	}
	// The token in the header works too (for scripts in the page).
	if r := c.post("/console/rollouts/r1/pause", nil, csrfHeader, c.csrf, "Sec-Fetch-Site", "same-origin"); r.code != http.StatusSeeOther {
		t.Fatalf("pause with the token in the header: HTTP %d", r.code)
	}
	if st := state(); st != api.RolloutPaused {
		t.Fatalf("after pause: %s", st)
	}
	// A signed-out browser cannot act either.
	if r := f.client().post("/console/rollouts/r1/resume", url.Values{"csrf": {c.csrf}}); r.code != http.StatusForbidden {
		t.Fatalf("resume without a session: HTTP %d", r.code)
	}
}

func TestSecurityHeaders(t *testing.T) {
	f := newFixture(t)
	populate(f)
	c := f.client().login()
	for _, p := range append(pages, "/console/login", "/console/nothing-here") {
		r := c.get(p)
		h := r.header
		if h.Get("Content-Security-Policy") != contentSecurityPolicy || h.Get("X-Content-Type-Options") != "nosniff" ||
			h.Get("X-Frame-Options") != "DENY" || h.Get("Referrer-Policy") != "same-origin" {
			t.Errorf("%s: headers %v", p, h)
		}
		if r.code == http.StatusOK && h.Get("Cache-Control") != "no-store" {
			t.Errorf("%s: Cache-Control %q", p, h.Get("Cache-Control"))
		}
	}
	for _, bad := range []string{"unsafe-inline", "unsafe-eval", "*", "data:", "http:"} {
		if strings.Contains(contentSecurityPolicy, bad) {
			t.Errorf("the CSP allows %s", bad)
		}
	}
	if r := c.get("/console/nothing-here"); r.code != http.StatusNotFound {
		t.Errorf("unknown page: %d", r.code)
	}
	if r := c.get("/console/devices/gw-9"); r.code != http.StatusNotFound || !strings.Contains(r.body, "device gw-9") {
		t.Errorf("unknown device: %d", r.code)
	}
}

// TestPagesFitTheCSP: no page needs what the CSP forbids — no inline
// script, no style element or attribute, no event-handler attribute, no
// resource from elsewhere — and every script, style and image it loads is
// served.
func TestPagesFitTheCSP(t *testing.T) {
	f := newFixture(t)
	populate(f)
	c := f.client().login()
	for _, p := range append(pages, "/console/rollouts/r1?part=live", "/console/devices?part=live") {
		doc := parse(t, c.get(p).body)
		walk(doc, func(n *html.Node) {
			switch n.Data {
			case "script":
				if attr(n, "src") == "" || n.FirstChild != nil {
					t.Errorf("%s: inline script", p)
				}
			case "style":
				t.Errorf("%s: style element", p)
			}
			for _, a := range n.Attr {
				if a.Key == "style" || strings.HasPrefix(a.Key, "on") {
					t.Errorf("%s: <%s %s=%q>", p, n.Data, a.Key, a.Val)
				}
				if (a.Key == "src" || a.Key == "href") && !strings.HasPrefix(a.Val, "/") && !strings.HasPrefix(a.Val, "#") {
					t.Errorf("%s: <%s %s=%q> leaves the console", p, n.Data, a.Key, a.Val)
				}
				if (a.Key == "src" || (a.Key == "href" && n.Data == "link")) && c.get(a.Val).code != http.StatusOK {
					t.Errorf("%s: %s not served", p, a.Val)
				}
			}
		})
	}
}

func TestHTMXIsThePinnedFile(t *testing.T) {
	readme, err := os.ReadFile("static/README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`sha256:\s+([0-9a-f]{64})\s+` + regexp.QuoteMeta(htmxFile)).FindSubmatch(readme)
	if m == nil {
		t.Fatalf("static/README.md does not record the SHA-256 of %s", htmxFile)
	}
	data, err := staticFS.ReadFile("static/" + htmxFile)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	if got := hex.EncodeToString(sum[:]); got != string(m[1]) {
		t.Fatalf("%s has SHA-256 %s; static/README.md records %s", htmxFile, got, m[1])
	}
	if _, err := staticFS.ReadFile("static/htmx-LICENSE"); err != nil {
		t.Fatal("htmx's licence is not vendored with it")
	}
}

// Hostile strings a device can report, each of which would be markup or a
// script if printed as is.
var hostile = []string{
	`<script>alert("text")</script>`,
	`"><img src=x onerror=alert("attr")>`,
	`' onmouseover='alert("single")`,
	`javascript:alert("url")`,
	`</text><svg onload=alert("svg")><text>`,
}

// TestHostileStringsAreText: whatever a device reports, and a stored
// device ID that is markup, appears as text on every page: the documents
// parse to no element, attribute or URL the console did not write.
func TestHostileStringsAreText(t *testing.T) {
	f := newFixture(t)
	h1, _ := populate(f)
	hash := strings.Repeat("ab", 32)
	counts := map[string]uint64{}
	labels := map[string]string{"site": "north"}
	for i, s := range hostile {
		counts[s] = uint64(i + 1)
		labels["k"+string(rune('a'+i))] = s
	}
	labels[hostile[1]] = hostile[2]
	f.deliver(f.svc.Topics().State("evil"), &wire.State{Device: "evil", Session: 1, Online: true, AgentVersion: hostile[2], Hardware: hostile[1],
		Health: hostile[0], Labels: labels, Model: &wire.ModelRef{ID: hostile[0], Release: 1, Bundle: hash, Install: hostile[1]},
		Previous: &wire.ModelRef{ID: hostile[3], Release: 1, Bundle: hash},
		Sensors:  []wire.SensorHealth{{Sensor: hostile[1], State: hostile[2], LastError: hostile[4]}}})
	f.deliver(f.svc.Topics().Telemetry("evil"), &wire.Telemetry{Device: "evil", Session: 1, Seq: 1, From: 1, To: 2, Predictions: 100,
		Counts: counts, Last: &wire.Prediction{Class: hostile[4], Time: 1},
		Drift: &wire.DriftReport{Score: 0.5, Windows: 10, Top: []wire.DriftBit{{Column: 3, Feature: hostile[1], Train: 0.1, Now: 0.9, JS: 0.5}}}})
	f.deliver(f.svc.Topics().Events("evil"), &wire.Event{Device: "evil", Rollout: "probe", Seq: 1, State: wire.JobFailed, Code: hostile[1], Reason: hostile[0], Time: 1})
	// A record whose ID is markup: the protocol refuses such IDs, so only
	// a database from elsewhere holds one.
	badID := `x"><script>alert("id")</script>`
	if err := f.db.Update(func(tx store.Tx) error {
		return tx.Put(store.FleetDevices, badID, &api.Device{ID: badID, Labels: map[string]string{"site": "north"}})
	}); err != nil {
		t.Fatal(err)
	}
	// A rollout to both, with a device's reason and an operator's reason.
	if _, err := f.svc.CreateRollout(api.RolloutRequest{ID: "r2", Bundle: h1, Devices: []string{"evil"}}); err != nil {
		t.Fatal(err)
	}
	f.svc.Tick()
	if _, err := f.svc.Control("r2", "pause", hostile[0]); err != nil {
		t.Fatal(err)
	}

	c := f.client().login()
	all := append(pages, "/console/devices/evil", "/console/rollouts/r2", "/console/devices/"+url.PathEscape(badID),
		"/console/devices?selector="+url.QueryEscape("ka="+hostile[0]), "/console/devices?model="+url.QueryEscape(hostile[0]),
		"/console/devices?q="+url.QueryEscape(hostile[1]))
	seen := map[string]bool{}
	for _, p := range all {
		r := c.get(p)
		if r.code != http.StatusOK {
			t.Fatalf("%s: %d", p, r.code)
		}
		doc := parse(t, r.body)
		walk(doc, func(n *html.Node) {
			switch n.Type {
			case html.TextNode:
				for _, s := range append(hostile, badID) {
					if strings.Contains(n.Data, s) {
						seen[s] = true
					}
				}
				if strings.Contains(n.Data, "alert(") && n.Parent != nil && (n.Parent.Data == "script" || n.Parent.Data == "style") {
					t.Errorf("%s: a device string is inside <%s>", p, n.Parent.Data)
				}
			case html.ElementNode:
				switch n.Data {
				case "script":
					if src := attr(n, "src"); !strings.HasPrefix(src, "/console/static/htmx-") && !strings.HasPrefix(src, "/console/static/console.js?") {
						t.Errorf("%s: a script the console did not write: %v", p, n.Attr)
					}
				case "img":
					t.Errorf("%s: an img element", p)
				}
				for _, a := range n.Attr {
					if strings.HasPrefix(a.Key, "on") || a.Key == "autofocus" && n.Data != "input" {
						t.Errorf("%s: <%s %s=%q>", p, n.Data, a.Key, a.Val)
					}
					if (a.Key == "href" || a.Key == "action" || a.Key == "hx-get" || a.Key == "src") && !strings.HasPrefix(a.Val, "/") && !strings.HasPrefix(a.Val, "#") {
						t.Errorf("%s: <%s %s=%q>", p, n.Data, a.Key, a.Val)
					}
				}
			}
		})
		// The SVG charts' labels are text in <text> and <title>.
		if p == "/console/devices/evil" && !strings.Contains(r.body, "&lt;/text&gt;&lt;svg onload=") {
			t.Errorf("%s: the class chart's hostile label is not escaped text", p)
		}
	}
	for _, s := range append(hostile, badID) {
		if !seen[s] {
			t.Errorf("%q never appeared as text", s)
		}
	}
}

func parse(t *testing.T, body string) *html.Node {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func walk(n *html.Node, f func(*html.Node)) {
	f(n)
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		walk(c, f)
	}
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

// TestAgreementAndDrift: a device's shadow report and drift score show on
// its page, and a drift score past the fleet's threshold is an overview
// alert.
func TestAgreementAndDrift(t *testing.T) {
	f := newFixture(t)
	h1, _ := populate(f)
	f.deliver(f.svc.Topics().State("gw-9"), &wire.State{Device: "gw-9", Session: 1, Online: true, Health: "ok", AgentVersion: "0.2.0",
		Model: &wire.ModelRef{ID: "vib", Release: 1, Bundle: h1, Install: "committed"}})
	f.deliver(f.svc.Topics().Telemetry("gw-9"), &wire.Telemetry{Device: "gw-9", Session: 1, Seq: 1, From: 1, To: 2, Predictions: 40,
		Counts: map[string]uint64{"normal": 40},
		Shadow: &wire.ShadowReport{Rollout: "r9", Seq: 1, Bundle: strings.Repeat("ab", 32), Windows: 40, Agree: 30,
			ActiveClasses: []string{"normal", "fault"}, CandidateClasses: []string{"normal", "fault"},
			Confusion: [][]uint64{{30, 10}, {0, 0}}, ActiveLowMargin: 4, CandidateLowMargin: 8, LowMargin: 0.1},
		// The agent names the input a threshold bit tests; the others are
		// random features of h1 (bundletest.Spec has nothing else).
		Drift: &wire.DriftReport{Score: 0.067, Windows: 40, Top: []wire.DriftBit{
			{Column: 5, Feature: "temperature", Train: 0.30, Now: 0.62, JS: 0.2}, {Column: 17, Train: 0.5, Now: 0.7, JS: 0.1},
			{Column: 6, Feature: "temperature", Train: 0.5, Now: 0.6, JS: 0.05}, {Column: 18, Train: 0.5, Now: 0.6, JS: 0.04}}}})
	c := f.client().login()
	page := c.get("/console/devices/gw-9")
	for _, w := range []string{"Shadow candidate", "75% (30 of 40)", "active 10%, candidate 20%", "<td>10</td>",
		"0.0670</strong> against an alert threshold of 0.03", "drifting", "At or above the alert threshold 0.03",
		"<code>temperature</code>: above its threshold in 62% of recent windows, 30% in training", "2 random features"} {
		if !strings.Contains(page.body, w) {
			t.Errorf("device page does not show %q", w)
		}
	}
	// Bits are named by what they test, never by their column number.
	if strings.Contains(page.body, "<code>17</code>") || strings.Count(page.body, "<code>temperature</code>") != 1 {
		t.Errorf("drifted bits shown by number, or one input twice")
	}
	if over := c.get("/console/"); !strings.Contains(over.body, "1 device is past the drift alert threshold (0.03") || !strings.Contains(over.body, "gw-9") {
		t.Errorf("overview has no drift alert for gw-9")
	}
	// A shadow rollout's page lists its gates and each device's agreement.
	f.device("gw-8", map[string]string{"site": "east"}, map[string]uint64{"normal": 5})
	h3 := f.bundle("vib", 3, nil)
	if _, err := f.svc.CreateRollout(api.RolloutRequest{ID: "rs", Bundle: h3, Selector: map[string]string{"site": "east"},
		Pace:   api.Pace{Phases: []api.Phase{{Percent: 100}}},
		Shadow: &api.ShadowPolicy{MinAgreement: 0.9, MaxLowMargin: 0.2}}); err != nil {
		t.Fatal(err)
	}
	f.svc.Tick()
	ro := c.get("/console/rollouts/rs")
	for _, w := range []string{"Shadow gates", "agreement with the active model at least 90%", "low-margin predictions at most 20%", ">Agreement<"} {
		if !strings.Contains(ro.body, w) {
			t.Errorf("shadow rollout page does not show %q", w)
		}
	}
}

func TestPages(t *testing.T) {
	f := newFixture(t)
	h1, h2 := populate(f)
	c := f.client().login()
	for _, tc := range []struct {
		path string
		want []string
	}{
		{"/console/", []string{`<span class="big">2</span> online`, "Rollouts running", ">r1<", "Predictions by class", "fault", "Drift alerts"}},
		{"/console/devices", []string{"Devices 1–2 of 2 matching", "gw-1", "gw-2", "site=north", "10 (76.9%)"}},
		{"/console/devices?selector=site%3Dsouth", []string{"No device matches", "(2 in the inventory)"}},
		{"/console/devices?selector=site", []string{"label selector: &#34;site&#34; is not key=value"}},
		{"/console/devices/gw-1", []string{"gw-1", ">r1<", "notified", "Agreement and drift", "No shadow candidate and no drift report yet"}},
		{"/console/rollouts", []string{">r1<", "running", "0 / 2 succeeded, 1 in progress"}},
		{"/console/rollouts/r1", []string{"2 phases", "up to 1 device (1 in all)", "up to 100% of devices (2 in all)",
			"Not checked yet: 0 of the 1 finished devices it needs.", "Pause…", "Abort…", "ph-running", "ph-waiting"}},
		{"/console/bundles", []string{"balanced accuracy <strong>97.50%</strong>", "200 training rows (by class: normal 150, fault 50)",
			"not recorded", "/console/new-rollout?bundle=" + h2, keyID(t, f)}},
		{"/console/new-rollout?bundle=" + h1, []string{`<option value="` + h1 + `" selected>`}},
	} {
		r := c.get(tc.path)
		if r.code != http.StatusOK {
			t.Errorf("%s: HTTP %d", tc.path, r.code)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(r.body, w) {
				t.Errorf("%s does not show %q", tc.path, w)
			}
		}
	}
	// The live region alone, for htmx.
	r := c.get("/console/rollouts/r1?part=live")
	if !strings.HasPrefix(r.body, `<div id="live"`) || strings.Contains(r.body, "<html") || strings.Contains(r.body, "Pause…") {
		t.Errorf("live part: %.200s", r.body)
	}
	// The controls: nothing while the state shown is current, new ones
	// when it changed.
	if r := c.get("/console/rollouts/r1?part=controls&state=running"); r.code != http.StatusNoContent {
		t.Errorf("controls with the current state: %d", r.code)
	}
	r = c.get("/console/rollouts/r1?part=controls&state=paused")
	if r.code != http.StatusOK || !strings.HasPrefix(r.body, `<div id="controls"`) || !strings.Contains(r.body, "Pause…") {
		t.Errorf("controls after a state change: %d %.200s", r.code, r.body)
	}
}

func TestDevicePagination(t *testing.T) {
	f := newFixture(t)
	for i := range 120 {
		f.device("gw-"+pad3(i), map[string]string{"site": "north"}, nil)
	}
	c := f.client().login()
	r := c.get("/console/devices")
	if n := strings.Count(r.body, `href="/console/devices/gw-`); n != 50 {
		t.Fatalf("page 1 lists %d devices, want 50", n)
	}
	if !strings.Contains(r.body, "Devices 1–50 of 120 matching") || !strings.Contains(r.body, `href="/console/devices?page=2"`) || strings.Contains(r.body, `rel="prev"`) {
		t.Fatal("page 1: no link to page 2, or one to a page before")
	}
	r = c.get("/console/devices?page=3")
	if n := strings.Count(r.body, `href="/console/devices/gw-`); n != 20 || !strings.Contains(r.body, "gw-119") || strings.Contains(r.body, "gw-099") {
		t.Fatalf("page 3 lists %d devices", n)
	}
	if !strings.Contains(r.body, `href="/console/devices?page=2" rel="prev"`) || strings.Contains(r.body, `rel="next"`) {
		t.Fatal("page 3: links")
	}
	// Beyond the last page: the last page.
	if r := c.get("/console/devices?page=99"); !strings.Contains(r.body, "Page 3 of 3") {
		t.Fatal("page 99 is not shown as the last page")
	}
	// The filter survives paging.
	r = c.get("/console/devices?selector=site%3Dnorth&q=gw-1")
	if !strings.Contains(r.body, "Devices 1–20 of 20 matching") {
		t.Fatalf("filtered: %s", regexp.MustCompile(`Devices[^<]*`).FindString(r.body))
	}
}

func keyID(t *testing.T, f *fixture) string {
	bs, err := f.svc.Registry().Bundles()
	if err != nil || len(bs) == 0 || bs[0].KeyID == "" {
		t.Fatalf("bundles %v: %v", bs, err)
	}
	return bs[0].KeyID
}

func pad3(i int) string {
	s := "00" + string(rune('0'+i/100%10)) + string(rune('0'+i/10%10)) + string(rune('0'+i%10))
	return s[len(s)-3:]
}

// TestTelemetryGapsAndSaturatedTotals: a device whose telemetry sequence
// skipped reports shows them missing on its page and in an overview
// alert; and the overview's fleet-wide class totals saturate instead of
// wrapping (a device at 2^64-1 "fault" and another with 12 showed "11").
func TestTelemetryGapsAndSaturatedTotals(t *testing.T) {
	f := newFixture(t)
	f.device("gw-1", nil, map[string]uint64{"fault": math.MaxUint64})
	f.device("gw-2", nil, map[string]uint64{"fault": 12})
	for _, seq := range []uint64{2, 5} { // after its seq 1: 3 and 4 never arrive
		f.deliver(f.svc.Topics().Telemetry("gw-2"), &wire.Telemetry{Device: "gw-2", Session: 1, Seq: seq, From: 1, To: 2, Predictions: 12, Counts: map[string]uint64{"fault": 12}})
	}
	c := f.client().login()
	if r := c.get("/console/devices/gw-2"); !strings.Contains(r.body, "2 reports missing") {
		t.Errorf("gw-2's page does not show its 2 missing reports")
	}
	r := c.get("/console/")
	if !strings.Contains(r.body, "1 device has reports missing from its telemetry") || !strings.Contains(r.body, "gw-2") {
		t.Errorf("the overview has no alert about gw-2's missing reports")
	}
	if !strings.Contains(r.body, "18,446,744,073,709,551,615") && !strings.Contains(r.body, "18446744073709551615") {
		t.Errorf("the overview's fault total is not saturated at 2^64-1")
	}
	rec := httptest.NewRecorder()
	f.svc.MetricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, want := range []string{`trit_fleet_device_telemetry_missing{device="gw-2"} 2`, "trit_fleet_telemetry_missing 2"} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}
