package fleet

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

const testToken = "0123456789abcdef-test-token"

func apiServer(t *testing.T, f *fixture) *httptest.Server {
	t.Helper()
	h, err := f.svc.Handler(testToken)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func call(t *testing.T, srv *httptest.Server, method, path, token string, body []byte) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

func TestAPI(t *testing.T) {
	f := newFixture(t)
	srv := apiServer(t, f)
	f.online(t, "gw-1", map[string]string{"site": "north"})

	if code, _ := call(t, srv, "GET", "/v1/devices", "", nil); code != http.StatusUnauthorized {
		t.Fatalf("no token: %d", code)
	}
	if code, _ := call(t, srv, "GET", "/v1/devices", "wrong-token-wrong-token", nil); code != http.StatusUnauthorized {
		t.Fatalf("wrong token: %d", code)
	}
	code, body := call(t, srv, "GET", "/v1/devices", testToken, nil)
	var devices []Device
	if code != 200 || json.Unmarshal(body, &devices) != nil || len(devices) != 1 || devices[0].ID != "gw-1" {
		t.Fatalf("devices: %d %s", code, body)
	}
	if code, _ := call(t, srv, "GET", "/v1/devices/gw-9", testToken, nil); code != http.StatusNotFound {
		t.Fatalf("unknown device: %d", code)
	}

	code, body = call(t, srv, "POST", "/v1/bundles", testToken, signedBundle(t, "vib", 1, f.release))
	var info BundleInfo
	if code != 200 || json.Unmarshal(body, &info) != nil || info.Release != 1 {
		t.Fatalf("upload: %d %s", code, body)
	}
	if code, body := call(t, srv, "POST", "/v1/bundles", testToken, signedBundle(t, "vib", 1, testKey(7))); code != http.StatusBadRequest || !strings.Contains(string(body), "trusted") {
		t.Fatalf("untrusted bundle: %d %s", code, body)
	}
	if code, _ := call(t, srv, "POST", "/v1/bundles", testToken, bytes.Repeat([]byte("x"), maxRequestBody+1)); code != http.StatusBadRequest {
		t.Fatalf("oversized upload: %d", code)
	}

	req := `{"id":"r1","bundle":"` + info.Hash + `","selector":{"site":"north"}}`
	if code, body := call(t, srv, "POST", "/v1/rollouts", testToken, []byte(req)); code != 200 {
		t.Fatalf("create rollout: %d %s", code, body)
	}
	if code, body := call(t, srv, "POST", "/v1/rollouts", testToken, []byte(`{"id":"r2","bundle":"`+info.Hash+`","devices":["gw-1"],"colour":"red"}`)); code != http.StatusBadRequest || !strings.Contains(string(body), "colour") {
		t.Fatalf("unknown field: %d %s", code, body)
	}
	if code, _ := call(t, srv, "POST", "/v1/rollouts/r1/pause", testToken, []byte(`{"reason":"lunch"}`)); code != 200 {
		t.Fatalf("pause: %d", code)
	}
	code, body = call(t, srv, "GET", "/v1/rollouts/r1", testToken, nil)
	var r Rollout
	if code != 200 || json.Unmarshal(body, &r) != nil || r.State != RolloutPaused || r.Reason != "lunch" {
		t.Fatalf("status: %d %s", code, body)
	}
	if code, _ := call(t, srv, "POST", "/v1/rollouts/r1/pause", testToken, nil); code != http.StatusBadRequest {
		t.Fatalf("pausing twice: %d", code)
	}
	if code, _ := call(t, srv, "POST", "/v1/rollouts/r1/rollback", testToken, []byte(`{"id":"r1-back"}`)); code != http.StatusNotFound {
		t.Fatalf("rollback without an earlier release: %d", code)
	}
	code, body = call(t, srv, "GET", "/metrics", "", nil)
	if code != 200 || !strings.Contains(string(body), `trit_fleet_devices{online="true"} 1`) || !strings.Contains(string(body), `trit_fleet_rollout_devices{rollout="r1",state="pending"} 1`) {
		t.Fatalf("metrics: %d\n%s", code, body)
	}
}

func TestHandlerNeedsAToken(t *testing.T) {
	f := newFixture(t)
	if _, err := f.svc.Handler("short"); err == nil {
		t.Fatal("a short token was accepted")
	}
}
