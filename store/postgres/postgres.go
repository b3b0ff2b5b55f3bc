package postgres

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"slices"
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

// DB is a store.Database, the contract every fleet store implements.
var _ store.Database = (*DB)(nil)

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

// pgTx is store.Tx on a PostgreSQL transaction. Documents it reads or
// writes are kept in cache; writes are sent in one statement of many rows
// when the transaction commits (or before a query that must see them, or
// every maxPending rows), not one round trip each: a batch of device
// messages writes a device's record and health documents many times, and
// sends each once.
type pgTx struct {
	ctx      context.Context
	tx       pgx.Tx
	writable bool
	// shared: the transaction holds the write lock shared (UpdateShared),
	// so another may run beside it: every document it reads is locked
	// (FOR UPDATE; a missing one by an advisory lock on its key) until
	// it commits.
	shared bool
	done   bool
	cache  map[docKey]cachedDoc
	dirty  map[docKey]bool // cached documents written and not yet sent
}

type docKey struct{ coll, key string }

type cachedDoc struct {
	raw    []byte
	exists bool
}

// maxPending bounds the written documents a transaction holds before it
// sends them.
const maxPending = 2048

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
	raw, err := store.EncodeDoc(coll, key, v)
	if err != nil {
		return err
	}
	k := docKey{coll.String(), key}
	tx.cache[k] = cachedDoc{raw: raw, exists: true}
	tx.dirty[k] = true
	if len(tx.dirty) >= maxPending {
		return tx.flush()
	}
	return nil
}

// flush sends the documents written since the last flush, in key order
// (rows locked in one order by every transaction), as one statement: an
// unnamed one planned each time, like query's, its types described once
// per connection so that the documents go as binary text[] elements —
// in the text format every quote of every JSON document was escaped, a
// tenth of the fleet's CPU a report (docs/BENCHMARKS.md "Intake").
func (tx *pgTx) flush() error {
	if len(tx.dirty) == 0 {
		return nil
	}
	keys := make([]docKey, 0, len(tx.dirty))
	for k := range tx.dirty {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b docKey) int { return cmp.Or(cmp.Compare(a.coll, b.coll), cmp.Compare(a.key, b.key)) })
	colls, names, docs := make([]string, len(keys)), make([]string, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		colls[i], names[i], docs[i] = k.coll, k.key, string(tx.cache[k].raw)
	}
	_, err := tx.tx.Exec(tx.ctx, `INSERT INTO trit_documents (collection, key, doc)
SELECT c, k, d::json FROM unnest($1::text[], $2::text[], $3::text[]) AS u(c, k, d)
ON CONFLICT (collection, key) DO UPDATE SET doc = EXCLUDED.doc`, pgx.QueryExecModeCacheDescribe, colls, names, docs)
	if err != nil {
		return fmt.Errorf("store/postgres: writing %d documents (first %s %q): %w", len(keys), keys[0].coll, keys[0].key, err)
	}
	clear(tx.dirty)
	return nil
}

// Get implements store.Tx.
func (tx *pgTx) Get(coll store.Collection, key string, v any) (bool, error) {
	if err := tx.check(coll, key, true, false); err != nil {
		return false, err
	}
	k := docKey{coll.String(), key}
	d, ok := tx.cache[k]
	if !ok {
		if err := tx.load(coll, []string{key}); err != nil {
			return false, err
		}
		d = tx.cache[k]
	}
	if !d.exists {
		return false, nil
	}
	return true, store.DecodeDoc(coll, key, d.raw, v)
}

// Prefetch reads the documents of coll under keys into the transaction
// in one query (those already read or written are kept as they are), so
// that the Gets that follow are served from memory. In a shared write
// transaction it locks them, in key order.
func (tx *pgTx) Prefetch(coll store.Collection, keys []string) error {
	if err := tx.check(coll, "", false, false); err != nil {
		return err
	}
	var todo []string
	for _, key := range keys {
		if err := store.CheckKey(coll, key); err != nil {
			return err
		}
		if _, ok := tx.cache[docKey{coll.String(), key}]; !ok {
			todo = append(todo, key)
		}
	}
	if len(todo) == 0 {
		return nil
	}
	slices.Sort(todo)
	return tx.load(coll, slices.Compact(todo))
}

// load reads keys (sorted, not cached) into the cache. In a shared write
// transaction the rows found are locked (FOR UPDATE, in key order), and a
// key not found is locked by an advisory lock on its name, then read
// again: two transactions creating the same document take turns, the
// second sees the first's.
func (tx *pgTx) load(coll store.Collection, keys []string) error {
	lock := ""
	if tx.shared {
		lock = " FOR UPDATE"
	}
	found, err := tx.query(coll, keys, lock)
	if err != nil {
		return err
	}
	var missing []string
	for _, key := range keys {
		if _, ok := found[key]; !ok {
			missing = append(missing, key)
		}
	}
	if tx.shared && len(missing) > 0 {
		if _, err := tx.tx.Exec(tx.ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1 || '/' || k, 0)) FROM unnest($2::text[]) AS u(k) ORDER BY k`,
			coll.String(), missing); err != nil {
			return fmt.Errorf("store/postgres: locking %d new %s documents: %w", len(missing), coll, err)
		}
		again, err := tx.query(coll, missing, lock)
		if err != nil {
			return err
		}
		for key, raw := range again {
			found[key] = raw
		}
	}
	for _, key := range keys {
		raw, ok := found[key]
		tx.cache[docKey{coll.String(), key}] = cachedDoc{raw: raw, exists: ok}
	}
	return nil
}

func (tx *pgTx) query(coll store.Collection, keys []string, lock string) (map[string][]byte, error) {
	// Planned for its own keys each time (an unnamed statement, never a
	// prepared one): a plan made generic once would keep whatever it chose
	// for a tiny table — a PostgreSQL measured spent 4 times the CPU a
	// report with a generic plan (docs/BENCHMARKS.md "Intake"). Its
	// parameter and column types are described once per connection
	// (QueryExecModeCacheDescribe), so the arrays travel in binary.
	rows, err := tx.tx.Query(tx.ctx, `SELECT key, doc::text FROM trit_documents WHERE collection = $1 AND key = ANY($2::text[]) ORDER BY key`+lock,
		pgx.QueryExecModeCacheDescribe, coll.String(), keys)
	if err != nil {
		return nil, fmt.Errorf("store/postgres: get %s %q: %w", coll, keys[0], err)
	}
	found := map[string][]byte{}
	for rows.Next() {
		var key, raw string
		if err := rows.Scan(&key, &raw); err != nil {
			rows.Close()
			return nil, fmt.Errorf("store/postgres: get %s %q: %w", coll, keys[0], err)
		}
		found[key] = []byte(raw)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store/postgres: get %s %q: %w", coll, keys[0], err)
	}
	return found, nil
}

// Delete implements store.Tx.
func (tx *pgTx) Delete(coll store.Collection, key string) error {
	if err := tx.check(coll, key, true, true); err != nil {
		return err
	}
	k := docKey{coll.String(), key}
	pending := tx.dirty[k] // written in this transaction: it exists
	delete(tx.dirty, k)
	tx.cache[k] = cachedDoc{}
	tag, err := tx.tx.Exec(tx.ctx, `DELETE FROM trit_documents WHERE collection = $1 AND key = $2`, coll.String(), key)
	if err != nil {
		return fmt.Errorf("store/postgres: delete %s %q: %w", coll, key, err)
	}
	if tag.RowsAffected() == 0 && !pending {
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

// all reads coll, with this transaction's writes (sent first).
func (tx *pgTx) all(coll store.Collection) ([]doc, error) {
	if err := tx.flush(); err != nil {
		return nil, err
	}
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
// other writer of the database (an advisory lock taken first, exclusive):
// all its changes commit together if fn returns nil, none otherwise.
func (db *DB) Update(fn func(tx store.Tx) error) error {
	return db.run(pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, lockExclusive, fn)
}

// UpdateShared is Update for a transaction that touches only documents it
// reads by key (Get, Prefetch) or writes without reading them: it holds
// the write lock shared, so such transactions run side by side — from
// one replica or several — each document they read locked until commit
// (rows FOR UPDATE, a missing document by an advisory lock on its key),
// while an Update waits for all of them and they for it. A deadlock
// between two of them (one is cancelled by PostgreSQL) returns an error
// matching store.ErrConflict: the whole function may be run again. The
// fleet's intake uses it (fleet/intake.go).
func (db *DB) UpdateShared(fn func(tx store.Tx) error) error {
	return db.run(pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, lockShared, fn)
}

// View runs fn in one read-only transaction that sees one snapshot.
func (db *DB) View(fn func(tx store.Tx) error) error {
	return db.run(pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, lockNone, fn)
}

// How a transaction holds the write lock.
const (
	lockNone = iota
	lockShared
	lockExclusive
)

func (db *DB) run(opts pgx.TxOptions, lock int, fn func(tx store.Tx) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), db.timeout)
	defer cancel()
	ptx, err := db.pool.BeginTx(ctx, opts)
	if err != nil {
		return classify(fmt.Errorf("store/postgres: begin: %w", err))
	}
	defer ptx.Rollback(context.Background()) // a no-op after Commit
	switch lock {
	case lockExclusive:
		// Writers one at a time, across replicas: bbolt's guarantee.
		if _, err := ptx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, writeLock); err != nil {
			return classify(fmt.Errorf("store/postgres: waiting for the write lock: %w", err))
		}
	case lockShared:
		if _, err := ptx.Exec(ctx, `SELECT pg_advisory_xact_lock_shared($1)`, writeLock); err != nil {
			return classify(fmt.Errorf("store/postgres: waiting for the write lock: %w", err))
		}
	}
	tx := &pgTx{ctx: ctx, tx: ptx, writable: lock != lockNone, shared: lock == lockShared,
		cache: map[docKey]cachedDoc{}, dirty: map[docKey]bool{}}
	err = fn(tx)
	if err == nil {
		err = tx.flush()
	}
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
