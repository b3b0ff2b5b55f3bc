package console

import (
	"crypto/ed25519"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trit-iot/trit/fleet"
	"github.com/trit-iot/trit/fleet/fleettest"
	"github.com/trit-iot/trit/inference/bundle"
	"github.com/trit-iot/trit/inference/bundle/bundletest"
	"github.com/trit-iot/trit/store"
	"github.com/trit-iot/trit/wire"
)

const testToken = "console-test-token-0123456789"

// nopPublisher stands for the broker: the console never publishes.
type nopPublisher struct{}

func (nopPublisher) Publish(string, byte, bool, []byte) error { return nil }

// clock is a settable clock shared by the service and the console.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// fixture is a real fleet service over a temporary store with the console
// mounted by fleet's own Handler (the registration under test), served by
// httptest.
type fixture struct {
	t       testing.TB
	db      *store.DB
	svc     *fleet.Service
	console *Console
	srv     *httptest.Server
	clk     *clock
	release ed25519.PrivateKey
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	return newFixtureNamed(t, "test", 0.03)
}

// newFixtureNamed is newFixture for the fleet named fleetName, with a drift
// alert threshold.
func newFixtureNamed(t testing.TB, fleetName string, driftAlert float64) *fixture {
	t.Helper()
	return newFixtureWith(t, func(o *fleet.Options) { o.DriftAlert = driftAlert }, fleetName)
}

// newFixtureWith is newFixture with the service's options tweaked (and
// the fleet named name[0], default "test").
func newFixtureWith(t testing.TB, tweak func(*fleet.Options), name ...string) *fixture {
	t.Helper()
	fleetName := "test"
	if len(name) > 0 {
		fleetName = name[0]
	}
	db, err := store.Open(filepath.Join(t.TempDir(), "fleet.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	f := &fixture{t: t, db: db, clk: &clock{t: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}, release: fleettest.Key(1)}
	ks, err := bundle.NewKeySet(f.release.Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	reg := fleet.NewRegistry(db, ks, 0, f.clk.now)
	opt := &fleet.Options{Now: f.clk.now, Logger: quiet, DriftAlert: 0.03}
	tweak(opt)
	f.svc, err = fleet.NewService(db, reg, fleetName, nopPublisher{}, fleettest.Key(2), opt)
	if err != nil {
		t.Fatal(err)
	}
	// The console as the server mounts it, but on the test clock.
	f.console, err = New(&Options{Service: f.svc, DB: db, Token: testToken, Logger: quiet, Now: f.clk.now})
	if err != nil {
		t.Fatal(err)
	}
	h := http.NewServeMux()
	f.console.Mount(h)
	f.srv = httptest.NewServer(h)
	t.Cleanup(f.srv.Close)
	return f
}

// deliver hands a device message to the service, as the broker would.
func (f *fixture) deliver(topic string, m interface{ Marshal() ([]byte, error) }) {
	f.t.Helper()
	raw, err := m.Marshal()
	if err != nil {
		f.t.Fatal(err)
	}
	f.svc.Deliver(topic, raw)
	f.svc.Drain()
}

// device makes a device report its state (online) and, if counts is not
// nil, one telemetry interval.
func (f *fixture) device(id string, labels map[string]string, counts map[string]uint64) {
	f.t.Helper()
	f.deliver(f.svc.Topics().State(id), &wire.State{Device: id, Session: 1, Online: true, Labels: labels, Health: "ok",
		AgentVersion: "0.2.0", Sensors: []wire.SensorHealth{{Sensor: "vib", State: "ok"}}})
	if counts != nil {
		var n uint64
		var last string
		for k, v := range counts {
			n += v
			last = k
		}
		f.deliver(f.svc.Topics().Telemetry(id), &wire.Telemetry{Device: id, Session: 1, Seq: 1, From: 1, To: 2, Predictions: n, Counts: counts,
			Last: &wire.Prediction{Class: last, Time: f.clk.now().UnixMilli()}})
	}
}

// bundle registers release of model id, with info (nil: none), and
// returns its hash.
func (f *fixture) bundle(id string, release uint64, info map[string]string) string {
	f.t.Helper()
	spec, err := bundletest.Spec(release, 3, 64, []string{"normal", "fault"})
	if err != nil {
		f.t.Fatal(err)
	}
	raw, err := bundle.Encode(&bundle.Bundle{Header: bundle.Header{ModelID: id, Release: release, CreatedAt: f.clk.now().Add(-time.Hour)},
		Compat: bundle.Compat{MinAgentVersion: "0.0.0"}, Spec: spec, Info: info})
	if err != nil {
		f.t.Fatal(err)
	}
	signed, err := bundle.Sign(raw, f.release)
	if err != nil {
		f.t.Fatal(err)
	}
	b, err := f.svc.Registry().Add(signed)
	if err != nil {
		f.t.Fatal(err)
	}
	return b.Hash
}

// client is a browser: a cookie jar, no automatic redirects, and the
// CSRF token of the last page that had one.
type client struct {
	f    *fixture
	c    *http.Client
	csrf string
}

func (f *fixture) client() *client {
	jar, _ := cookiejar.New(nil)
	return &client{f: f, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// response is what a request returned.
type response struct {
	code   int
	header http.Header
	body   string
}

func (c *client) do(req *http.Request) response {
	c.f.t.Helper()
	resp, err := c.c.Do(req)
	if err != nil {
		c.f.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if m := csrfRE.FindStringSubmatch(string(raw)); m != nil {
		c.csrf = m[1]
	}
	return response{resp.StatusCode, resp.Header, string(raw)}
}

func (c *client) get(path string, header ...string) response {
	c.f.t.Helper()
	req, err := http.NewRequest("GET", c.f.srv.URL+path, nil)
	if err != nil {
		c.f.t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return c.do(req)
}

// post sends a form; header pairs are added to the request.
func (c *client) post(path string, form url.Values, header ...string) response {
	c.f.t.Helper()
	req, err := http.NewRequest("POST", c.f.srv.URL+path, strings.NewReader(form.Encode()))
	if err != nil {
		c.f.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return c.do(req)
}

// login signs the client in and returns it.
func (c *client) login() *client {
	c.f.t.Helper()
	if r := c.get("/console/login"); r.code != http.StatusOK {
		c.f.t.Fatalf("login page: %d", r.code)
	}
	r := c.post("/console/login", url.Values{"csrf": {c.csrf}, "token": {testToken}})
	if r.code != http.StatusSeeOther || r.header.Get("Location") != "/console/" {
		c.f.t.Fatalf("login: %d %s", r.code, r.header.Get("Location"))
	}
	if r := c.get("/console/"); r.code != http.StatusOK {
		c.f.t.Fatalf("overview after login: %d", r.code)
	}
	return c
}

// cookie returns the Set-Cookie of name in a response.
func cookie(r response, name string) *http.Cookie {
	for _, ck := range (&http.Response{Header: r.header}).Cookies() {
		if ck.Name == name {
			return ck
		}
	}
	return nil
}
