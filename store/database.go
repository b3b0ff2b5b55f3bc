package store

// Database is the one contract every fleet store implements: the JSON
// document collections (Collection, through Tx) in transactions, and the
// bundles' bytes by their SHA-256. *DB (one bbolt file, the default) and
// *postgres.DB (store/postgres, for several replicas) implement it; the
// fleet runs over it and store/storetest is the suite both pass, so what
// the fleet relies on and what the suite checks cannot drift apart.
//
// Update runs its function in one read-write transaction, serialised with
// every other writer of the same database (across processes for
// PostgreSQL): what the function reads it may write back without another
// writer in between. View sees a consistent snapshot. Neither retries the
// function.
type Database interface {
	Update(fn func(tx Tx) error) error
	View(fn func(tx Tx) error) error
	Get(coll Collection, key string, v any) (bool, error)
	Put(coll Collection, key string, v any) error
	Delete(coll Collection, key string) error
	// ForEach copies a snapshot of coll out and calls fn after the
	// transaction: fn may write to the store.
	ForEach(coll Collection, fn func(key string, raw []byte) error) error
	PutBundle(data []byte) (string, error)
	Bundle(hash string) ([]byte, error)
	Close() error
}

var _ Database = (*DB)(nil)
