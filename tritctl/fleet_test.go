package tritctl

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/internal/capped/cappedtest"
)

// fakeFleet records the API calls tritctl makes and answers from canned
// responses keyed by "METHOD path".
type fakeFleet struct {
	mu      sync.Mutex
	calls   []string
	bodies  map[string]string
	queries map[string]string // each call's raw query, by "METHOD path"
	answers map[string]string
}

func newFakeFleet(t *testing.T, answers map[string]string) (*fakeFleet, string) {
	t.Helper()
	f := &fakeFleet{bodies: map[string]string{}, queries: map[string]string{}, answers: answers}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer test-token-0123456789" {
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"error":"missing or wrong API token"}`)
			return
		}
		key := r.Method + " " + r.URL.Path
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.calls = append(f.calls, key)
		f.bodies[key] = string(body)
		f.queries[key] = r.URL.RawQuery
		f.mu.Unlock()
		a, ok := answers[key]
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"error":"fleet: not found: `+r.URL.Path+`"}`)
			return
		}
		io.WriteString(w, a)
	}))
	t.Cleanup(srv.Close)
	t.Setenv("TRIT_FLEET_URL", srv.URL)
	t.Setenv("TRIT_FLEET_TOKEN", "test-token-0123456789")
	return f, srv.URL
}

const rolloutJSON = `{"id":"r1","bundle":"ab12ab12ab12ab12","model_id":"vib","release":2,"state":"aborted",
 "reason":"abort criterion met","order":["gw-1","gw-2","gw-3"],
 "devices":{"gw-1":{"state":"succeeded","seq":4,"attempts":1},"gw-2":{"state":"failed","seq":5,"attempts":1,"reason":"self-test: class 1, want 0"},"gw-3":{"state":"pending"}}}`

func TestRolloutCommands(t *testing.T) {
	f, _ := newFakeFleet(t, map[string]string{
		"POST /v1/rollouts":             `{"id":"r1","model_id":"vib","release":2,"order":["gw-1","gw-2","gw-3"]}`,
		"GET /v1/rollouts/r1":           rolloutJSON,
		"POST /v1/rollouts/r1/pause":    `{"id":"r1","state":"paused"}`,
		"POST /v1/rollouts/r1/rollback": `{"id":"r1-back","model_id":"vib","release":1,"order":["gw-1","gw-2","gw-3"]}`,
	})
	stdout, stderr, code := runCtl(t, "rollout", "create", "--id", "r1", "--bundle", "ab12", "--selector", "site=north",
		"--phases", "1,50%,100%", "--abort-on", "any", "--abort-threshold", "10", "--abort-min", "2", "--retries", "timed-out=2")
	if code != 0 || !strings.Contains(stdout, "rollout r1 created: vib release 2 to 3 devices") {
		t.Fatalf("create: %d %q %q", code, stdout, stderr)
	}
	var sent map[string]any
	if err := json.Unmarshal([]byte(f.bodies["POST /v1/rollouts"]), &sent); err != nil {
		t.Fatal(err)
	}
	want := `{"abort":{"min_executed":2,"on":"any","threshold_percent":10},"bundle":"ab12","id":"r1","pace":{"phases":[{"count":1},{"percent":50},{"percent":100}]},"retries":{"timed-out":2},"selector":{"site":"north"}}`
	if got, _ := json.Marshal(sent); string(got) != want {
		t.Fatalf("request body\n got %s\nwant %s", got, want)
	}

	stdout, stderr, code = runCtl(t, "rollout", "status", "r1")
	if code != 0 || !strings.Contains(stdout, "state: aborted (abort criterion met)") ||
		!strings.Contains(stdout, "failed 1, pending 1, succeeded 1 (of 3)") || !strings.Contains(stdout, "self-test: class 1, want 0") {
		t.Fatalf("status: %d\n%s%s", code, stdout, stderr)
	}
	// Watching an aborted rollout ends at once and fails, for scripts.
	if _, stderr, code := runCtl(t, "rollout", "status", "--watch", "r1"); code != exitAborted || !strings.Contains(stderr, "aborted") {
		t.Fatalf("status --watch of an aborted rollout: %d %q", code, stderr)
	}
	if stdout, _, code := runCtl(t, "rollout", "pause", "r1", "--reason", "lunch"); code != 0 || !strings.Contains(stdout, "paused") {
		t.Fatalf("pause: %d %q", code, stdout)
	}
	if f.bodies["POST /v1/rollouts/r1/pause"] != `{"reason":"lunch"}` {
		t.Fatalf("pause body %q", f.bodies["POST /v1/rollouts/r1/pause"])
	}
	if stdout, _, code := runCtl(t, "rollout", "rollback", "r1", "--id", "r1-back"); code != 0 || !strings.Contains(stdout, "release 1") {
		t.Fatalf("rollback: %d %q", code, stdout)
	}
	if _, stderr, code := runCtl(t, "rollout", "status", "nope"); code != 1 || !strings.Contains(stderr, "not found") {
		t.Fatalf("unknown rollout: %d %q", code, stderr)
	}
}

func TestRolloutCreateUsageErrors(t *testing.T) {
	newFakeFleet(t, nil)
	for _, args := range [][]string{
		{"rollout", "create", "--id", "r", "--bundle", "b"},                                                      // no target
		{"rollout", "create", "--id", "r", "--bundle", "b", "--device", "a", "--selector", "x=y"},                // both
		{"rollout", "create", "--id", "r", "--bundle", "b", "--device", "a", "--phases", "0%"},                   // bad phase
		{"rollout", "create", "--id", "r", "--bundle", "b", "--device", "a", "--phases", "1", "--rate", "1,2,3"}, // both paces
		{"rollout", "create", "--id", "r", "--bundle", "b", "--device", "a", "--rate", "fast"},
		{"rollout", "create", "--bundle", "b", "--device", "a"}, // no ID
	} {
		if _, stderr, code := runCtl(t, args...); code != 2 {
			t.Errorf("%v: exit %d (%s), want 2", args, code, stderr)
		}
	}
	// A flag the rollout would not use is refused, naming it: a gate
	// given but not applied is a check the rollout never had.
	base := []string{"rollout", "create", "--id", "r", "--bundle", "ab12", "--device", "a"}
	for _, c := range []struct{ args []string }{
		{[]string{"--max-divergence", "0.1"}}, // shadow gates without --shadow
		{[]string{"--min-agreement", "0.9"}},
		{[]string{"--max-low-margin", "0.2"}},
		{[]string{"--max-train-divergence", "0.2"}},
		{[]string{"--min-windows", "50"}},
		{[]string{"--shadow-phases", "2"}},
		{[]string{"--abort-threshold", "10"}}, // without --abort-on
		{[]string{"--abort-min", "3"}},
		{[]string{"--no-gate", "--max-confidence-drop", "0.1"}},
		{[]string{"--no-gate", "--gate-windows", "50"}},
		{[]string{"--no-gate", "--max-unknown-increase", "0.1"}},
	} {
		_, stderr, code := runCtl(t, append(base, c.args...)...)
		if flag := c.args[len(c.args)-2]; code != 2 || !strings.Contains(stderr, flag) {
			t.Errorf("%v: exit %d (%s), want 2 naming %s", c.args, code, stderr, flag)
		}
	}
}

// TestRolloutCreateNoGateShadow: with --shadow, --max-unknown-increase is
// the shadow's gate too, so --no-gate leaves it there and sends no
// confidence gate beside no_gate.
func TestRolloutCreateNoGateShadow(t *testing.T) {
	f, _ := newFakeFleet(t, map[string]string{"POST /v1/rollouts": `{"id":"r1","model_id":"vib","release":2,"order":["a"]}`})
	if _, stderr, code := runCtl(t, "rollout", "create", "--id", "r1", "--bundle", "ab12", "--device", "a", "--shadow", "--no-gate", "--max-unknown-increase", "0.05"); code != 0 {
		t.Fatalf("create: %d %s", code, stderr)
	}
	var sent api.RolloutRequest
	if err := json.Unmarshal([]byte(f.bodies["POST /v1/rollouts"]), &sent); err != nil {
		t.Fatal(err)
	}
	if !sent.NoGate || sent.Gate != nil || sent.Shadow == nil || sent.Shadow.MaxUnknownIncrease != 0.05 {
		t.Fatalf("sent %s", f.bodies["POST /v1/rollouts"])
	}
}

func TestPublishAndDevices(t *testing.T) {
	f, _ := newFakeFleet(t, map[string]string{
		"POST /v1/bundles":     `{"hash":"cafe","model_id":"vib","release":3,"size":9000,"key_id":"0011223344556677"}`,
		"GET /v1/devices":      `[{"id":"gw-1","online":true,"model":{"id":"vib","release":3},"health":"ok","labels":{"site":"north","hw":"pi4"}},{"id":"gw-2","online":false}]`,
		"GET /v1/devices/gw-1": `{"id":"gw-1","online":true}`,
	})
	path := filepath.Join(t.TempDir(), "b.trit")
	os.WriteFile(path, []byte("TRIT…"), 0o644)
	if stdout, stderr, code := runCtl(t, "publish", path); code != 0 || !strings.Contains(stdout, "registered vib release 3") {
		t.Fatalf("publish: %d %q %q", code, stdout, stderr)
	}
	if f.bodies["POST /v1/bundles"] != "TRIT…" {
		t.Fatal("publish did not upload the file's bytes")
	}
	stdout, _, code := runCtl(t, "devices", "list")
	if code != 0 || !strings.Contains(stdout, "gw-1") || !strings.Contains(stdout, "hw=pi4,site=north") {
		t.Fatalf("devices list: %d\n%s", code, stdout)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 3 || !strings.Contains(lines[2], "gw-2") || !strings.Contains(lines[2], "-") {
		t.Fatalf("devices table:\n%s", stdout)
	}
	if stdout, _, code := runCtl(t, "devices", "show", "gw-1"); code != 0 || !strings.Contains(stdout, `"online": true`) {
		t.Fatalf("devices show: %d %q", code, stdout)
	}
	t.Setenv("TRIT_FLEET_TOKEN", "wrong-token")
	if _, stderr, code := runCtl(t, "devices", "list"); code != 1 || !strings.Contains(stderr, "wrong API token") {
		t.Fatalf("wrong token: %d %q", code, stderr)
	}
	t.Setenv("TRIT_FLEET_TOKEN", "")
	if _, stderr, code := runCtl(t, "devices", "list"); code != 2 || !strings.Contains(stderr, "no API token") {
		t.Fatalf("no token: %d %q", code, stderr)
	}
}

// TestFleetURLChecked: a --fleet (or $TRIT_FLEET_URL) without http://
// failed at the first request as 'parse "127.0.0.1:8080/v1/devices":
// first path segment in URL cannot contain colon', naming neither the
// flag nor the fix; an empty one as 'unsupported protocol scheme ""'.
// Both are usage errors now, naming the flag and the URL expected.
func TestFleetURLChecked(t *testing.T) {
	t.Setenv("TRIT_FLEET_TOKEN", "0123456789abcdef0123")
	for _, u := range []string{"127.0.0.1:8080", "localhost:8080", "ftp://x", "http://", "http://127.0.0.1:8080,127.0.0.1:8081", ""} {
		_, stderr, code := runCtl(t, "devices", "list", "--fleet", u)
		if code != 2 || !strings.Contains(stderr, "--fleet") || !strings.Contains(stderr, "http://127.0.0.1:8080 (trit-fleet's api.listen)") {
			t.Errorf("--fleet %q: exit %d, %q", u, code, stderr)
		}
	}
	for _, u := range []string{"http://127.0.0.1:8080", "https://fleet.example:8443/", " http://a:1 , http://b:2 "} {
		if err := checkFleetURL(u); err != nil {
			t.Errorf("checkFleetURL(%q) = %v", u, err)
		}
	}
}

// TestWatchRidesOutRestart: rollout status --watch exited 1 the moment
// trit-fleet restarted ("connection reset by peer"), though the rollout
// went on. Once it has read the rollout it now retries a failure to reach
// the API (and a 503) for up to watchOutage, saying so on stderr, and ends
// with the rollout's own outcome; past watchOutage it exits 1 as before.
func TestWatchRidesOutRestart(t *testing.T) {
	running := `{"id":"r1","bundle":"ab12","model_id":"vib","release":2,"state":"running","order":["gw-1"],"devices":{"gw-1":{"state":"pending"}}}`
	done := `{"id":"r1","bundle":"ab12","model_id":"vib","release":2,"state":"completed","order":["gw-1"],"successes":1,"devices":{"gw-1":{"state":"succeeded"}}}`
	serve := func(t *testing.T, answer func(n int64) string) {
		var n atomic.Int64
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			a := answer(n.Add(1))
			switch a {
			case "reset":
				panic(http.ErrAbortHandler) // the connection dropped, as by a restart
			case "503":
				w.WriteHeader(http.StatusServiceUnavailable)
				io.WriteString(w, `{"error":"the database is unavailable"}`)
				return
			}
			io.WriteString(w, a)
		}))
		t.Cleanup(srv.Close)
		t.Setenv("TRIT_FLEET_URL", srv.URL)
		t.Setenv("TRIT_FLEET_TOKEN", "test-token-0123456789")
	}
	t.Run("restart", func(t *testing.T) {
		serve(t, func(n int64) string {
			switch {
			case n == 1:
				return running
			case n <= 3:
				return "reset"
			case n == 4:
				return "503"
			}
			return done
		})
		_, stderr, code := runCtl(t, "rollout", "status", "--watch", "r1", "--interval", "5ms")
		if code != 0 || strings.Count(stderr, "trit-fleet does not answer") != 1 || !strings.Contains(stderr, "trit-fleet answers again") {
			t.Fatalf("exit %d, stderr %q; want 0 and one outage said", code, stderr)
		}
	})
	t.Run("gone", func(t *testing.T) {
		defer func(d time.Duration) { watchOutage = d }(watchOutage)
		watchOutage = 50 * time.Millisecond
		serve(t, func(n int64) string {
			if n == 1 {
				return running
			}
			return "reset"
		})
		if _, stderr, code := runCtl(t, "rollout", "status", "--watch", "r1", "--interval", "5ms"); code != 1 || !strings.Contains(stderr, "trit-fleet does not answer") {
			t.Fatalf("exit %d, stderr %q; want 1 after the outage", code, stderr)
		}
	})
	t.Run("unreachable at first", func(t *testing.T) {
		serve(t, func(int64) string { return "reset" })
		if _, stderr, code := runCtl(t, "rollout", "status", "--watch", "r1", "--interval", "5ms"); code != 1 || strings.Contains(stderr, "retrying") {
			t.Fatalf("exit %d, stderr %q; want 1 at once", code, stderr)
		}
	})
}

func TestRemoteTrain(t *testing.T) {
	f, _ := newFakeFleet(t, map[string]string{
		"POST /v1/train":               `{"id":"train-1","state":"running"}`,
		"GET /v1/train/train-1":        `{"id":"train-1","state":"succeeded","bundle":"ab","bytes":5,"accuracy":97.5,"accuracy_on":"test","sigma":8,"c":0.001,"nonzero":10,"train_seconds":1.5}`,
		"GET /v1/train/train-1/bundle": "TRIT!",
	})
	out := filepath.Join(t.TempDir(), "m.trit")
	stdout, stderr, code := runCtl(t, "remote-train", "standard:usps", "--model-id", "usps", "--release", "3", "-o", out, "--interval", "1ms")
	if code != 0 || !strings.Contains(stdout, "accuracy 97.50% (test set)") {
		t.Fatalf("remote-train: %d %q %q", code, stdout, stderr)
	}
	if got, _ := os.ReadFile(out); string(got) != "TRIT!" {
		t.Fatalf("wrote %q", got)
	}
	var sent map[string]any
	json.Unmarshal([]byte(f.bodies["POST /v1/train"]), &sent)
	if sent["dataset"] != "standard:usps" || sent["model_id"] != "usps" || sent["release"] != 3.0 {
		t.Fatalf("request %v", sent)
	}
	if _, stderr, code := runCtl(t, "remote-train", "standard:usps", "--model-id", "usps", "--release", "3", "-o", out); code != 1 || !strings.Contains(stderr, "use --force to replace it") {
		t.Fatalf("existing output: %d %q", code, stderr)
	}
}

// rollout status --watch tells scripts how a rollout ended by its exit
// code: all succeeded, some did not, none did, aborted.
func TestRolloutWatchExitCodes(t *testing.T) {
	done := func(state, reason string, successes int) string {
		return `{"id":"r","model_id":"vib","release":2,"state":"` + state + `","reason":"` + reason + `","successes":` +
			fmt.Sprint(successes) + `,"order":["gw-1","gw-2"],"devices":{"gw-1":{"state":"rejected"},"gw-2":{"state":"succeeded"}}}`
	}
	for _, c := range []struct {
		body string
		code int
		says string
	}{
		{done("completed", "", 2), 0, ""},
		{done("completed", "1 of 2 devices did not succeed (1 rejected)", 1), exitPartial, "did not succeed"},
		{done("failed", "no device succeeded: 2 rejected", 0), exitFailed, "no device succeeded"},
		{done("aborted", "abort criterion met", 0), exitAborted, "aborted"},
	} {
		newFakeFleet(t, map[string]string{"GET /v1/rollouts/r": c.body})
		_, stderr, code := runCtl(t, "rollout", "status", "--watch", "r", "--interval", "1ms")
		if code != c.code || !strings.Contains(stderr, c.says) {
			t.Errorf("%.60s: exit %d %q, want %d", c.body, code, stderr, c.code)
		}
	}
}

func TestDevicesForgetReset(t *testing.T) {
	f, _ := newFakeFleet(t, map[string]string{
		"DELETE /v1/devices/gw-1":     `{"forgotten":"gw-1"}`,
		"POST /v1/devices/gw-1/reset": `{"id":"gw-1","session":0}`,
	})
	if stdout, stderr, code := runCtl(t, "devices", "forget", "gw-1"); code != 0 || !strings.Contains(stdout, "forgotten") {
		t.Fatalf("forget: %d %q %q", code, stdout, stderr)
	}
	if stdout, stderr, code := runCtl(t, "devices", "reset", "gw-1"); code != 0 || !strings.Contains(stdout, "reset") {
		t.Fatalf("reset: %d %q %q", code, stdout, stderr)
	}
	if _, stderr, code := runCtl(t, "devices", "forget", "gw-9"); code != 1 || !strings.Contains(stderr, "not found") {
		t.Fatalf("forget unknown: %d %q", code, stderr)
	}
	if len(f.calls) != 3 {
		t.Fatalf("calls %v", f.calls)
	}
}

func TestRemoteTrainCancel(t *testing.T) {
	newFakeFleet(t, map[string]string{"POST /v1/train/train-2/cancel": `{"id":"train-2","state":"cancelled"}`})
	if stdout, stderr, code := runCtl(t, "remote-train", "cancel", "train-2"); code != 0 || !strings.Contains(stdout, "train-2 cancelled") {
		t.Fatalf("cancel: %d %q %q", code, stdout, stderr)
	}
}

// TestRolloutWatchPrintsChanges: --watch printed the same line at every
// poll; now a line only when the state or the counts change.
func TestRolloutWatchPrintsChanges(t *testing.T) {
	running := func(states ...string) string {
		devs := []string{}
		for i, s := range states {
			devs = append(devs, fmt.Sprintf(`"gw-%d":{"state":%q}`, i+1, s))
		}
		return `{"id":"r","state":"running","order":["gw-1","gw-2"],"devices":{` + strings.Join(devs, ",") + `}}`
	}
	bodies := []string{
		running("notified", "pending"), running("notified", "pending"), running("notified", "pending"),
		running("succeeded", "pending"), running("succeeded", "pending"),
		running("succeeded", "notified"),
		`{"id":"r","state":"completed","successes":2,"order":["gw-1","gw-2"],"devices":{"gw-1":{"state":"succeeded"},"gw-2":{"state":"succeeded"}}}`,
	}
	var mu sync.Mutex
	polls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		io.WriteString(w, bodies[min(polls, len(bodies)-1)])
		polls++
	}))
	t.Cleanup(srv.Close)
	t.Setenv("TRIT_FLEET_URL", srv.URL)
	t.Setenv("TRIT_FLEET_TOKEN", "test-token-0123456789")
	stdout, stderr, code := runCtl(t, "rollout", "status", "--watch", "r", "--interval", "1ms")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var progress []string
	for _, l := range strings.Split(stdout, "\n") {
		if strings.Contains(l, "running: ") {
			progress = append(progress, l)
		}
	}
	if len(progress) != 3 || polls != len(bodies) {
		t.Fatalf("%d polls printed %d progress lines, want 3 (one per change):\n%s", polls, len(progress), stdout)
	}
	if !strings.Contains(stdout, "state: completed") {
		t.Fatalf("no final state:\n%s", stdout)
	}
}

// TestRemoteTrainVocabulary: remote-train takes -o/--out and --force as
// every command that writes a file, and --label-column as train does (a
// name, a column counted from 1, or last); --output still works.
func TestRemoteTrainVocabulary(t *testing.T) {
	f, _ := newFakeFleet(t, map[string]string{
		"POST /v1/train":               `{"id":"train-1","state":"succeeded","bytes":5}`,
		"GET /v1/train/train-1/bundle": "TRIT!",
	})
	dir := t.TempDir()
	for i, c := range []struct {
		flags []string
		want  string // the label fields of the request
	}{
		{[]string{"--label-column", "Occupancy"}, `"label_column_name":"Occupancy"`},
		{[]string{"--label-column", "last"}, `"label_column":-1`},
		{[]string{"--label-column", "3"}, `"label_column":3`},
		{nil, `"model_id"`},
	} {
		out := filepath.Join(dir, fmt.Sprintf("m%d.trit", i))
		args := append([]string{"remote-train", "data.csv", "--model-id", "m", "--release", "1", "--out", out, "--interval", "1ms"}, c.flags...)
		if _, stderr, code := runCtl(t, args...); code != 0 {
			t.Fatalf("%v: %d %q", args, code, stderr)
		}
		if body := f.bodies["POST /v1/train"]; !strings.Contains(body, c.want) || (c.flags == nil && strings.Contains(body, "label_column")) {
			t.Errorf("%v: request %s, want %s", c.flags, body, c.want)
		}
	}
	if _, stderr, code := runCtl(t, "remote-train", "data.csv", "--model-id", "m", "--release", "1", "--label-column", "0"); code != 2 {
		t.Errorf("--label-column 0: %d %q, want a usage error", code, stderr)
	}
	old := filepath.Join(dir, "old.trit")
	if _, stderr, code := runCtl(t, "remote-train", "data.csv", "--model-id", "m", "--release", "1", "--output", old, "--interval", "1ms"); code != 0 {
		t.Fatalf("--output: %d %q", code, stderr)
	}
	if got, _ := os.ReadFile(old); string(got) != "TRIT!" {
		t.Errorf("--output wrote %q", got)
	}
}

// TestOneDevice: counts agree with their noun: "to 1 device", not "to 1
// devices".
func TestOneDevice(t *testing.T) {
	newFakeFleet(t, map[string]string{
		"POST /v1/rollouts":             `{"id":"r1","model_id":"vib","release":2,"order":["gw-1"]}`,
		"POST /v1/rollouts/r1/rollback": `{"id":"r1-back","model_id":"vib","release":1,"order":["gw-1"]}`,
		"GET /v1/rollouts/r1":           `{"id":"r1","model_id":"vib","release":2,"state":"completed","successes":0,"order":["gw-1"],"devices":{"gw-1":{"state":"rejected"}}}`,
	})
	if stdout, stderr, code := runCtl(t, "rollout", "create", "--id", "r1", "--bundle", "ab12", "--device", "gw-1"); code != 0 || stdout != "rollout r1 created: vib release 2 to 1 device\n" {
		t.Errorf("create: %d %q %q", code, stdout, stderr)
	}
	if stdout, stderr, code := runCtl(t, "rollout", "rollback", "r1", "--id", "r1-back"); code != 0 || stdout != "rollback r1-back created: vib release 1 to 1 device\n" {
		t.Errorf("rollback: %d %q %q", code, stdout, stderr)
	}
	if _, stderr, code := runCtl(t, "rollout", "status", "--watch", "r1"); code != exitPartial || !strings.Contains(stderr, "but 1 of 1 device did not succeed") {
		t.Errorf("watch: %d %q", code, stderr)
	}
}

// TestTokenFileBounded: --token-file is read up to 64 KiB and no further.
// A token followed by more than that (blank lines, or a wrong path whose
// content never ends) was read whole and the token sent; now it is
// refused, naming the file and the bound, and nothing is sent. A token
// through a pipe (a shell's <(…)) is still read.
func TestTokenFileBounded(t *testing.T) {
	f, _ := newFakeFleet(t, map[string]string{"GET /v1/devices": `[{"id":"gw-1","online":true}]`})
	t.Setenv("TRIT_FLEET_TOKEN", "")
	dir := t.TempDir()
	token := "test-token-0123456789"
	write := func(name string, n int) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(token+strings.Repeat("\n", n-len(token))), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	big := write("big", maxTokenFile+1)
	_, stderr, code := runCtl(t, "devices", "list", "--token-file", big)
	if want := big + ": 65537 bytes, larger than the 65536-byte limit for a token file"; code != 1 || !strings.Contains(stderr, want) || len(f.calls) != 0 {
		t.Fatalf("token file of 64 KiB + 1: exit %d, %q, calls %v; want 1 saying %q, no call", code, stderr, f.calls, want)
	}
	if stdout, stderr, code := runCtl(t, "devices", "list", "--token-file", write("full", maxTokenFile)); code != 0 || !strings.Contains(stdout, "gw-1") {
		t.Fatalf("token file of 64 KiB: exit %d, %q", code, stderr)
	}
	if !cappedtest.Pipes() {
		return // pipes by path: Linux
	}
	path := cappedtest.Pipe(t, func(w io.Writer) { io.WriteString(w, token+"\n") })
	stdout, stderr, code := runCtl(t, "devices", "list", "--token-file", path)
	if code != 0 || !strings.Contains(stdout, "gw-1") {
		t.Fatalf("token through a pipe: exit %d, %q", code, stderr)
	}
	path = cappedtest.Pipe(t, cappedtest.Endless) // without end, as /dev/zero
	_, stderr, code = runCtl(t, "devices", "list", "--token-file", path)
	if want := path + ": larger than the 65536-byte limit for a token file"; code != 1 || !strings.Contains(stderr, want) {
		t.Fatalf("token file without end: exit %d, %q; want 1 saying %q", code, stderr, want)
	}
}
