package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet"
	"github.com/trit-iot/trit/fleet/access"
	"github.com/trit-iot/trit/store"
	"github.com/trit-iot/trit/store/postgres"
	"github.com/trit-iot/trit/store/postgres/pgtest"
)

// An offline edit or deletion of an audit record stops trit-fleet at
// start, naming the first broken record, and trit-fleet audit verify
// names it too — on the bbolt file and on PostgreSQL; [audit]
// start_on_broken starts it anyway on a new chain whose first record
// says what was broken.
func TestAuditTamperingStopsStart(t *testing.T) {
	t.Run("bbolt", func(t *testing.T) { testAuditTamperingStopsStart(t, "") })
	t.Run("postgres", func(t *testing.T) { testAuditTamperingStopsStart(t, pgtest.Database(t)) })
}

func testAuditTamperingStopsStart(t *testing.T, dsn string) {
	files := writeFleetFiles(t, "tcp://127.0.0.1:1") // no broker: the fleet starts without one
	config := files.config
	if dsn != "" {
		config = strings.Replace(config, fmt.Sprintf("database = %q", filepath.Join(files.dir, "db", "fleet.db")), fmt.Sprintf("database = %q", dsn), 1)
	}
	conf := filepath.Join(files.dir, "fleet.toml")
	if err := os.WriteFile(conf, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	addr, stop := serve(t, config)
	for _, name := range []string{"ann", "bob", "cid"} {
		callAPI(t, addr, files.token, "POST", "/v1/operators", []byte(`{"name":"`+name+`","role":"viewer"}`))
	}
	stop()
	time.Sleep(200 * time.Millisecond) // Serve closes the database
	open := func() store.Database {
		t.Helper()
		if dsn != "" {
			db, err := postgres.Open(dsn, nil)
			if err != nil {
				t.Fatal(err)
			}
			return db
		}
		var db *store.DB
		var err error
		for range 50 { // the stopped service lets go of the file
			if db, err = store.Open(filepath.Join(files.dir, "db", "fleet.db"), &store.Options{Timeout: 100 * time.Millisecond}); err == nil {
				break
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		return db
	}
	change := func(fn func(db store.Database)) {
		db := open()
		defer db.Close()
		fn(db)
	}
	start := func(config string) error {
		cfg, err := ParseConfig("test.toml", config)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		ready := make(chan Ready, 1)
		done := make(chan error, 1)
		go func() { done <- Serve(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), ready) }()
		select {
		case <-ready:
			cancel()
			<-done
			return nil
		case err := <-done:
			cancel()
			return err
		case <-time.After(20 * time.Second):
			cancel()
			t.Fatal("Serve neither started nor failed")
		}
		return nil
	}
	verify := func() (int, string) {
		var stdout, stderr bytes.Buffer
		code := Main([]string{"audit", "verify", "-c", conf}, &stdout, &stderr)
		return code, stdout.String() + stderr.String()
	}
	if code, out := verify(); code != 0 || !strings.Contains(out, "intact") {
		t.Fatalf("verify of the intact trail: %d %s", code, out)
	}
	var saved store.AuditRecord
	change(func(db store.Database) {
		db.Get(store.FleetAudit, store.AuditKey(2), &saved)
		edited := saved
		edited.Who = "someone-else"
		if err := db.Put(store.FleetAudit, store.AuditKey(2), edited); err != nil {
			t.Fatal(err)
		}
	})
	if err := start(config); !errors.Is(err, access.ErrAuditBroken) || !strings.Contains(err.Error(), "first broken record 2") {
		t.Fatalf("start on a trail whose record 2 was edited: %v", err)
	}
	if code, out := verify(); code != 1 || !strings.Contains(out, "first broken record 2") {
		t.Fatalf("verify of record 2 edited: %d %s", code, out)
	}
	change(func(db store.Database) {
		db.Put(store.FleetAudit, store.AuditKey(2), saved)
		if err := db.Delete(store.FleetAudit, store.AuditKey(3)); err != nil {
			t.Fatal(err)
		}
	})
	if err := start(config); !errors.Is(err, access.ErrAuditBroken) || !strings.Contains(err.Error(), "first broken record 3") {
		t.Fatalf("start on a trail whose record 3 was deleted: %v", err)
	}
	if code, out := verify(); code != 1 || !strings.Contains(out, "first broken record 3") || !strings.Contains(out, "missing") {
		t.Fatalf("verify of record 3 deleted: %d %s", code, out)
	}
	if err := start(config + "[audit]\nstart_on_broken = true\n"); err != nil {
		t.Fatalf("start_on_broken: %v", err)
	}
	code, out := verify()
	if code != 0 || !strings.Contains(out, "intact") || !strings.Contains(out, "before the chain") {
		t.Fatalf("verify after a restarted chain: %d %s", code, out)
	}
	change(func(db store.Database) {
		var rs []store.AuditRecord
		db.View(func(tx store.Tx) (err error) {
			rs, err = store.Audit(tx, store.AuditQuery{Action: "audit"})
			return err
		})
		if len(rs) != 1 || rs[0].Action != "audit.chain-restart" || !strings.Contains(rs[0].Detail, "first broken record 3") {
			t.Fatalf("the restart's record: %+v", rs)
		}
	})
}

// Over the API: 1,200 refused requests from a viewer with max_records
// 1,000 (issue 38 lost every earlier record this way) leave every earlier
// record in place, as one aggregated record; the admin's verify route
// finds the chain intact and the export verifies offline.
func TestAPIRefusalsKeepTheTrail(t *testing.T) {
	f := newFixture(t, func(o *fleet.Options) { o.Audit.MaxRecords = 1000 })
	srv := apiServer(t, f)
	ops := &access.Operators{DB: f.db, Now: f.clk.now}
	vera, err := ops.Add(api.OperatorRequest{Name: "vera", Role: "viewer"}, "test")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"ann", "bob", "cid"} {
		if code, out := call(t, srv, "POST", "/v1/operators", testToken, []byte(`{"name":"`+name+`","role":"viewer"}`)); code != http.StatusOK {
			t.Fatalf("add %s: %d %s", name, code, out)
		}
	}
	for range 1200 {
		if code, _ := call(t, srv, "POST", "/v1/rollouts/r1/abort", vera.Token, []byte("{}")); code != http.StatusForbidden {
			t.Fatalf("the viewer's abort: %d", code)
		}
	}
	code, out := call(t, srv, "GET", "/v1/audit/verify", testToken, nil)
	if code != http.StatusOK || !strings.Contains(string(out), `"ok": true`) {
		t.Fatalf("verify: %d %s", code, out)
	}
	recs, err := auditOf(f.db, store.AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 4 || recs[0].Action != "operator.add" || recs[2].Object != "operator/cid" || recs[3].Count != 1200 || recs[3].Who != "vera" {
		t.Fatalf("%d records: %+v", len(recs), recs)
	}
	code, out = call(t, srv, "GET", "/v1/audit/export", testToken, nil)
	if code != http.StatusOK {
		t.Fatalf("export: %d %s", code, out)
	}
	rep, err := store.VerifyAuditExport(bytes.NewReader(out), nil, nil, f.clk.t)
	if err != nil || !rep.OK() || rep.Records != 4 {
		t.Fatalf("the export: %v %s", err, rep.Summary())
	}
}
