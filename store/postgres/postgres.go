package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/trit-iot/trit/store"
)

// Options configure Open. A nil *Options means the defaults.
type Options struct {
	// Timeout bounds each operation (a transaction with its function,
	// a bundle read or write); default 30 s. Open's connection and
	// migrations get the same.
	Timeout time.Duration
	// MaxConns bounds the connection pool; default 8.
	MaxConns int32
}

// DB is the fleet's store on one PostgreSQL database. It is safe for
// concurrent use, by goroutines and by other processes on the same
// database.
type DB struct {
	pool    *pgxpool.Pool
	timeout time.Duration
	from    int // the schema version found at Open
}

// Open connects to the database at dsn (a postgres:// URL or a key=value
// connection string, as libpq takes; a password belongs in a passfile,
// not in the URL) and brings its schema up to date.
func Open(dsn string, opt *Options) (*DB, error) {
	o := Options{Timeout: 30 * time.Second, MaxConns: 8}
	if opt != nil {
		if opt.Timeout > 0 {
			o.Timeout = opt.Timeout
		}
		if opt.MaxConns > 0 {
			o.MaxConns = opt.MaxConns
		}
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("store/postgres: %w", err) // pgconn redacts the password
	}
	cfg.MaxConns = o.MaxConns
	cfg.ConnConfig.ConnectTimeout = o.Timeout
	ctx, cancel := context.WithTimeout(context.Background(), o.Timeout)
	defer cancel()
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("store/postgres: %s: %w", Redact(dsn), err)
	}
	db := &DB{pool: pool, timeout: o.Timeout}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("store/postgres: %s: %w", Redact(dsn), err)
	}
	if db.from, err = db.migrate(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return db, nil
}

// Redact returns dsn with any password replaced by "xxxxx", for logs and
// messages.
func Redact(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil || u.Scheme == "" {
		return "(a PostgreSQL connection string)"
	}
	q := u.Query()
	if q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}

// MigratedFrom is the schema version the database had when Open found it
// (0: a new database); SchemaVersion is what it has now.
func (db *DB) MigratedFrom() int { return db.from }

// Close closes the connections.
func (db *DB) Close() error {
	db.pool.Close()
	return nil
}

// pgTx is store.Tx on a PostgreSQL transaction.
type pgTx struct {
	ctx      context.Context
	tx       pgx.Tx
	writable bool
	done     bool
}

func (tx *pgTx) check(coll store.Collection, key string, needKey, write bool) error {
	if tx.done {
		return store.ErrTxDone
	}
	if err := store.CheckCollection(coll); err != nil {
		return err
	}
	if needKey {
		if err := store.CheckKey(coll, key); err != nil {
			return err
		}
	}
	if write && !tx.writable {
		return fmt.Errorf("store/postgres: %s %q: a write in a read-only transaction (View): %w", coll, key, store.ErrInvalid)
	}
	return nil
}

// Put implements store.Tx.
func (tx *pgTx) Put(coll store.Collection, key string, v any) error {
	if err := tx.check(coll, key, true, true); err != nil {
		return err
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("store/postgres: put %s %q: %w", coll, key, err)
	}
	_, err = tx.tx.Exec(tx.ctx, `INSERT INTO trit_documents (collection, key, doc) VALUES ($1, $2, $3::text::json)
ON CONFLICT (collection, key) DO UPDATE SET doc = EXCLUDED.doc`, coll.String(), key, string(raw))
	if err != nil {
		return fmt.Errorf("store/postgres: put %s %q: %w", coll, key, err)
	}
	return nil
}

// Get implements store.Tx.
func (tx *pgTx) Get(coll store.Collection, key string, v any) (bool, error) {
	if err := tx.check(coll, key, true, false); err != nil {
		return false, err
	}
	var raw string
	err := tx.tx.QueryRow(tx.ctx, `SELECT doc::text FROM trit_documents WHERE collection = $1 AND key = $2`, coll.String(), key).Scan(&raw)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("store/postgres: get %s %q: %w", coll, key, err)
	}
	return true, store.DecodeDoc(coll, key, []byte(raw), v)
}

// Delete implements store.Tx.
func (tx *pgTx) Delete(coll store.Collection, key string) error {
	if err := tx.check(coll, key, true, true); err != nil {
		return err
	}
	tag, err := tx.tx.Exec(tx.ctx, `DELETE FROM trit_documents WHERE collection = $1 AND key = $2`, coll.String(), key)
	if err != nil {
		return fmt.Errorf("store/postgres: delete %s %q: %w", coll, key, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("store/postgres: delete %s %q: %w", coll, key, store.ErrNotFound)
	}
	return nil
}

// ForEach implements store.Tx. The documents are read first and fn called
// after, so fn may use the transaction (a connection runs one query at a
// time).
func (tx *pgTx) ForEach(coll store.Collection, fn func(key string, raw []byte) error) error {
	if err := tx.check(coll, "", false, false); err != nil {
		return err
	}
	docs, err := tx.all(coll)
	if err != nil {
		return err
	}
	for _, d := range docs {
		if err := fn(d.key, d.raw); err != nil {
			return err
		}
	}
	return nil
}

type doc struct {
	key string
	raw []byte
}

func (tx *pgTx) all(coll store.Collection) ([]doc, error) {
	rows, err := tx.tx.Query(tx.ctx, `SELECT key, doc::text FROM trit_documents WHERE collection = $1 ORDER BY key`, coll.String())
	if err != nil {
		return nil, fmt.Errorf("store/postgres: list %s: %w", coll, err)
	}
	docs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (doc, error) {
		var d doc
		var raw string
		err := row.Scan(&d.key, &raw)
		d.raw = []byte(raw)
		return d, err
	})
	if err != nil {
		return nil, fmt.Errorf("store/postgres: list %s: %w", coll, err)
	}
	return docs, nil
}

// Update runs fn in one read-write transaction, serialised with every
// other writer of the database (an advisory lock taken first): all its
// changes commit together if fn returns nil, none otherwise.
func (db *DB) Update(fn func(tx store.Tx) error) error {
	return db.run(pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, true, fn)
}

// View runs fn in one read-only transaction that sees one snapshot.
func (db *DB) View(fn func(tx store.Tx) error) error {
	return db.run(pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, false, fn)
}

func (db *DB) run(opts pgx.TxOptions, write bool, fn func(tx store.Tx) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), db.timeout)
	defer cancel()
	ptx, err := db.pool.BeginTx(ctx, opts)
	if err != nil {
		return classify(fmt.Errorf("store/postgres: begin: %w", err))
	}
	defer ptx.Rollback(context.Background()) // a no-op after Commit
	if write {
		// Writers one at a time, across replicas: bbolt's guarantee.
		if _, err := ptx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, writeLock); err != nil {
			return classify(fmt.Errorf("store/postgres: waiting for the write lock: %w", err))
		}
	}
	tx := &pgTx{ctx: ctx, tx: ptx, writable: write}
	err = fn(tx)
	tx.done = true
	if err != nil {
		return classify(err)
	}
	if err := ptx.Commit(ctx); err != nil {
		return classify(fmt.Errorf("store/postgres: commit: %w", err))
	}
	return nil
}

// Ping checks within ctx that the database answers (GET /readyz).
func (db *DB) Ping(ctx context.Context) error {
	if err := db.pool.Ping(ctx); err != nil {
		return classify(fmt.Errorf("store/postgres: %w", err))
	}
	return nil
}

// Put stores v under key in coll in its own transaction.
func (db *DB) Put(coll store.Collection, key string, v any) error {
	return db.Update(func(tx store.Tx) error { return tx.Put(coll, key, v) })
}

// Get decodes the document under key in coll into v and reports whether it
// exists.
func (db *DB) Get(coll store.Collection, key string, v any) (ok bool, err error) {
	err = db.View(func(tx store.Tx) error {
		ok, err = tx.Get(coll, key, v)
		return err
	})
	return ok, err
}

// Delete removes the document under key in coll, or returns
// store.ErrNotFound.
func (db *DB) Delete(coll store.Collection, key string) error {
	return db.Update(func(tx store.Tx) error { return tx.Delete(coll, key) })
}

// ForEach calls fn for every document of coll in key order, from a
// snapshot read in one transaction and copied out: fn may use the DB,
// writes included.
func (db *DB) ForEach(coll store.Collection, fn func(key string, raw []byte) error) error {
	var docs []doc
	err := db.View(func(tx store.Tx) error {
		ptx := tx.(*pgTx)
		if err := ptx.check(coll, "", false, false); err != nil {
			return err
		}
		var err error
		docs, err = ptx.all(coll)
		return err
	})
	if err != nil {
		return err
	}
	for _, d := range docs {
		if err := fn(d.key, d.raw); err != nil {
			return err
		}
	}
	return nil
}

// PutBundle stores data under its SHA-256 and returns the hash as
// lowercase hex. Storing bytes that are already present is a no-op.
func (db *DB) PutBundle(data []byte) (string, error) {
	if len(data) == 0 {
		return "", fmt.Errorf("store/postgres: put bundle: empty bundle: %w", store.ErrInvalid)
	}
	sum := sha256.Sum256(data)
	hash := hex.EncodeToString(sum[:])
	ctx, cancel := context.WithTimeout(context.Background(), db.timeout)
	defer cancel()
	if _, err := db.pool.Exec(ctx, `INSERT INTO trit_bundles (hash, data) VALUES ($1, $2) ON CONFLICT (hash) DO NOTHING`, hash, data); err != nil {
		return "", classify(fmt.Errorf("store/postgres: put bundle %s: %w", hash, err))
	}
	return hash, nil
}

// Bundle returns the bundle stored under hash, after checking that its
// content still hashes to it. A missing bundle is store.ErrNotFound.
func (db *DB) Bundle(hash string) ([]byte, error) {
	if len(hash) != 2*sha256.Size || !isLowerHex(hash) {
		return nil, fmt.Errorf("store/postgres: bundle: hash %.80q is not 64 lowercase hex digits: %w", hash, store.ErrInvalid)
	}
	ctx, cancel := context.WithTimeout(context.Background(), db.timeout)
	defer cancel()
	var data []byte
	err := db.pool.QueryRow(ctx, `SELECT data FROM trit_bundles WHERE hash = $1`, hash).Scan(&data)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("store/postgres: bundle %s: %w", hash, store.ErrNotFound)
	}
	if err != nil {
		return nil, classify(fmt.Errorf("store/postgres: bundle %s: %w", hash, err))
	}
	if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != hash {
		return nil, &store.CorruptError{Bucket: "trit_bundles", Key: hash, Err: errors.New("content does not match its SHA-256")}
	}
	return data, nil
}

func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// IsURL reports whether a configured database names PostgreSQL (a
// postgres:// or postgresql:// URL) rather than a bbolt file.
func IsURL(database string) bool {
	return strings.HasPrefix(database, "postgres://") || strings.HasPrefix(database, "postgresql://")
}

// CheckDSN parses dsn as Open would, without connecting.
func CheckDSN(dsn string) error {
	if _, err := pgxpool.ParseConfig(dsn); err != nil {
		return fmt.Errorf("store/postgres: %w", err)
	}
	return nil
}
