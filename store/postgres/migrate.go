package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/trit-iot/trit/store"
)

// migration is one step of the schema. A released migration never
// changes; a new schema is a new migration at the end.
type migration struct {
	version     int
	description string
	sql         string
}

// migrations is the schema, in order; versions are 1, 2, ...
var migrations = []migration{
	{1, "documents and bundles", `
CREATE TABLE trit_documents (
	collection text NOT NULL,
	key        text COLLATE "C" NOT NULL CHECK (octet_length(key) BETWEEN 1 AND 1024),
	doc        json NOT NULL,
	PRIMARY KEY (collection, key)
);
CREATE TABLE trit_bundles (
	hash text PRIMARY KEY CHECK (hash ~ '^[0-9a-f]{64}$'),
	data bytea NOT NULL
);`},
	{2, "leases: which replica steps rollouts", `
CREATE TABLE trit_leases (
	name    text PRIMARY KEY,
	holder  text NOT NULL,
	expires timestamptz NOT NULL,
	term    bigint NOT NULL
);`},
}

// SchemaVersion is the schema this program writes: the last migration's.
func SchemaVersion() int { return migrations[len(migrations)-1].version }

// Advisory lock keys ("trit" and a number), in PostgreSQL's one 64-bit
// key space shared by every application on the database.
const (
	migrateLock int64 = 0x74726974_0001
	writeLock   int64 = 0x74726974_0002
)

// migrate brings the database's schema to SchemaVersion in one
// transaction, or refuses a newer one. It returns the version found.
func (db *DB) migrate(ctx context.Context) (int, error) {
	tx, err := db.pool.Begin(ctx)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrateLock); err != nil {
		return 0, err
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS trit_schema_migrations (
	version     integer PRIMARY KEY,
	description text NOT NULL,
	applied_at  timestamptz NOT NULL DEFAULT now()
)`); err != nil {
		return 0, err
	}
	var found int
	if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM trit_schema_migrations`).Scan(&found); err != nil {
		return 0, err
	}
	if found > SchemaVersion() {
		return found, fmt.Errorf("store/postgres: the database's schema is version %d, this trit-fleet knows up to %d (a newer trit-fleet upgraded it): run that newer version, or restore a backup made before the upgrade: %w",
			found, SchemaVersion(), store.ErrSchemaTooNew)
	}
	for _, m := range migrations[found:] {
		if err := applyMigration(ctx, tx, m); err != nil {
			return found, err
		}
	}
	return found, tx.Commit(ctx)
}

func applyMigration(ctx context.Context, tx pgx.Tx, m migration) error {
	if _, err := tx.Exec(ctx, m.sql); err != nil {
		return fmt.Errorf("store/postgres: schema migration %d (%s): %w", m.version, m.description, err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO trit_schema_migrations (version, description) VALUES ($1, $2)`, m.version, m.description); err != nil {
		return fmt.Errorf("store/postgres: recording schema migration %d: %w", m.version, err)
	}
	return nil
}
