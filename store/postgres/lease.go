package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/trit-iot/trit/store"
)

// Leases: a named lease is held by one holder at a time, until it expires
// ttl after its last renewal. Expiry is measured by the database's clock
// (now()), so the replicas' clocks do not matter; a holder that dies is
// replaced at most ttl later. A holder that renews keeps it, and its term
// stays; a new holder gets the next term. Table trit_leases (migration 2).

// AcquireLease takes or renews lease name for holder for ttl, and reports
// whether holder has it now, with the lease's term (incremented at each
// change of holder).
func (db *DB) AcquireLease(name, holder string, ttl time.Duration) (held bool, term int64, err error) {
	if name == "" || holder == "" || ttl < time.Millisecond {
		return false, 0, fmt.Errorf("store/postgres: lease %q for %q, ttl %v: %w", name, holder, ttl, store.ErrInvalid)
	}
	ctx, cancel := context.WithTimeout(context.Background(), db.timeout)
	defer cancel()
	err = db.pool.QueryRow(ctx, `
INSERT INTO trit_leases (name, holder, expires, term) VALUES ($1, $2, clock_timestamp() + $3 * interval '1 millisecond', 1)
ON CONFLICT (name) DO UPDATE SET
	holder  = EXCLUDED.holder,
	expires = EXCLUDED.expires,
	term    = CASE WHEN trit_leases.holder = EXCLUDED.holder THEN trit_leases.term ELSE trit_leases.term + 1 END
WHERE trit_leases.holder = EXCLUDED.holder OR trit_leases.expires < clock_timestamp()
RETURNING term`, name, holder, ttl.Milliseconds()).Scan(&term)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, 0, nil
	}
	if err != nil {
		return false, 0, classify(fmt.Errorf("store/postgres: lease %s: %w", name, err))
	}
	return true, term, nil
}

// ReleaseLease gives lease name up if holder has it, so that another
// takes it at once rather than when it expires.
func (db *DB) ReleaseLease(name, holder string) error {
	ctx, cancel := context.WithTimeout(context.Background(), db.timeout)
	defer cancel()
	if _, err := db.pool.Exec(ctx, `DELETE FROM trit_leases WHERE name = $1 AND holder = $2`, name, holder); err != nil {
		return fmt.Errorf("store/postgres: release lease %s: %w", name, err)
	}
	return nil
}

// LeaseHolder returns who holds lease name now, or "" if no one does (never
// taken, released or expired).
func (db *DB) LeaseHolder(name string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), db.timeout)
	defer cancel()
	var holder string
	err := db.pool.QueryRow(ctx, `SELECT holder FROM trit_leases WHERE name = $1 AND expires >= clock_timestamp()`, name).Scan(&holder)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("store/postgres: lease %s: %w", name, err)
	}
	return holder, nil
}

// Fence checks, in the transaction, that lease name is held by holder in
// term and has not expired, and share-locks it until the transaction ends:
// no other replica can take it meanwhile (its AcquireLease waits), so a
// write made after Fence is one the lease holder made. Otherwise it
// returns store.ErrFenced.
func (tx *pgTx) Fence(name, holder string, term int64) error {
	if tx.done {
		return store.ErrTxDone
	}
	var one int
	err := tx.tx.QueryRow(tx.ctx, `SELECT 1 FROM trit_leases WHERE name = $1 AND holder = $2 AND term = $3 AND expires > clock_timestamp() FOR SHARE`,
		name, holder, term).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("store/postgres: lease %s: %s no longer holds it in term %d: %w", name, holder, term, store.ErrFenced)
	}
	if err != nil {
		return fmt.Errorf("store/postgres: lease %s: %w", name, err)
	}
	return nil
}
