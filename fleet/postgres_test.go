package fleet

import (
	"os"
	"testing"

	"github.com/trit-iot/trit/store"
	"github.com/trit-iot/trit/store/postgres"
	"github.com/trit-iot/trit/store/postgres/pgtest"
)

// The package's PostgreSQL server starts with the first test that needs
// it; TestMain stops it.
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func openPostgres(t testing.TB) store.Database {
	t.Helper()
	db, err := postgres.Open(pgtest.Database(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestServiceOnPostgres runs the service's rollout tests on a PostgreSQL
// store: registry, inventory, rollouts, events and a restart over the same
// database.
func TestServiceOnPostgres(t *testing.T) {
	for _, tc := range []struct {
		name string
		fn   func(*testing.T, *fixture)
	}{
		{"RolloutEndToEnd", testServiceRolloutEndToEnd},
		{"CanaryAbortAndRollback", testServiceCanaryAbortAndRollback},
		{"ResumesAfterRestart", testServiceResumesAfterRestart},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, newFixtureOn(t, openPostgres(t))) })
	}
}
