package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet"
	"github.com/trit-iot/trit/fleet/fault"
	"github.com/trit-iot/trit/fleet/fleettest"
	"github.com/trit-iot/trit/fleet/inventory"
	"github.com/trit-iot/trit/fleet/rollout"
	"github.com/trit-iot/trit/store"
	"github.com/trit-iot/trit/wire"
)

const testToken = "0123456789abcdef-test-token"

func apiServer(t *testing.T, f *fixture) *httptest.Server {
	t.Helper()
	h, err := Handler(f.svc, testToken)
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
	var devices []inventory.Device
	if code != 200 || json.Unmarshal(body, &devices) != nil || len(devices) != 1 || devices[0].ID != "gw-1" {
		t.Fatalf("devices: %d %s", code, body)
	}
	if code, _ := call(t, srv, "GET", "/v1/devices/gw-9", testToken, nil); code != http.StatusNotFound {
		t.Fatalf("unknown device: %d", code)
	}

	code, body = call(t, srv, "POST", "/v1/bundles", testToken, fleettest.SignedBundle(t, "vib", 1, f.release))
	var info api.BundleInfo
	if code != 200 || json.Unmarshal(body, &info) != nil || info.Release != 1 {
		t.Fatalf("upload: %d %s", code, body)
	}
	if code, body := call(t, srv, "POST", "/v1/bundles", testToken, fleettest.SignedBundle(t, "vib", 1, fleettest.Key(7))); code != http.StatusBadRequest || !strings.Contains(string(body), "trusted") {
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
	var r rollout.Rollout
	if code != 200 || json.Unmarshal(body, &r) != nil || r.State != api.RolloutPaused || r.Reason != "lunch" {
		t.Fatalf("status: %d %s", code, body)
	}
	if code, _ := call(t, srv, "POST", "/v1/rollouts/r1/pause", testToken, nil); code != http.StatusBadRequest {
		t.Fatalf("pausing twice: %d", code)
	}
	if code, _ := call(t, srv, "POST", "/v1/rollouts/r1/rollback", testToken, []byte(`{"id":"r1-back"}`)); code != http.StatusNotFound {
		t.Fatalf("rollback without an earlier release: %d", code)
	}
	if code, _ := call(t, srv, "GET", "/metrics", "", nil); code != http.StatusUnauthorized {
		t.Fatalf("metrics without the token: %d", code)
	}
	code, body = call(t, srv, "GET", "/metrics", testToken, nil)
	if code != 200 || !strings.Contains(string(body), `trit_fleet_devices{online="true"} 1`) || !strings.Contains(string(body), `trit_fleet_rollout_devices{rollout="r1",state="pending"} 1`) {
		t.Fatalf("metrics: %d\n%s", code, body)
	}
}

func TestHandlerNeedsAToken(t *testing.T) {
	f := newFixture(t)
	if _, err := Handler(f.svc, "short"); err == nil {
		t.Fatal("a short token was accepted")
	}
}

// Bad input is a 400 with a message saying what is wrong — a body with
// data after its JSON object, an ID too long or malformed for its kind, an
// empty or malformed bundle hash — and never reaches the log whole.
func TestAPIRefusesBadInput(t *testing.T) {
	var logs bytes.Buffer
	f := newFixture(t, func(o *fleet.Options) { o.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
	srv := apiServer(t, f)
	f.online(t, "gw-1", nil)
	hash := f.addBundle(t, 1)
	long := strings.Repeat("x", 40<<10)
	for _, c := range []struct {
		method, path, body, want string
	}{
		{"POST", "/v1/rollouts", `{"id":"r1","bundle":"` + hash + `","devices":["gw-1"]} trailing`, "data after the JSON object"},
		{"POST", "/v1/rollouts", `{"id":"r1","bundle":"` + hash + `","devices":["gw-1"]}{"id":"r2"}`, "data after the JSON object"},
		{"POST", "/v1/rollouts", `{"id":"r1","bundle":"","devices":["gw-1"]}`, "SHA-256"},
		{"POST", "/v1/rollouts", `{"id":"r1","bundle":"xyz","devices":["gw-1"]}`, "SHA-256"},
		{"POST", "/v1/rollouts", `{"id":"` + long + `","bundle":"` + hash + `","devices":["gw-1"]}`, "rollout ID"},
		{"GET", "/v1/devices/" + long, "", "device ID"},
		{"DELETE", "/v1/devices/" + long, "", "device ID"},
		{"POST", "/v1/devices/" + long + "/reset", "", "device ID"},
		{"GET", "/v1/rollouts/" + long, "", "rollout ID"},
		{"POST", "/v1/rollouts/" + long + "/pause", "", "rollout ID"},
		{"POST", "/v1/rollouts/" + long + "/rollback", `{"id":"b"}`, "rollout ID"},
		{"GET", "/v1/train/" + long, "", "training job ID"},
		{"POST", "/v1/rollouts/r0/pause", `{"reason":"` + strings.Repeat("r", 2000) + `"}`, "reason"},
	} {
		code, body := call(t, srv, c.method, c.path, testToken, []byte(c.body))
		if code != http.StatusBadRequest || !strings.Contains(string(body), c.want) || len(body) > 2048 {
			t.Errorf("%s %.60s: %d %.200s, want 400 saying %q", c.method, c.path, code, body, c.want)
		}
	}
	for _, line := range strings.Split(logs.String(), "\n") {
		if len(line) > 2*fault.MaxLogField+512 {
			t.Errorf("log line of %d bytes: %.200s", len(line), line)
		}
	}
}

// Forget and reset through the API.
func TestAPIDevicesForgetReset(t *testing.T) {
	f := newFixture(t)
	srv := apiServer(t, f)
	f.online(t, "gw-1", nil)
	if code, body := call(t, srv, "POST", "/v1/devices/gw-1/reset", testToken, nil); code != 200 || !strings.Contains(string(body), `"session": 0`) {
		t.Fatalf("reset: %d %s", code, body)
	}
	if code, _ := call(t, srv, "DELETE", "/v1/devices/gw-1", testToken, nil); code != 200 {
		t.Fatalf("forget: %d", code)
	}
	if code, _ := call(t, srv, "DELETE", "/v1/devices/gw-1", testToken, nil); code != http.StatusNotFound {
		t.Fatalf("forget unknown: %d", code)
	}
	if code, _ := call(t, srv, "POST", "/v1/devices/gw-1/reset", testToken, nil); code != http.StatusNotFound {
		t.Fatalf("reset unknown: %d", code)
	}
	if code, _ := call(t, srv, "DELETE", "/v1/devices/gw-1", "", nil); code != http.StatusUnauthorized {
		t.Fatalf("forget without a token: %d", code)
	}
}

// GET /v1/backup streams a database copy that opens and holds the data.
func TestAPIBackup(t *testing.T) {
	f := newFixture(t)
	srv := apiServer(t, f)
	f.online(t, "gw-1", map[string]string{"site": "north"})
	// A labelled window: the backup holds it with the rest.
	hash := f.addBundle(t, 1)
	set := &wire.SampleSet{Model: &wire.ModelRef{ID: "vib", Release: 1, Bundle: hash}, Features: []string{"a", "b", "c", "d"},
		Samples: []wire.Sample{{Time: 1_700_000_000_000, X: []float32{1, 2, 3, 4}, Class: "normal", Margin: 0.1, Reason: wire.SampleLowMargin}}}
	if _, _, err := f.svc.StoreWindows("gw-1", set); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Label(api.LabelRequest{Labels: []api.Label{{Window: "gw-1/1700000000000", Label: "fault"}}}, "alice"); err != nil {
		t.Fatal(err)
	}
	if code, _ := call(t, srv, "GET", "/v1/backup", "", nil); code != http.StatusUnauthorized {
		t.Fatalf("backup without a token: %d", code)
	}
	code, raw := call(t, srv, "GET", "/v1/backup", testToken, nil)
	if code != 200 {
		t.Fatalf("backup: %d %s", code, raw)
	}
	out := filepath.Join(t.TempDir(), "fleet.db")
	if _, err := store.WriteBackup(out, bytes.NewReader(raw)); err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(out, &store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if d, err := inventory.DeviceByID(db, "gw-1"); err != nil || d.Labels["site"] != "north" {
		t.Fatalf("device in the backup: %v %+v", err, d)
	}
	var w api.FieldWindow
	if ok, err := db.Get(store.FleetWindows, "w/gw-1/1700000000000", &w); !ok || err != nil || w.Label != "fault" || w.LabelledBy != "alice" {
		t.Fatalf("labelled window in the backup: %v %v %+v", ok, err, w)
	}
}

// brokenWriter is a client that goes away after taking after bytes: every
// write after that fails.
type brokenWriter struct {
	header http.Header
	after  int
}

var errBrokenPipe = errors.New("broken pipe")

func (w *brokenWriter) Header() http.Header { return w.header }
func (w *brokenWriter) WriteHeader(int)     {}
func (w *brokenWriter) Write(b []byte) (int, error) {
	if len(b) <= w.after {
		w.after -= len(b)
		return len(b), nil
	}
	n := w.after
	w.after = 0
	return n, errBrokenPipe
}

// A GET /v1/backup whose copy fails is audited as failed, whether it
// failed on its first write (an error answered, too late: the copy's
// first write began the response's 200) or half-way (nothing more to
// answer) — not "ok" with the error in its detail.
func TestAPIBackupFailureAudited(t *testing.T) {
	f := newFixture(t)
	h, err := Handler(f.svc, testToken)
	if err != nil {
		t.Fatal(err)
	}
	for _, after := range []int{0, 4096} {
		req := httptest.NewRequest("GET", "/v1/backup", nil)
		req.Header.Set("Authorization", "Bearer "+testToken)
		h.ServeHTTP(&brokenWriter{header: http.Header{}, after: after}, req)
	}
	f.svc.Audit().Flush()
	es, err := f.svc.Audit().Entries(store.AuditQuery{Action: "backup"})
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 2 {
		t.Fatalf("%d backup records, want 2: %+v", len(es), es)
	}
	for i, e := range es {
		if e.Outcome != store.AuditFailed || e.Status != http.StatusInternalServerError || !strings.Contains(e.Detail, "broken pipe") {
			t.Errorf("backup %d: %s %d %q, want failed 500 with the error", i, e.Outcome, e.Status, e.Detail)
		}
	}
	if !strings.Contains(es[1].Detail, "failed after 4096 bytes") {
		t.Errorf("the backup that failed half-way: %q", es[1].Detail)
	}
}

// FuzzAPI sends arbitrary bodies and path segments to every route: the API
// answers each with a client error or success, never a 500 (a store error
// leaking through for bad input) and never a panic.
func FuzzAPI(f *testing.F) {
	fx := newFixture(f)
	h, err := Handler(fx.svc, testToken)
	if err != nil {
		f.Fatal(err)
	}
	routes := []struct{ method, path string }{
		{"GET", "/v1/devices/%s"}, {"DELETE", "/v1/devices/%s"}, {"POST", "/v1/devices/%s/reset"},
		{"POST", "/v1/rollouts"}, {"GET", "/v1/rollouts/%s"}, {"POST", "/v1/rollouts/%s/pause"},
		{"POST", "/v1/rollouts/%s/resume"}, {"POST", "/v1/rollouts/%s/abort"}, {"POST", "/v1/rollouts/%s/rollback"},
		{"POST", "/v1/bundles"}, {"POST", "/v1/train"}, {"GET", "/v1/train/%s"}, {"POST", "/v1/train/%s/cancel"},
		{"GET", "/v1/train/%s/bundle"},
	}
	f.Add(uint8(3), "r1", []byte(`{"id":"r1","bundle":"`+strings.Repeat("a", 64)+`","devices":["gw-1"]}`))
	f.Add(uint8(3), "", []byte(`{"id":"r1"} x`))
	f.Add(uint8(0), strings.Repeat("x", 300), []byte(nil))
	f.Add(uint8(4), strings.Repeat("r", 40<<10), []byte(nil))
	f.Add(uint8(3), "", []byte(`{"id":"r1","bundle":"","devices":["gw-1"]}`))
	f.Add(uint8(8), "r1", []byte(`{"id":"r2"}`))
	f.Add(uint8(10), "", []byte(`{"dataset":"a","model_id":"m","release":1,"p":-1}`))
	f.Fuzz(func(t *testing.T, route uint8, id string, body []byte) {
		rt := routes[int(route)%len(routes)]
		path := rt.path
		path = strings.Replace(path, "%s", url.PathEscape(id), 1)
		req := httptest.NewRequest(rt.method, path, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+testToken)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 && rec.Code != http.StatusNotImplemented {
			t.Fatalf("%s %s %q: %d %s", rt.method, path, body, rec.Code, rec.Body.String())
		}
	})
}

// GET /v1/bundles lists each bundle with the devices running it, and an
// error's message carries no "fleet: " for the client to print after its
// own "trit-fleet: ".
func TestAPIBundlesWithDevices(t *testing.T) {
	f := newFixture(t)
	srv := apiServer(t, f)
	h1, h2 := f.addBundle(t, 1), f.addBundle(t, 2)
	f.running(t, "gw-1", h1)
	f.running(t, "gw-2", h1)
	f.online(t, "gw-3", nil)
	code, body := call(t, srv, "GET", "/v1/bundles", testToken, nil)
	var bs []api.BundleEntry
	if code != 200 || json.Unmarshal(body, &bs) != nil || len(bs) != 2 {
		t.Fatalf("bundles: %d %s", code, body)
	}
	if bs[0].Hash != h2 || bs[0].Devices != 0 || bs[1].Hash != h1 || bs[1].Devices != 2 || bs[1].ModelID != "vib" {
		t.Fatalf("bundles: %+v", bs)
	}
	code, body = call(t, srv, "GET", "/v1/rollouts/nope", testToken, nil)
	var e api.Error
	if code != http.StatusNotFound || json.Unmarshal(body, &e) != nil || e.Error != "not found: rollout nope" {
		t.Fatalf("unknown rollout: %d %s", code, body)
	}
}

// The API listener serves the web console: / redirects to it, and its
// sign-in page answers without a token; the API's routes still need one.
func TestConsoleMounted(t *testing.T) {
	srv := apiServer(t, newFixture(t))
	c := srv.Client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := c.Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/console/" {
		t.Fatalf("GET /: %d to %q, want 303 to /console/", resp.StatusCode, resp.Header.Get("Location"))
	}
	resp, err = c.Get(srv.URL + "/console/login")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(page), "<form") {
		t.Fatalf("GET /console/login: %d\n%.500s", resp.StatusCode, page)
	}
	if code, _ := call(t, srv, "GET", "/v1/devices", "", nil); code != http.StatusUnauthorized {
		t.Fatalf("GET /v1/devices without a token beside the console: %d, want 401", code)
	}
}

// TestAPIListsDamagedRecords: one changed byte in one device record on
// disk (a flipped bit) made GET /v1/devices and /v1/bundles answer 500 and
// DELETE /v1/devices/{id} fail, so the record could not be removed through
// the API. Now the lists answer, with the damaged record as an entry that
// names its key, the record itself is a 409 that says what to do, and
// forgetting it works.
func TestAPIListsDamagedRecords(t *testing.T) {
	srv := apiServer(t, newFixtureOn(t, fleettest.DamagedStore(t, func(db *store.DB) {
		f := newFixtureOn(t, db)
		f.online(t, "gw-1", nil)
		f.online(t, "gw-2", map[string]string{"tag": "damage-me"})
		f.addBundle(t, 1)
	}, `"damage-me"`)))

	code, body := call(t, srv, "GET", "/v1/devices", testToken, nil)
	var ds []api.Device
	if code != http.StatusOK || json.Unmarshal(body, &ds) != nil || len(ds) != 2 || ds[0].ID != "gw-1" || ds[1].ID != "gw-2" || ds[1].Damaged == "" {
		t.Fatalf("GET /v1/devices: %d %s; want gw-1 and gw-2 listed as damaged", code, body)
	}
	if code, body := call(t, srv, "GET", "/v1/bundles", testToken, nil); code != http.StatusOK {
		t.Errorf("GET /v1/bundles: %d %s", code, body)
	}
	if code, body := call(t, srv, "GET", "/v1/devices/gw-2", testToken, nil); code != http.StatusConflict || !strings.Contains(string(body), "tritctl devices forget gw-2") {
		t.Errorf("GET /v1/devices/gw-2: %d %s; want 409 saying how to delete it", code, body)
	}
	if code, body := call(t, srv, "DELETE", "/v1/devices/gw-2", testToken, nil); code != http.StatusOK {
		t.Fatalf("DELETE /v1/devices/gw-2: %d %s", code, body)
	}
	if code, body := call(t, srv, "GET", "/v1/devices", testToken, nil); code != http.StatusOK || strings.Contains(string(body), "gw-2") {
		t.Errorf("GET /v1/devices after forget: %d %s", code, body)
	}
}
