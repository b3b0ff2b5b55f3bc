package console

import (
	"crypto/ed25519"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet"
	"github.com/trit-iot/trit/fleet/access"
	"github.com/trit-iot/trit/fleet/fleettest"
	"github.com/trit-iot/trit/inference/bundle"
	"github.com/trit-iot/trit/store"
	"github.com/trit-iot/trit/store/postgres"
	"github.com/trit-iot/trit/store/postgres/pgtest"
)

// The package's PostgreSQL server starts with the first test that needs
// it; TestMain stops it.
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// replica is one trit-fleet's service and console on db, served by
// httptest: what a replica (or a restarted process) is to a browser.
func replica(t *testing.T, db store.Database, clk *clock) *fixture {
	t.Helper()
	return replicaWith(t, db, clk, testToken)
}

// replicaWith is replica with token as its api.token_file's.
func replicaWith(t *testing.T, db store.Database, clk *clock, token string) *fixture {
	t.Helper()
	ks, err := bundle.NewKeySet(fleettest.Key(1).Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	svc, err := fleet.NewService(db, fleet.NewRegistry(db, ks, 0, clk.now), "test", nopPublisher{}, fleettest.Key(2), &fleet.Options{Now: clk.now, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	con, err := New(&Options{Service: svc, DB: db, Token: token, Logger: quiet, Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(con)
	t.Cleanup(srv.Close)
	return &fixture{t: t, svc: svc, console: con, srv: srv, clk: clk}
}

// on is the browser c talking to replica f: the same cookie jar (cookies
// are per host, not per port).
func on(f *fixture, c *client) *client { return &client{f: f, c: c.c, csrf: c.csrf} }

// signIn signs a new browser in on f with token.
func signIn(t *testing.T, f *fixture, token string) *client {
	t.Helper()
	c := f.client()
	c.get("/console/login")
	if r := c.post("/console/login", url.Values{"csrf": {c.csrf}, "token": {token}}); r.code != http.StatusSeeOther || cookie(r, sessionCookie) == nil {
		t.Fatalf("sign-in: %d", r.code)
	}
	return c
}

// signedIn reports whether c's session opens a page on its replica, and
// fails on anything but the page or the way to the login page.
func signedIn(t *testing.T, c *client, who string) bool {
	t.Helper()
	r := c.get("/console/devices")
	switch {
	case r.code == http.StatusOK && strings.Contains(r.body, "Sign out") && strings.Contains(r.body, who):
		return true
	case r.code == http.StatusSeeOther && strings.HasPrefix(r.header.Get("Location"), "/console/login"):
		return false
	}
	t.Fatalf("GET /console/devices: %d %q", r.code, r.header.Get("Location"))
	return false
}

// sessionCookieOf returns the browser's session cookie.
func sessionCookieOf(t *testing.T, c *client) string {
	for _, ck := range c.c.Jar.Cookies(mustURL(t, c.f.srv.URL+"/console/")) {
		if ck.Name == sessionCookie {
			return ck.Value
		}
	}
	t.Fatal("no session cookie")
	return ""
}

// TestSessionsSurviveRestartAndReplicas: a console session lives in the
// fleet's store, so it works on another replica on the same database and
// after its own replica restarts (bbolt: the file closed and reopened;
// PostgreSQL: two replicas at once, and one restarted); the store holds
// the hash of the cookie, never the cookie; signing out on one replica and
// disabling the operator end it on every replica.
func TestSessionsSurviveRestartAndReplicas(t *testing.T) {
	t.Run("bbolt", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "fleet.db")
		open := func(t *testing.T) store.Database {
			db, err := store.Open(path, nil)
			if err != nil {
				t.Fatal(err)
			}
			return db
		}
		testSessionsOnOneStore(t, open, false)
	})
	t.Run("PostgreSQL", func(t *testing.T) {
		dsn := pgtest.Database(t)
		open := func(t *testing.T) store.Database {
			db, err := postgres.Open(dsn, nil)
			if err != nil {
				t.Fatal(err)
			}
			return db
		}
		testSessionsOnOneStore(t, open, true)
	})
}

// testSessionsOnOneStore runs the scenario on the stores open returns
// (all on one database); shared: two may be open at once.
func testSessionsOnOneStore(t *testing.T, open func(*testing.T) store.Database, shared bool) {
	clk := &clock{t: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}
	db := open(t)
	t.Cleanup(func() { db.Close() })
	ops := &access.Operators{DB: db, Now: clk.now}
	alice, err := ops.Add(api.OperatorRequest{Name: "alice", Role: "operator"}, "test")
	if err != nil {
		t.Fatal(err)
	}
	a := replica(t, db, clk)
	c := signIn(t, a, alice.Token)
	if !signedIn(t, c, "alice") {
		t.Fatal("not signed in on the replica that made the session")
	}
	id := sessionCookieOf(t, c)

	// Another replica on the same database, at the same time.
	var b *fixture
	if shared {
		db2 := open(t)
		t.Cleanup(func() { db2.Close() })
		b = replica(t, db2, clk)
		if !signedIn(t, on(b, c), "alice") {
			t.Fatal("the session does not work on the other replica")
		}
	}

	// The first replica restarts: its server and, for bbolt, its store
	// are closed; a new process's console opens the same database.
	a.srv.Close()
	if !shared {
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		db = open(t)
		ops.DB = db
	}
	a2 := replica(t, db, clk)
	if b == nil {
		b = a2
	}
	ca := on(a2, c)
	if !signedIn(t, ca, "alice") {
		t.Fatal("the session does not survive the replica's restart")
	}

	// The store keeps the cookie's hash, never the cookie.
	var keys []string
	err = db.ForEach(store.FleetConsoleSessions, func(key string, raw []byte) error {
		keys = append(keys, key)
		if strings.Contains(key, id) || strings.Contains(string(raw), id) {
			t.Errorf("the session cookie is stored: %s %s", key, raw)
		}
		return nil
	})
	if err != nil || len(keys) != 1 || keys[0] != store.ConsoleSessionKey(id) {
		t.Fatalf("stored sessions %v (%v), want the one under the cookie's SHA-256", keys, err)
	}

	// Signing out on one replica ends the session on the other.
	if r := ca.post("/console/logout", url.Values{"csrf": {ca.csrf}}); r.code != http.StatusSeeOther {
		t.Fatalf("sign-out: %d", r.code)
	}
	replay := b.client()
	replay.c.Jar.SetCookies(mustURL(t, b.srv.URL+"/console/"), []*http.Cookie{{Name: sessionCookie, Value: id, Path: "/console/"}})
	if signedIn(t, replay, "alice") {
		t.Fatal("a session signed out on one replica still works on the other")
	}

	// Disabling the operator ends its sessions everywhere, for good:
	// enabling it again does not bring them back.
	c = signIn(t, a2, alice.Token)
	id = sessionCookieOf(t, c)
	if !signedIn(t, on(b, c), "alice") {
		t.Fatal("the new session does not work on the other replica")
	}
	if _, err := ops.SetDisabled("alice", true); err != nil {
		t.Fatal(err)
	}
	// Ended in the store at once, not only refused at the next request.
	err = db.View(func(tx store.Tx) error { _, err := store.GetConsoleSession(tx, id); return err })
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the disabled operator's session in the store: %v, want ErrNotFound", err)
	}
	if signedIn(t, on(b, c), "alice") || signedIn(t, on(a2, c), "alice") {
		t.Fatal("a disabled operator's session still works")
	}
	if _, err := ops.SetDisabled("alice", false); err != nil {
		t.Fatal(err)
	}
	if signedIn(t, on(b, c), "alice") {
		t.Fatal("enabling the operator again revived its ended session")
	}
}

// adminCookie starts a session of the api.token_file's admin on c and
// returns its cookie (the benchmarks' browser).
func adminCookie(tb testing.TB, c *Console) *http.Cookie {
	tb.Helper()
	id, err := c.sessions.create(access.Principal{Name: access.TokenFileOperator, Role: access.RoleAdmin})
	if err != nil {
		tb.Fatal(err)
	}
	return &http.Cookie{Name: sessionCookie, Value: id}
}

// A console session ends with the credential that signed it in (issue
// 38: replacing api.token_file and restarting left its sessions with
// admin rights for up to 12 hours): after a restart with another token
// file, the old token's session is refused — its pages and its actions —
// while an operator's session goes on; an operator whose credential is
// replaced without its sessions being deleted (another path, a replica's
// race) is signed out too.
func TestSessionEndsWithItsCredential(t *testing.T) {
	clk := &clock{t: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}
	path := filepath.Join(t.TempDir(), "fleet.db")
	db, err := store.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ops := &access.Operators{DB: db, Now: clk.now}
	alice, err := ops.Add(api.OperatorRequest{Name: "alice", Role: "operator"}, "test")
	if err != nil {
		t.Fatal(err)
	}
	a := replicaWith(t, db, clk, testToken)
	old, al := signIn(t, a, testToken), signIn(t, a, alice.Token)
	if !signedIn(t, old, access.TokenFileOperator) || !signedIn(t, al, "alice") {
		t.Fatal("not signed in")
	}
	oldCSRF := old.csrf
	a.srv.Close()

	b := replicaWith(t, db, clk, "a-new-api-token-file-0123456789")
	oldOnB, alOnB := on(b, old), on(b, al)
	oldOnB.csrf = oldCSRF
	if r := oldOnB.post("/console/rollouts/r1/pause", url.Values{"csrf": {oldCSRF}}); r.code != http.StatusForbidden || !strings.Contains(r.body, "session has ended") {
		t.Fatalf("an action in the old token's session after the token file was replaced: %d", r.code)
	}
	if signedIn(t, oldOnB, access.TokenFileOperator) {
		t.Fatal("the old token's session still opens pages")
	}
	if !signedIn(t, alOnB, "alice") {
		t.Fatal("alice's session ended with the token file's")
	}
	if !signedIn(t, signIn(t, b, "a-new-api-token-file-0123456789"), access.TokenFileOperator) {
		t.Fatal("the new token does not sign in")
	}
	// alice's credential replaced in the store, her sessions left.
	if err := db.Update(func(tx store.Tx) error {
		_, err := store.UpdateOperator(tx, "alice", func(o *store.Operator) error {
			o.TokenHash = strings.Repeat("ab", 32)
			return nil
		})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if signedIn(t, alOnB, "alice") {
		t.Fatal("alice's session outlives her credential")
	}
}
