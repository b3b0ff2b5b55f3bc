package fleet

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/trit-iot/trit/api"
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
	const ttl = time.Second
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
	if d, err := DeviceByID(a.db, "gw-1"); err != nil || d.Predictions != 30 {
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
