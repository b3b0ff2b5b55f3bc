package store_test

import (
	"path/filepath"
	"testing"

	"github.com/trit-iot/trit/store"
	"github.com/trit-iot/trit/store/storetest"
)

// TestStoreSuite runs the fleet stores' shared suite on the bbolt file.
func TestStoreSuite(t *testing.T) {
	storetest.Run(t, storetest.Backend{
		Open: func(t *testing.T) store.Database {
			db, err := store.Open(filepath.Join(t.TempDir(), "fleet.db"), nil)
			if err != nil {
				t.Fatal(err)
			}
			return db
		},
		Reopen: func(t *testing.T, db store.Database) store.Database {
			path := db.(*store.DB).Path()
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			db, err := store.Open(path, nil)
			if err != nil {
				t.Fatal(err)
			}
			return db
		},
	})
}
