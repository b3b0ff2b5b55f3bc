package fleet

import (
	"github.com/trit-iot/trit/store"
)

// Store is what the service needs of its database: the JSON document
// collections (store.Collection) in transactions, and the bundles' bytes by
// their SHA-256. It is declared here, by its user; Store (one bbolt
// file, the default) and *postgres.DB (store/postgres, for several
// replicas) implement it, and store/storetest holds the one test suite
// both pass.
//
// Update runs its function in one read-write transaction, serialised with
// every other writer of the same database (across processes for
// PostgreSQL): what the function reads it may write back without another
// writer in between. View sees a consistent snapshot. Neither retries the
// function.
type Store interface {
	Update(fn func(tx store.Tx) error) error
	View(fn func(tx store.Tx) error) error
	Get(coll store.Collection, key string, v any) (bool, error)
	Put(coll store.Collection, key string, v any) error
	Delete(coll store.Collection, key string) error
	// ForEach copies a snapshot of coll out and calls fn after the
	// transaction: fn may write to the store.
	ForEach(coll store.Collection, fn func(key string, raw []byte) error) error
	PutBundle(data []byte) (string, error)
	Bundle(hash string) ([]byte, error)
	Close() error
}
