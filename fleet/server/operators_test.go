package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet/access"
	"github.com/trit-iot/trit/inference/bundle"
	"github.com/trit-iot/trit/store"
	"github.com/trit-iot/trit/store/postgres"
	"github.com/trit-iot/trit/store/postgres/pgtest"
	"github.com/trit-iot/trit/wire/mqtttest"
)

// An operator's token works until it is disabled, rotated, removed or
// expires — each from the next request on; the api.token_file's token is
// an admin throughout.
func TestAuthFollowsTheStore(t *testing.T) { testAuthFollowsTheStore(t, newFixture(t)) }

// TestOperatorsOnPostgres: the same on a PostgreSQL store, with the audit
// trail read back through the API.
func TestOperatorsOnPostgres(t *testing.T) {
	t.Run("Auth", func(t *testing.T) { testAuthFollowsTheStore(t, newFixtureOn(t, openPostgres(t))) })
	t.Run("API", func(t *testing.T) { testOperatorsOverTheAPI(t, newFixtureOn(t, openPostgres(t))) })
	t.Run("Replicas", testDisableOnEveryReplica)
}

// Two replicas on one PostgreSQL database: an operator disabled through
// one is refused by the other at its very next request.
func testDisableOnEveryReplica(t *testing.T) {
	dsn := pgtest.Database(t)
	var srvs []*httptest.Server
	for range 2 {
		db, err := postgres.Open(dsn, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		srvs = append(srvs, apiServer(t, newFixtureOn(t, db)))
	}
	a, b := api.NewClient(srvs[0].URL, testToken), srvs[1]
	n, err := a.AddOperator(&api.OperatorRequest{Name: "otto", Role: "operator"})
	if err != nil {
		t.Fatal(err)
	}
	if code, body := call(t, b, "GET", "/v1/whoami", n.Token, nil); code != http.StatusOK {
		t.Fatalf("otto on replica b: %d %s", code, body)
	}
	if _, err := a.OperatorOp("otto", "disable"); err != nil {
		t.Fatal(err)
	}
	if code, _ := call(t, b, "GET", "/v1/whoami", n.Token, nil); code != http.StatusUnauthorized {
		t.Fatalf("otto on replica b right after replica a disabled him: %d, want 401", code)
	}
}

func testAuthFollowsTheStore(t *testing.T, f *fixture) {
	auth, err := access.NewAuth(f.db, testToken, nil, f.svc.Audit(), f.svc.Logger(), f.clk.now)
	if err != nil {
		t.Fatal(err)
	}
	remote := func(i int) string {
		return "192.0.2." + string(rune('1'+i%9)) + ":1" // spread over addresses: not the throttle under test
	}
	ops := &access.Operators{DB: f.db, Now: f.clk.now}
	alice, err := ops.Add(api.OperatorRequest{Name: "alice", Role: "operator"}, "test")
	if err != nil {
		t.Fatal(err)
	}
	bot, err := ops.Add(api.OperatorRequest{Name: "bot", Role: "metrics", Machine: true, Expires: f.clk.now().Add(time.Hour)}, "test")
	if err != nil {
		t.Fatal(err)
	}
	expect := func(i int, tok string, want string) {
		t.Helper()
		p, res, _ := auth.SignIn(remote(i), "api", tok)
		got := p.Name + "/" + string(p.Role)
		if res != access.SignedIn {
			got = "refused"
		}
		if got != want {
			t.Errorf("step %d: %s, want %s", i, got, want)
		}
	}
	expect(0, testToken, access.TokenFileOperator+"/admin")
	expect(1, alice.Token, "alice/operator")
	expect(2, bot.Token, "bot/metrics")
	expect(3, otherLast(alice.Token), "refused")
	if _, err := ops.SetDisabled("alice", true); err != nil {
		t.Fatal(err)
	}
	expect(4, alice.Token, "refused")
	if _, ok := auth.Current("alice"); ok {
		t.Error("a disabled operator's session goes on")
	}
	if _, err := ops.SetDisabled("alice", false); err != nil {
		t.Fatal(err)
	}
	expect(5, alice.Token, "alice/operator")
	rot, err := ops.Rotate("alice")
	if err != nil {
		t.Fatal(err)
	}
	expect(6, alice.Token, "refused")
	expect(7, rot.Token, "alice/operator")
	f.clk.t = f.clk.t.Add(time.Hour)
	expect(8, bot.Token, "refused")
	if err := ops.Remove("alice"); err != nil {
		t.Fatal(err)
	}
	expect(0, rot.Token, "refused")
	expect(1, testToken, access.TokenFileOperator+"/admin")
	if _, err := ops.Add(api.OperatorRequest{Name: access.TokenFileOperator, Role: "viewer"}, "test"); err == nil {
		t.Error("an operator may take the api.token_file's name")
	}
	if _, err := ops.Add(api.OperatorRequest{Name: "carol", Role: "root"}, "test"); err == nil {
		t.Error("an unknown role is accepted")
	}
	if _, err := ops.Add(api.OperatorRequest{Name: "bot", Role: "viewer"}, "test"); statusOf(err) != http.StatusConflict {
		t.Errorf("a second bot: %v (status %d), want 409", err, statusOf(err))
	}
}

// otherLast is tok with its last character changed (a token may end in
// any character, so not always to the same one).
func otherLast(tok string) string {
	last := "0"
	if strings.HasSuffix(tok, last) {
		last = "1"
	}
	return tok[:len(tok)-1] + last
}

// Through the API: an admin adds an operator (the token in the answer
// only), the operator acts, the admin disables it and its next request is
// refused; the audit trail has each step with who.
func TestOperatorsOverTheAPI(t *testing.T) { testOperatorsOverTheAPI(t, newFixture(t)) }

func testOperatorsOverTheAPI(t *testing.T, f *fixture) {
	srv := apiServer(t, f)
	admin := api.NewClient(srv.URL, testToken)
	n, err := admin.AddOperator(&api.OperatorRequest{Name: "otto", Role: "operator"})
	if err != nil {
		t.Fatal(err)
	}
	ops, err := admin.Operators()
	if err != nil || len(ops) != 1 || ops[0].Name != "otto" || ops[0].CreatedBy != access.TokenFileOperator {
		t.Fatalf("operators: %+v %v", ops, err)
	}
	_, raw := call(t, srv, "GET", "/v1/operators", testToken, nil)
	if bytes.Contains(raw, []byte(n.Token[len("otto."):])) || bytes.Contains(raw, []byte("token_hash")) {
		t.Fatalf("the operator list shows the token or its hash: %s", raw)
	}
	otto := api.NewClient(srv.URL, n.Token)
	if w, err := otto.WhoAmI(); err != nil || w.Name != "otto" || w.Role != "operator" {
		t.Fatalf("whoami: %+v %v", w, err)
	}
	if _, err := otto.Operators(); !isStatus(err, http.StatusForbidden) {
		t.Fatalf("an operator lists operators: %v", err)
	}
	if _, err := admin.OperatorOp("otto", "disable"); err != nil {
		t.Fatal(err)
	}
	if _, err := otto.WhoAmI(); !isStatus(err, http.StatusUnauthorized) {
		t.Fatalf("a disabled operator's next request: %v, want 401", err)
	}
	if _, err := admin.OperatorOp("nobody", "disable"); !isStatus(err, http.StatusNotFound) {
		t.Fatalf("disable nobody: %v", err)
	}
	es, err := admin.Audit(&api.AuditQuery{Object: "operator/otto"})
	if err != nil {
		t.Fatal(err)
	}
	var steps []string
	for _, e := range es {
		steps = append(steps, e.Who+" "+e.Action+" "+e.Outcome)
	}
	want := access.TokenFileOperator + " operator.add ok|" + access.TokenFileOperator + " operator.disable ok"
	if got := strings.Join(steps, "|"); got != want {
		t.Fatalf("audit of operator/otto: %s, want %s", got, want)
	}
	mine, _ := admin.Audit(&api.AuditQuery{Operator: "otto"})
	if len(mine) != 1 || mine[0].Outcome != store.AuditRefused || mine[0].Status != 403 || mine[0].Agent != api.UserAgent {
		t.Fatalf("otto's refusal: %+v", mine)
	}
	if _, err := admin.Audit(&api.AuditQuery{Limit: -1}); err != nil {
		t.Fatal(err) // a non-positive limit is not sent
	}
	if code, _ := call(t, srv, "GET", "/v1/audit?since=yesterday", testToken, nil); code != http.StatusBadRequest {
		t.Fatalf("since=yesterday: %d", code)
	}
}

func isStatus(err error, code int) bool {
	se, ok := err.(*api.StatusError)
	return ok && se.Status == code
}

// trit-fleet operators, with the service stopped: the first admin is made
// in the database file (created if need be), its token written 0600 and
// shown nowhere else; list shows it; the change is audited as the local
// user.
func TestOperatorsCommandDirect(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	os.WriteFile(tokenFile, []byte(testToken), 0o600)
	if err := bundle.GenerateKey(filepath.Join(dir, "cmd.key"), filepath.Join(dir, "cmd.pub")); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "fleet.toml")
	os.WriteFile(conf, []byte(`database = "`+filepath.Join(dir, "db", "fleet.db")+`"
[mqtt]
broker = "tcp://127.0.0.1:1"
[api]
token_file = "`+tokenFile+`"
[keys]
command_key = "`+filepath.Join(dir, "cmd.key")+`"
release_keys = ["`+filepath.Join(dir, "release.pub")+`"]
`), 0o600)
	run := func(args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		code := Main(append(args, "-c", conf), &stdout, &stderr)
		return code, stdout.String(), stderr.String()
	}
	out := filepath.Join(dir, "alice.token")
	if code, stdout, stderr := run("operators", "add", "alice", "--role", "admin", "-o", out); code != 0 || !strings.Contains(stdout, "written to") {
		t.Fatalf("add: %d %s %s", code, stdout, stderr)
	}
	fi, err := os.Stat(out)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v %v", fi, err)
	}
	tok, _ := os.ReadFile(out)
	if name, _, ok := strings.Cut(strings.TrimSpace(string(tok)), "."); !ok || name != "alice" || len(tok) < len("alice.")+64 {
		t.Fatalf("token file holds %q", tok)
	}
	if code, stdout, _ := run("operators", "add", "bot", "--role", "metrics", "--machine", "--expires", "30d"); code != 0 || !strings.Contains(stdout, "shown only now") {
		t.Fatalf("add bot: %d %s", code, stdout)
	}
	if code, _, stderr := run("operators", "add", "eve", "--role", "root"); code != 2 || !strings.Contains(stderr, "--role") {
		t.Fatalf("bad role: %d %s", code, stderr)
	}
	code, stdout, _ := run("operators", "list", "--json")
	var ops []api.Operator
	if code != 0 || json.Unmarshal([]byte(stdout), &ops) != nil || len(ops) != 2 || ops[0].Name != "alice" || !ops[1].Machine || ops[1].Expires.IsZero() {
		t.Fatalf("list: %d %s", code, stdout)
	}
	if strings.Contains(stdout, strings.TrimSpace(string(tok))[6:]) {
		t.Fatal("list shows a token")
	}
	if code, _, stderr := run("operators", "disable", "bot"); code != 0 {
		t.Fatalf("disable: %s", stderr)
	}
	db, err := store.Open(filepath.Join(dir, "db", "fleet.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	recs, _ := auditOf(db, store.AuditQuery{})
	if len(recs) != 3 || !strings.HasPrefix(recs[0].Who, "local:") || recs[0].Agent != "cli" || recs[2].Action != "operator.disable" || recs[2].Object != "operator/bot" {
		t.Fatalf("audit: %+v", recs)
	}
}

// auditOf reads the audit trail of db.
func auditOf(db store.Database, q store.AuditQuery) (rs []store.AuditRecord, err error) {
	err = db.View(func(tx store.Tx) error { rs, err = store.Audit(tx, q); return err })
	return rs, err
}

// Through the API's real guard: 200 guesses at alice's token from 200
// addresses get 10 answers of 401 and then 429s; alice,
// from the address she signed in from before and from a new one, still
// gets in, while the guesses are answered 429.
func TestAPIBruteForceOneOperator(t *testing.T) {
	f := newFixture(t)
	h, err := Handler(f.svc, testToken)
	if err != nil {
		t.Fatal(err)
	}
	alice, err := (&access.Operators{DB: f.db, Now: f.clk.now}).Add(api.OperatorRequest{Name: "alice", Role: "viewer"}, "test")
	if err != nil {
		t.Fatal(err)
	}
	get := func(addr, tok string) int {
		r := httptest.NewRequest("GET", "/v1/whoami", nil)
		r.RemoteAddr = addr
		r.Header.Set("Authorization", "Bearer "+tok)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	if code := get("192.0.2.1:5000", alice.Token); code != http.StatusOK {
		t.Fatalf("alice: %d", code)
	}
	codes := map[int]int{}
	for i := range 200 {
		guess := fmt.Sprintf("alice.%064x", i) // the form of alice's token, not hers
		codes[get("198.51.100."+strconv.Itoa(i)+":4000", guess)]++
	}
	if codes[http.StatusUnauthorized] != access.SignInBurst || codes[http.StatusTooManyRequests] != 200-access.SignInBurst {
		t.Errorf("200 guesses at alice from 200 addresses: %v; want %d 401s, then 429s", codes, access.SignInBurst)
	}
	if code := get("192.0.2.1:5001", alice.Token); code != http.StatusOK {
		t.Errorf("alice from her address during the attack: %d", code)
	}
	// Her token is never held by others' failures (issue 38).
	if code := get("203.0.113.5:5000", alice.Token); code != http.StatusOK {
		t.Errorf("alice from a new address during the attack: %d, want 200", code)
	}
	if code := get("203.0.113.5:5000", fmt.Sprintf("alice.%064x", 999)); code != http.StatusTooManyRequests {
		t.Errorf("another guess during the attack: %d, want 429", code)
	}
}

func TestAuditAndTwoPersonConfig(t *testing.T) {
	c, err := ParseConfig("fleet.toml", minimalConfig+"[audit]\nmax_records = 500\nmax_age = \"720h\"\n[rollouts]\ntwo_person = true\ntwo_person_devices = 3\n")
	if err != nil {
		t.Fatal(err)
	}
	if l := c.Audit.limits(); l.MaxRecords != 500 || l.MaxAge != 720*time.Hour || !c.Rollouts.TwoPerson || c.Rollouts.TwoPersonDevices != 3 {
		t.Fatalf("parsed %+v %+v", c.Audit, c.Rollouts)
	}
	for text, want := range map[string]string{
		"[audit]\nmax_records = -1\n":           "audit.max_records",
		"[audit]\nmax_age = \"10m\"\n":          "audit.max_age",
		"[rollouts]\ntwo_person_devices = -2\n": "rollouts.two_person_devices",
	} {
		if _, err := ParseConfig("fleet.toml", minimalConfig+text); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error naming %s", text, err, want)
		}
	}
}

// trit-fleet operators while the service runs (it holds the bbolt file):
// through the API with the api.token_file's token; the audit trail names
// the command and the local user.
func TestOperatorsCommandThroughAPI(t *testing.T) {
	b := mqtttest.Start(t)
	files := writeFleetFiles(t, b.URL())
	addr, _ := serve(t, files.config)
	conf := filepath.Join(files.dir, "fleet.toml")
	withAddr := strings.Replace(files.config, `listen = "127.0.0.1:0"`, `listen = "`+addr+`"`, 1)
	if err := os.WriteFile(conf, []byte(withAddr), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := Main([]string{"operators", "add", "bob", "--role", "viewer", "-c", conf}, &stdout, &stderr); code != 0 {
		t.Fatalf("operators add while running: %d %s", code, stderr.String())
	}
	tok := strings.TrimSpace(stdout.String()[strings.LastIndex(stdout.String(), ":\n")+2:])
	var who api.WhoAmI
	if err := json.Unmarshal(callAPI(t, addr, tok, "GET", "/v1/whoami", nil), &who); err != nil || who.Name != "bob" {
		t.Fatalf("bob's token: %+v %v (printed %q)", who, err, stdout.String())
	}
	var es []api.AuditEntry
	if err := json.Unmarshal(callAPI(t, addr, files.token, "GET", "/v1/audit?object=operator/bob", nil), &es); err != nil ||
		len(es) != 1 || es[0].Who != access.TokenFileOperator || !strings.HasPrefix(es[0].Agent, "trit-fleet-operators/") || !strings.Contains(es[0].Agent, "local:") {
		t.Fatalf("audit: %+v %v", es, err)
	}
}
