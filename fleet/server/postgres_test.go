package server

import (
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet/rollout"
	"github.com/trit-iot/trit/store"
	"github.com/trit-iot/trit/store/postgres"
	"github.com/trit-iot/trit/store/postgres/pgtest"
	"github.com/trit-iot/trit/wire/mqtttest"
)

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
	var r rollout.Rollout
	if ok, err := db.Get(store.FleetRollouts, "it-1", &r); !ok || err != nil || r.State != api.RolloutCompleted {
		t.Fatalf("the rollout in PostgreSQL: %v, %v, state %s", ok, err, r.State)
	}
}
