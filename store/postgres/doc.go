// Package postgres is the fleet's store on PostgreSQL, for several
// trit-fleet replicas against one database; package store's bbolt file
// stays the default for one process. It is the only package that imports
// pgx (github.com/jackc/pgx/v5).
//
// It implements the same contract as the bbolt file (store.Tx, the
// methods store.Database declares) and passes the same suite
// (store/storetest):
//
//   - Documents live in one table, trit_documents (collection, key, doc),
//     with the key in the "C" collation so that ForEach walks keys in byte
//     order, as bbolt does; doc is json (kept as written, \u0000 and all).
//     Bundles live in trit_bundles (hash, data), checked against their hash
//     when read.
//   - Update is one transaction that first takes a transaction-scoped
//     advisory lock (writeLock): writers are serialised across every
//     replica, as bbolt serialises them within a process, so what a
//     function reads it may write back without another writer in between.
//     Nothing is retried. View is a READ ONLY REPEATABLE READ transaction:
//     one snapshot.
//   - The schema is versioned (migrate.go): at Open, under another
//     advisory lock, the migrations not yet recorded in
//     trit_schema_migrations run in one transaction; a database whose
//     version is above this program's is refused (store.ErrSchemaTooNew)
//     and left untouched.
//   - Every operation is bounded by Options.Timeout.
//
// Backups are PostgreSQL's own (pg_dump; docs/OPERATIONS.md).
package postgres
