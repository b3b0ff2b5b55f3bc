package server

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet/access"
	"github.com/trit-iot/trit/store"
)

// Behind a trusted proxy the client is read from X-Forwarded-For, so ten
// wrong tokens from one client no longer lock everyone behind the proxy
// out (issue 38): another client's right token is answered, and so is
// the attacker's own operator token; the audit trail names the client.
// From a peer that is not trusted the header changes nothing.
func TestTrustedProxy(t *testing.T) {
	nets, err := parseTrustedProxies([]string{"127.0.0.1", "10.0.0.0/8"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := parseTrustedProxies([]string{"proxy.example"}); err == nil {
		t.Fatal("a host name is accepted as a trusted proxy")
	}
	f := newFixture(t)
	h, err := Handler(f.svc, testToken)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(withTrustedProxies(h, nets))
	defer srv.Close()
	ops := &access.Operators{DB: f.db, Now: f.clk.now}
	vera, err := ops.Add(api.OperatorRequest{Name: "vera", Role: "viewer"}, "test")
	if err != nil {
		t.Fatal(err)
	}
	get := func(token, xff string) int {
		t.Helper()
		req, _ := http.NewRequest("GET", srv.URL+"/v1/devices", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		if xff != "" {
			req.Header.Set("X-Forwarded-For", xff)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for range 20 {
		get("wrong-token-wrong-token", "198.51.100.7, 10.1.2.3") // the client, then an inner proxy
	}
	if code := get("wrong-token-wrong-token", "198.51.100.7"); code != http.StatusTooManyRequests {
		t.Fatalf("the guessing client: %d, want 429", code)
	}
	if code := get(testToken, "198.51.100.8"); code != http.StatusOK {
		t.Fatalf("another client behind the proxy: %d, want 200", code)
	}
	if code := get(vera.Token, "198.51.100.7"); code != http.StatusOK {
		t.Fatalf("an operator's token from the guessing client: %d, want 200", code)
	}
	// A forged header from a client that is not a proxy is ignored:
	// the handler without the proxy setting sees the peer.
	r := httptest.NewRequest("GET", "/", nil)
	r.RemoteAddr = "192.0.2.9:5555"
	r.Header.Set("X-Forwarded-For", "198.51.100.99")
	if _, ok := clientAddr(r, nets); ok {
		t.Fatal("X-Forwarded-For from an untrusted peer was believed")
	}
	r.RemoteAddr = "10.9.9.9:1"
	r.Header.Set("X-Forwarded-For", "not-an-address, 198.51.100.5, 10.0.0.7")
	if a, ok := clientAddr(r, nets); !ok || a.String() != "198.51.100.5" {
		t.Fatalf("client through two proxies: %v %v", a, ok)
	}
	// The audit trail names the client.
	code, body := 0, ""
	{
		req, _ := http.NewRequest("POST", srv.URL+"/v1/rollouts/r1/abort", strings.NewReader("{}"))
		req.Header.Set("Authorization", "Bearer "+vera.Token)
		req.Header.Set("X-Forwarded-For", "198.51.100.42")
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		code = resp.StatusCode
		resp.Body.Close()
	}
	es, _ := f.svc.Audit().Entries(fleetAuditQueryAll())
	for _, e := range es {
		if e.Who == "vera" {
			body = e.Remote
		}
	}
	if code != http.StatusForbidden || body != "198.51.100.42" {
		t.Fatalf("the refused abort: %d, audited from %q", code, body)
	}
}

func fleetAuditQueryAll() store.AuditQuery { return store.AuditQuery{} }
