package e2e

import (
	"os"
	"testing"

	"github.com/trit-iot/trit/store/postgres/pgtest"
)

// The package's PostgreSQL server (store/postgres/pgtest) starts with the
// first test that needs one; TestMain stops it.
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
