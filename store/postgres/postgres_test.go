package postgres

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/trit-iot/trit/store"

	"github.com/trit-iot/trit/store/postgres/pgtest"
	"github.com/trit-iot/trit/store/storetest"
)

// One PostgreSQL server for the package's tests (started on first use),
// a new database for each.
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// open opens a new, empty database.
func open(t *testing.T) *DB {
	t.Helper()
	db, err := Open(pgtest.Database(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// TestStoreSuite runs the fleet stores' shared suite on PostgreSQL.
func TestStoreSuite(t *testing.T) {
	dsns := map[*DB]string{}
	storetest.Run(t, storetest.Backend{
		Open: func(t *testing.T) store.Database {
			dsn := pgtest.Database(t)
			db, err := Open(dsn, nil)
			if err != nil {
				t.Fatal(err)
			}
			dsns[db] = dsn
			return db
		},
		Reopen: func(t *testing.T, db store.Database) store.Database {
			dsn := dsns[db.(*DB)]
			db.Close()
			again, err := Open(dsn, nil)
			if err != nil {
				t.Fatal(err)
			}
			return again
		},
	})
}

func TestMigrationsRecordedOnce(t *testing.T) {
	dsn := pgtest.Database(t)
	db, err := Open(dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	if db.MigratedFrom() != 0 {
		t.Errorf("a new database was at version %d, want 0", db.MigratedFrom())
	}
	db.Close()
	db, err = Open(dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if db.MigratedFrom() != SchemaVersion() {
		t.Errorf("reopened at version %d, want %d", db.MigratedFrom(), SchemaVersion())
	}
	rows, err := db.pool.Query(context.Background(), `SELECT version, description FROM trit_schema_migrations ORDER BY version`)
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	for rows.Next() {
		var v int
		var d string
		if err := rows.Scan(&v, &d); err != nil {
			t.Fatal(err)
		}
		if d != migrations[v-1].description {
			t.Errorf("migration %d recorded as %q, want %q", v, d, migrations[v-1].description)
		}
		got = append(got, v)
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	if len(got) != SchemaVersion() {
		t.Fatalf("recorded migrations %v, want each of 1..%d once", got, SchemaVersion())
	}
}

// TestMigrationsConcurrent opens one new database from several replicas
// at once: one migrates, the others wait for it and find it done.
func TestMigrationsConcurrent(t *testing.T) {
	dsn := pgtest.Database(t)
	const n = 4
	errs := make(chan error, n)
	dbs := make(chan *DB, n)
	for i := 0; i < n; i++ {
		go func() {
			db, err := Open(dsn, nil)
			errs <- err
			dbs <- db
		}()
	}
	migrated := 0
	for i := 0; i < n; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
		db := <-dbs
		if db.MigratedFrom() == 0 {
			migrated++
		}
		db.Close()
	}
	if migrated != 1 {
		t.Fatalf("%d replicas found a new database, want exactly 1 (the others wait for its migration)", migrated)
	}
}

func TestNewerSchemaRefused(t *testing.T) {
	dsn := pgtest.Database(t)
	db := mustOpen(t, dsn)
	if err := db.Put(store.FleetDevices, "gw-1", map[string]int{"n": 1}); err != nil {
		t.Fatal(err)
	}
	next := SchemaVersion() + 1
	if _, err := db.pool.Exec(context.Background(), `INSERT INTO trit_schema_migrations (version, description) VALUES ($1, 'from the future')`, next); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err := Open(dsn, nil)
	if !errors.Is(err, store.ErrSchemaTooNew) {
		t.Fatalf("Open of a newer schema = %v, want ErrSchemaTooNew", err)
	}
	for _, want := range []string{fmt.Sprintf("version %d", next), fmt.Sprintf("up to %d", SchemaVersion()), "newer trit-fleet"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	// Nothing was changed: remove the future version and the data is there.
	db = mustOpenRaw(t, dsn, func(ctx context.Context, c *pgx.Conn) error {
		_, err := c.Exec(ctx, `DELETE FROM trit_schema_migrations WHERE version = $1`, next)
		return err
	})
	var d map[string]int
	if ok, err := db.Get(store.FleetDevices, "gw-1", &d); !ok || err != nil || d["n"] != 1 {
		t.Fatalf("after the refusal gw-1 = %v, %v, %v", d, ok, err)
	}
}

func TestBundleDamageDetected(t *testing.T) {
	db := open(t)
	defer db.Close()
	hash, err := db.PutBundle([]byte("signed bundle bytes"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.pool.Exec(context.Background(), `UPDATE trit_bundles SET data = 'tampered' WHERE hash = $1`, hash); err != nil {
		t.Fatal(err)
	}
	_, err = db.Bundle(hash)
	var ce *store.CorruptError
	if !errors.As(err, &ce) || ce.Key != hash {
		t.Fatalf("Bundle of changed bytes = %v, want a *CorruptError naming %s", err, hash)
	}
}

// TestWritersSerialisedAcrossReplicas is the suite's WritersSerialised
// with each writer on a DB of its own, as replicas are.
func TestWritersSerialisedAcrossReplicas(t *testing.T) {
	dsn := pgtest.Database(t)
	const replicas, each = 3, 10
	dbs := make([]*DB, replicas)
	for i := range dbs {
		dbs[i] = mustOpen(t, dsn)
	}
	var wg sync.WaitGroup
	errs := make(chan error, replicas)
	for _, db := range dbs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				err := db.Update(func(tx store.Tx) error {
					var n int
					if _, err := tx.Get(store.FleetModels, "counter", &n); err != nil {
						return err
					}
					return tx.Put(store.FleetModels, "counter", n+1)
				})
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var n int
	if _, err := dbs[0].Get(store.FleetModels, "counter", &n); err != nil || n != replicas*each {
		t.Fatalf("counter %d, %v; want %d", n, err, replicas*each)
	}
}

func TestOpenErrorsSayWhatAndKeepSecrets(t *testing.T) {
	srv := pgtest.Shared(t)
	for _, tc := range []struct{ dsn, want string }{
		{"postgres://trit:s3cret-pw@127.0.0.1:1/x?sslmode=disable&connect_timeout=2", "127.0.0.1"},
		{"postgres://trit:s3cret-pw@127.0.0.1:" + strconv.Itoa(srv.Port()) + "/no_such_db?sslmode=disable", "no_such_db"},
		{"postgres://trit:s3cret-pw@[::1", "cannot parse"},
	} {
		_, err := Open(tc.dsn, &Options{Timeout: 5 * time.Second})
		if err == nil {
			t.Errorf("Open(%s) succeeded", Redact(tc.dsn))
			continue
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("the error shows the password: %v", err)
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Open error %q does not say %q", err, tc.want)
		}
	}
	if r := Redact("postgres://u:pw@h/db?password=pw2"); strings.Contains(r, "pw") && !strings.Contains(r, "xxxxx") {
		t.Errorf("Redact = %q", r)
	}
	if r := Redact("postgres://u:pw@h/db?password=pw2"); strings.Contains(r, ":pw@") || strings.Contains(r, "pw2") {
		t.Errorf("Redact = %q shows a password", r)
	}
}

func mustOpen(t *testing.T, dsn string) *DB {
	t.Helper()
	db, err := Open(dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// mustOpenRaw runs fix on a plain connection, then opens the database.
func mustOpenRaw(t *testing.T, dsn string, fix func(context.Context, *pgx.Conn) error) *DB {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	if err := fix(ctx, c); err != nil {
		t.Fatal(err)
	}
	c.Close(ctx)
	return mustOpen(t, dsn)
}
