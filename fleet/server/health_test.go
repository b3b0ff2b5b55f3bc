package server

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

type fakeBroker struct{ up atomic.Bool }

func (b *fakeBroker) Connected() bool { return b.up.Load() }

// TestUnavailableDatabase: while the fleet's PostgreSQL is stopped, the
// API answers 503 with Retry-After and a plain message (not the driver's
// error), /readyz says why it is not ready, /healthz stays 200; once the
// database is back, both answer again. /readyz also follows the broker
// connection. Neither health route needs a token.
func TestUnavailableDatabase(t *testing.T) {
	pg, db := stoppablePostgres(t)
	f := newFixtureOn(t, db)
	h, err := Handler(f.svc, testToken)
	if err != nil {
		t.Fatal(err)
	}
	broker := &fakeBroker{}
	broker.up.Store(true)
	srv := httptest.NewServer(withHealth(h, db, broker))
	defer srv.Close()
	get := func(path string, token bool) (int, string, http.Header) {
		t.Helper()
		req, _ := http.NewRequest("GET", srv.URL+path, nil)
		if token {
			req.Header.Set("Authorization", "Bearer "+testToken)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), resp.Header
	}
	expect := func(path string, token bool, status int, text string) http.Header {
		t.Helper()
		got, body, hdr := get(path, token)
		if got != status || !strings.Contains(body, text) {
			t.Fatalf("GET %s: %d %q, want %d with %q", path, got, body, status, text)
		}
		return hdr
	}
	expect("/healthz", false, 200, "ok")
	expect("/readyz", false, 200, "ready")
	expect("/v1/devices", true, 200, "")

	pg.Halt()
	hdr := expect("/v1/devices", true, 503, "database cannot be reached")
	if hdr.Get("Retry-After") == "" {
		t.Error("503 without Retry-After")
	}
	if _, body, _ := get("/v1/devices", true); strings.Contains(body, "dial") || strings.Contains(body, "127.0.0.1") || strings.Contains(body, "SQLSTATE") {
		t.Errorf("the 503 shows the driver's error: %s", body)
	}
	expect("/readyz", false, 503, "the database does not answer")
	expect("/healthz", false, 200, "ok")

	if err := pg.Resume(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if code, _, _ := get("/v1/devices", true); code == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the API did not answer again after PostgreSQL came back")
		}
		time.Sleep(50 * time.Millisecond)
	}
	expect("/readyz", false, 200, "ready")
	broker.up.Store(false)
	expect("/readyz", false, 503, "not connected to the broker")
}
