package fleet

import (
	"context"
	"errors"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet/fleettest"
	"github.com/trit-iot/trit/fleet/inventory"
	"github.com/trit-iot/trit/store"
	"github.com/trit-iot/trit/store/postgres"
	"github.com/trit-iot/trit/store/postgres/pgtest"
	"github.com/trit-iot/trit/wire"
)

// replica is a fixture of its own (publisher, clock) on a shared
// PostgreSQL database, as a trit-fleet replica is.
func replica(t *testing.T, dsn, name string, ttl time.Duration) *fixture {
	t.Helper()
	db, err := postgres.Open(dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return newFixtureOn(t, db, func(o *Options) { o.Replica, o.LeaseTTL, o.Tick = name, ttl, ttl/4 })
}

func metricLine(t *testing.T, f *fixture, name string) string {
	t.Helper()
	rec := httptest.NewRecorder()
	f.svc.MetricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, line := range strings.Split(rec.Body.String(), "\n") {
		if strings.HasPrefix(line, name+"{") {
			return line
		}
	}
	return ""
}

// TestReplicasOneLeads runs two replicas on one database: one steps the
// rollout, the other serves the API and device messages; when the leader
// stops (dies, renewing nothing), the other takes over within the lease
// and finishes the rollout; every device gets one command; the metrics say
// who leads.
func TestReplicasOneLeads(t *testing.T) {
	dsn := pgtest.Database(t)
	// The lease runs on real time: two seconds, and a renewal right before
	// the follower's tick below, so that a loaded machine (a PostgreSQL
	// round trip taking most of a second) does not hand the lease over
	// before the test means it to (make test beside other jobs: b took it
	// and sent the canary at a one-second lease).
	const ttl = 2 * time.Second
	a, b := replica(t, dsn, "a", ttl), replica(t, dsn, "b", ttl)
	for _, id := range []string{"gw-1", "gw-2", "gw-3", "gw-4"} {
		a.online(t, id, nil)
	}
	hash := a.addBundle(t, 1)
	a.svc.Tick()
	b.svc.Tick()
	if !a.svc.Leading() || b.svc.Leading() {
		t.Fatalf("leading: a %v, b %v; want a only", a.svc.Leading(), b.svc.Leading())
	}
	if who, err := b.svc.Leader(); err != nil || who != "a" {
		t.Fatalf("b says the leader is %q, %v", who, err)
	}
	// Created through the follower's API, stepped by the leader.
	if _, err := b.svc.CreateRollout(api.RolloutRequest{ID: "r", Bundle: hash, Devices: []string{"gw-1", "gw-2", "gw-3", "gw-4"},
		Pace: api.Pace{Phases: []api.Phase{{Count: 1}, {Percent: 100}}}}); err != nil {
		t.Fatal(err)
	}
	a.svc.Tick() // renews the lease; a's index has not seen r yet
	b.svc.Tick()
	a.clk.t = a.clk.t.Add(leaseRescan)
	lastRenewal := time.Now()
	a.svc.Tick()
	if n := len(b.commands(t)); n != 0 {
		t.Fatalf("the follower sent %d commands", n)
	}
	canary := a.commands(t)
	if len(canary) != 1 {
		t.Fatalf("the leader sent %d canary commands, want 1", len(canary))
	}
	// Device messages reach whichever replica; the state is shared. Each
	// replica receives every telemetry report (no shared subscription):
	// a report is counted once, however many replicas apply it.
	b.report(t, canary[0], wire.JobSucceeded)
	for seq := uint64(1); seq <= 3; seq++ {
		tm := &wire.Telemetry{Device: "gw-1", Session: 2, Seq: seq, From: 1, To: 2, Predictions: 10}
		a.telemetry(t, tm)
		b.telemetry(t, tm)
	}
	if d, err := inventory.DeviceByID(a.db, "gw-1"); err != nil || d.Predictions != 30 {
		t.Fatalf("gw-1's predictions after three reports of 10, each delivered to both replicas: %v, %v; want 30", d.Predictions, err)
	}
	if l := metricLine(t, a, "trit_fleet_leading"); l != `trit_fleet_leading{replica="a"} 1` {
		t.Errorf("a's metric %q", l)
	}
	if l := metricLine(t, b, "trit_fleet_leading"); l != `trit_fleet_leading{replica="b"} 0` {
		t.Errorf("b's metric %q", l)
	}

	// a dies: it renews nothing from now on. b takes over once the lease
	// expires, and not before.
	for !b.svc.Leading() {
		if time.Since(lastRenewal) > 3*ttl {
			t.Fatalf("b did not take over within %v", 3*ttl)
		}
		time.Sleep(ttl / 20)
		b.svc.Tick()
	}
	took := time.Since(lastRenewal)
	if took < ttl*9/10 {
		t.Fatalf("b took over %v after a's last renewal, before its lease of %v expired", took, ttl)
	}
	t.Logf("takeover %v after the leader's last renewal (lease %v)", took, ttl)
	if b := b.pub.take("/bundles/"); len(b) == 0 {
		t.Error("the new leader did not publish the running rollout's bundle again")
	}
	rest := map[string]uint64{}
	for _, c := range b.commands(t) {
		if seq, ok := rest[c.Device]; ok && seq != c.Seq {
			t.Fatalf("%s got sequences %d and %d", c.Device, seq, c.Seq)
		}
		rest[c.Device] = c.Seq
		if c.Device == canary[0].Device {
			t.Fatalf("the canary, which finished, got another command")
		}
	}
	if len(rest) != 3 {
		t.Fatalf("the new leader sent commands to %d devices, want the 3 left", len(rest))
	}
	for dev, seq := range rest {
		b.report(t, &wire.Command{Device: dev, Rollout: "r", Seq: seq, Bundle: hash}, wire.JobSucceeded)
	}
	b.svc.Tick()
	r, err := a.svc.GetRollout("r")
	if err != nil || r.State != api.RolloutCompleted || r.Successes != 4 {
		t.Fatalf("rollout %v: %s, %d successes", err, r.State, r.Successes)
	}
	a.svc.Tick() // a is back: it follows
	if a.svc.Leading() {
		t.Fatal("a took the lease back from a live leader")
	}
	if l := metricLine(t, b, "trit_fleet_leading"); l != `trit_fleet_leading{replica="b"} 1` {
		t.Errorf("b's metric %q", l)
	}
	if l := metricLine(t, b, "trit_fleet_leader_changes_total"); l != `trit_fleet_leader_changes_total{replica="b"} 1` {
		t.Errorf("b's metric %q", l)
	}

	// A clean shutdown hands over at once.
	b.svc.ReleaseLead()
	a.svc.Tick()
	if !a.svc.Leading() {
		t.Fatal("a did not lead at its first tick after b released the lease")
	}
	b.svc.Tick()
	if b.svc.Leading() {
		t.Fatal("b leads again after releasing")
	}
}

// unplugged is a publisher whose broker connection the test switches.
type unplugged struct {
	*recorder
	down atomic.Bool
}

func (u *unplugged) Connected() bool { return !u.down.Load() }

// runReplica runs a replica's service loop (with its lease renewals)
// until the test ends.
func runReplica(t *testing.T, f *fixture) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { f.svc.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

// waitLeading waits until exactly f leads among fs, and checks at every
// look that no two lead at once.
func waitLeading(t *testing.T, f *fixture, within time.Duration, fs ...*fixture) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		n := 0
		for _, g := range fs {
			if g.svc.Leading() {
				n++
			}
		}
		if n > 1 {
			t.Fatal("two replicas lead at once")
		}
		if f.svc.Leading() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not lead within %v", f.svc.opt.Replica, within)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestLeaseHoldsWhileLoopStarved: the leader's loop is stuck (a slow batch
// or tick holds it for two leases): its lease is renewed apart from the
// loop, so it keeps leading and the other replica never does. Before,
// renewals waited for the loop and the lease flapped under CPU
// starvation with nothing killed.
func TestLeaseHoldsWhileLoopStarved(t *testing.T) {
	dsn := pgtest.Database(t)
	// A lease of 3 s: renewals every second, any one of three enough, so
	// a loaded machine delaying one does not end it.
	const ttl = 3 * time.Second
	a := replica(t, dsn, "a", ttl)
	runReplica(t, a)
	waitLeading(t, a, 30*time.Second, a)
	b := replica(t, dsn, "b", ttl)
	runReplica(t, b)
	a.svc.mu.Lock() // the loop is stuck
	end := time.Now().Add(2 * ttl)
	for time.Now().Before(end) {
		if b.svc.Leading() || !a.svc.Leading() {
			a.svc.mu.Unlock()
			t.Fatalf("while a's loop was stuck: a leads %v, b leads %v", a.svc.Leading(), b.svc.Leading())
		}
		time.Sleep(10 * time.Millisecond)
	}
	a.svc.mu.Unlock()
	if who, err := b.svc.Leader(); err != nil || who != "a" {
		t.Fatalf("the lease is %q's (%v), want a's", who, err)
	}
}

// TestDeposedLeaderFenced: a leader whose lease lapsed (paused past it,
// its renewals starved) stops saying it leads before the other replica
// takes the lease, and its step — a leader-only write — is refused with
// store.ErrFenced, not applied over the new leader's; its write as the
// leader, before, went through.
func TestDeposedLeaderFenced(t *testing.T) {
	dsn := pgtest.Database(t)
	// The lease must outlast the pause between a's tick and its first
	// write, which the test needs a to make as leader: 500 ms lapsed there
	// on a machine at load 20.
	const ttl = 3 * time.Second
	a, b := replica(t, dsn, "a", ttl), replica(t, dsn, "b", ttl)
	a.svc.Tick()
	if !a.svc.Leading() {
		t.Fatal("a does not lead")
	}
	put := func(f *fixture, v string) error {
		return f.svc.leaderUpdate(func(tx store.Tx) error {
			return tx.Put(store.FleetDevices, "fenced", &inventory.Device{Device: api.Device{ID: v}})
		})
	}
	if err := put(a, "a"); err != nil {
		t.Fatalf("the leader's write: %v", err)
	}
	// a pauses; b ticks until it takes over. Never both at once.
	for !b.svc.Leading() {
		if a.svc.Leading() && b.svc.Leading() {
			t.Fatal("two replicas lead at once")
		}
		b.svc.Tick()
		time.Sleep(ttl / 20)
	}
	if a.svc.Leading() {
		t.Fatal("a still says it leads after b took the lease")
	}
	if err := put(a, "a-late"); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("the deposed leader's write: %v, want store.ErrFenced", err)
	}
	if err := put(b, "b"); err != nil {
		t.Fatalf("the new leader's write: %v", err)
	}
	var d inventory.Device
	if _, err := b.db.Get(store.FleetDevices, "fenced", &d); err != nil || d.ID != "b" {
		t.Fatalf("stored %q (%v), want b's write", d.ID, err)
	}
}

// TestLeaderWithoutBrokerGivesUp: a leader that cannot reach the broker
// (it could not publish a command) gives the lease up at its second
// renewal without one, and the replica that can takes over; it does not
// take the lease back while its broker is unreachable.
func TestLeaderWithoutBrokerGivesUp(t *testing.T) {
	dsn := pgtest.Database(t)
	const ttl = 900 * time.Millisecond
	db, err := postgres.Open(dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	pub := &unplugged{recorder: &recorder{}}
	logs := &fleettest.LockedBuffer{}
	a := newFixtureOn(t, db, func(o *Options) {
		o.Replica, o.LeaseTTL, o.Tick, o.Logger = "a", ttl, ttl/4, slog.New(slog.NewTextHandler(logs, nil))
	})
	a.svc.pub = pub
	runReplica(t, a)
	waitLeading(t, a, 30*time.Second, a)
	b := replica(t, dsn, "b", ttl)
	runReplica(t, b)
	pub.down.Store(true)
	lost := time.Now()
	waitLeading(t, b, 30*time.Second, a, b)
	took := time.Since(lost)
	if !strings.Contains(logs.String(), "giving up the rollout lease") {
		t.Errorf("a did not give the lease up (b took over %v after, as it would once the lease expired):\n%s", took, logs.String())
	}
	time.Sleep(2 * ttl)
	if a.svc.Leading() || !b.svc.Leading() {
		t.Fatalf("a leads %v, b %v: want b, a without a broker", a.svc.Leading(), b.svc.Leading())
	}
	t.Logf("b led %v after a lost its broker (lease %v)", took.Round(time.Millisecond), ttl)
}
