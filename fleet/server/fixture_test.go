package server

import (
	"crypto/ed25519"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/trit-iot/trit/fleet"
	"github.com/trit-iot/trit/fleet/fleettest"
	"github.com/trit-iot/trit/inference/bundle"
	"github.com/trit-iot/trit/store"
	"github.com/trit-iot/trit/store/postgres"
	"github.com/trit-iot/trit/store/postgres/pgtest"
	"github.com/trit-iot/trit/wire"
)

// The package's PostgreSQL server starts with the first test that needs
// it; TestMain stops it.
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// The tests of the API drive a service over a store on a test clock, its
// commands published nowhere: what the server adds to the service is
// tested here, the service itself in package fleet.

var t0 = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

// nowhere is a Publisher that drops everything.
type nowhere struct{}

func (nowhere) Publish(string, byte, bool, []byte) error { return nil }

type fixture struct {
	svc     *fleet.Service
	clk     *clock
	db      store.Database
	release ed25519.PrivateKey
}

func newFixture(t testing.TB, tweak ...func(*fleet.Options)) *fixture {
	t.Helper()
	return newFixtureOn(t, fleettest.OpenStore(t), tweak...)
}

// newFixtureOn is newFixture on the given store.
func newFixtureOn(t testing.TB, db store.Database, tweak ...func(*fleet.Options)) *fixture {
	t.Helper()
	f := &fixture{clk: &clock{t0}, db: db, release: fleettest.Key(1)}
	ks, err := bundle.NewKeySet(f.release.Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	opt := &fleet.Options{Now: f.clk.now, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for _, tw := range tweak {
		tw(opt)
	}
	f.svc, err = fleet.NewService(db, fleet.NewRegistry(db, ks, 0, f.clk.now), "f", nowhere{}, fleettest.Key(2), opt)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) addBundle(t *testing.T, release uint64) string {
	t.Helper()
	info, err := f.svc.Registry().Add(fleettest.SignedBundle(t, "vib", release, f.release))
	if err != nil {
		t.Fatal(err)
	}
	return info.Hash
}

func (f *fixture) online(t *testing.T, id string, labels map[string]string) {
	t.Helper()
	f.state(t, &wire.State{Device: id, Session: 1, Online: true, Labels: labels, Health: "ok"})
}

// running reports device id online, running bundle hash of model vib.
func (f *fixture) running(t *testing.T, id, hash string) {
	t.Helper()
	f.state(t, &wire.State{Device: id, Session: 1, Online: true, Health: "ok", Model: &wire.ModelRef{ID: "vib", Release: 1, Bundle: hash, Install: "committed"}})
}

// state delivers a device state and handles it.
func (f *fixture) state(t *testing.T, st *wire.State) {
	t.Helper()
	raw, err := st.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	f.svc.Deliver(f.svc.Topics().State(st.Device), raw)
	f.svc.Drain()
}

func openPostgres(t testing.TB) store.Database {
	t.Helper()
	db, err := postgres.Open(pgtest.Database(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
