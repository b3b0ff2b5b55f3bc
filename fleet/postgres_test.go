package fleet

import (
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/store"

	"github.com/trit-iot/trit/store/postgres"
	"github.com/trit-iot/trit/store/postgres/pgtest"
	"github.com/trit-iot/trit/wire/mqtttest"
)

// The package's PostgreSQL server starts with the first test that needs
// it; TestMain stops it.
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func openPostgres(t testing.TB) Store {
	t.Helper()
	db, err := postgres.Open(pgtest.Database(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestServiceOnPostgres runs the service's rollout tests on a PostgreSQL
// store: registry, inventory, rollouts, events and a restart over the same
// database.
func TestServiceOnPostgres(t *testing.T) {
	for _, tc := range []struct {
		name string
		fn   func(*testing.T, *fixture)
	}{
		{"RolloutEndToEnd", testServiceRolloutEndToEnd},
		{"CanaryAbortAndRollback", testServiceCanaryAbortAndRollback},
		{"ResumesAfterRestart", testServiceResumesAfterRestart},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, newFixtureOn(t, openPostgres(t))) })
	}
}

// TestDatabaseURLConfig: a PostgreSQL URL in database is checked when the
// file is read, shown without its password, and a backup of it is pg_dump's
// job, not trit-fleet backup's.
func TestDatabaseURLConfig(t *testing.T) {
	c, err := ParseConfig("fleet.toml", `database = "postgres://fleet:pw-secret@db.example:5432/trit?sslmode=verify-full"`+"\n"+minimalConfig)
	if err != nil {
		t.Fatal(err)
	}
	if name := c.databaseName(); strings.Contains(name, "pw-secret") || !strings.Contains(name, "db.example:5432/trit") {
		t.Errorf("databaseName = %q", name)
	}
	if _, _, err := backup(c, filepath.Join(t.TempDir(), "copy")); !errors.Is(err, ErrNoBackup) || !strings.Contains(err.Error(), "pg_dump") {
		t.Errorf("backup of a PostgreSQL database = %v, want ErrNoBackup naming pg_dump", err)
	}
	_, err = ParseConfig("fleet.toml", `database = "postgres://fleet@db.example:5432/trit?sslmode=sometimes"`+"\n"+minimalConfig)
	if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "database") {
		t.Errorf("a bad URL = %v, want ErrConfig naming database", err)
	}
}

// TestFleetOverMosquittoOnPostgres is TestFleetOverMosquitto with the
// fleet's state in PostgreSQL: trit-fleet's Serve migrates the new
// database, registers the bundle, fills the inventory and runs the rollout
// from it; GET /v1/backup says to use pg_dump.
func TestFleetOverMosquittoOnPostgres(t *testing.T) {
	dsn := pgtest.Database(t)
	b := mqtttest.Start(t)
	addr, token := testFleetOver(t, dsn, b.URL(), []string{b.URL()})
	req, _ := http.NewRequest("GET", "http://"+addr+"/v1/backup", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotImplemented || !strings.Contains(string(body), "pg_dump") {
		t.Fatalf("GET /v1/backup = %d %s, want 501 naming pg_dump", resp.StatusCode, body)
	}
	db, err := postgres.Open(dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var r Rollout
	if ok, err := db.Get(store.FleetRollouts, "it-1", &r); !ok || err != nil || r.State != api.RolloutCompleted {
		t.Fatalf("the rollout in PostgreSQL: %v, %v, state %s", ok, err, r.State)
	}
}
