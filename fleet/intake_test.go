package fleet

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/trit-iot/trit/fleet/fleettest"
	"github.com/trit-iot/trit/fleet/inventory"
	"github.com/trit-iot/trit/store"
	"github.com/trit-iot/trit/wire"
)

// telemetryFrom delivers n telemetry reports of one prediction each from
// device, with sequence numbers from seq.
func (f *fixture) telemetryFrom(t *testing.T, device string, seq uint64, n int) {
	t.Helper()
	for i := range n {
		tm := &wire.Telemetry{Device: device, Session: 1, Seq: seq + uint64(i), From: 1, To: 2, Predictions: 1}
		raw, err := tm.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		f.svc.Deliver(f.svc.Topics().Telemetry(device), raw)
	}
}

func (f *fixture) predictions(t *testing.T, device string) uint64 {
	t.Helper()
	d, err := inventory.DeviceByID(f.db, device)
	if err != nil {
		t.Fatalf("%s: %v", device, err)
	}
	return d.Predictions
}

// TestIntakeFairShare: one device fills the fleet's incoming queue, then
// five others report while it is full. Every report of the five is
// stored; only the flooder's messages are dropped, and they are counted on
// its record. (With one shared queue the five lost everything.)
func TestIntakeFairShare(t *testing.T) {
	logs := &fleettest.LockedBuffer{}
	f := newFixture(t, func(o *Options) { o.Queue = 100; o.Logger = slog.New(slog.NewTextHandler(logs, nil)) })
	const flood, each = 1000, 10
	others := []string{"gw-1", "gw-2", "gw-3", "gw-4", "gw-5"}
	f.telemetryFrom(t, "flood", 1, flood)
	for _, id := range others {
		f.telemetryFrom(t, id, 1, each)
	}
	f.svc.Drain()
	for _, id := range others {
		if got := f.predictions(t, id); got != each {
			t.Errorf("%s: %d of its %d reports stored while another device flooded", id, got, each)
		}
	}
	stored := f.predictions(t, "flood")
	if stored == 0 || stored > 100 {
		t.Errorf("the flooder had %d reports stored; want some, at most the queue's 100", stored)
	}
	d, err := inventory.DeviceByID(f.db, "flood")
	if err != nil {
		t.Fatal(err)
	}
	if d.Limited == nil || d.Limited.Queue != flood-stored || d.Limited.Dropped() != flood-stored {
		t.Errorf("the flooder's record counts %+v; want %d dropped from the queue (%d of %d stored)", d.Limited, flood-stored, stored, flood)
	}
	for _, id := range others {
		if d, _ := inventory.DeviceByID(f.db, id); d != nil && d.Limited != nil {
			t.Errorf("%s counted as limited: %+v", id, d.Limited)
		}
	}
	if got := f.svc.metrics.dropped.Load(); got != flood-stored {
		t.Errorf("trit_fleet_dropped_messages_total %d, want %d", got, flood-stored)
	}
	if n := strings.Count(logs.String(), "incoming queue full"); n != 1 {
		t.Errorf("%d log lines for %d drops, want 1 (then at most one a minute):\n%.2000s", n, flood-stored, logs.String())
	}
	rec := httptest.NewRecorder()
	f.svc.MetricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	want := fmt.Sprintf(`trit_fleet_device_dropped_messages_total{device="flood",reason="queue"} %d`, flood-stored)
	if m := rec.Body.String(); !strings.Contains(m, want) || strings.Contains(m, `device="gw-1"`) {
		t.Errorf("metrics lack %s, or count another device:\n%s", want, m)
	}
}

// TestFairQueue: the queue serves devices in turn, drops only from the
// device holding the most, never lets the total pass its bound, and keeps
// no entry for a device with nothing queued.
func TestFairQueue(t *testing.T) {
	q := newFairQueue(10, 1<<20)
	msg := func(s string) message { return message{topic: s} }
	for i := range 8 {
		if d := q.push("flood", msg(fmt.Sprint("f", i))); d != nil {
			t.Fatalf("dropped %s below the bound", d)
		}
	}
	q.push("a", msg("a0"))
	q.push("b", msg("b0"))
	// Full: a newcomer pushes out the flooder's oldest, never a's or b's.
	for i, d := range []string{"c", "d", "a", "b"} {
		if got := q.push(d, msg(d+"1")); !slices.Equal(got, []string{"flood"}) {
			t.Fatalf("push %d from %s dropped %q's message, want flood's", i, d, got)
		}
	}
	if q.len() != 10 {
		t.Fatalf("%d queued, want the bound 10", q.len())
	}
	// Now flood holds 4, a and b 2, c and d 1: flood pays for itself.
	if got := q.push("flood", msg("f8")); !slices.Equal(got, []string{"flood"}) {
		t.Fatalf("the flooder's own push dropped %q's message", got)
	}
	var order []string
	for _, m := range q.take(6) {
		order = append(order, m.topic)
	}
	// One per device in turn, oldest first; f0…f4 were dropped.
	if want := "f5 a0 b0 c1 d1 f6"; strings.Join(order, " ") != want {
		t.Errorf("served %v, want %s", order, want)
	}
	if got := q.takeDropped(); got["flood"] != 5 || len(got) != 1 {
		t.Errorf("drops %v, want flood: 5", got)
	}
	rest := q.take(100)
	if len(rest) != 4 || q.len() != 0 || len(q.by) != 0 || len(q.byLen) != 0 || q.longest != 0 {
		t.Errorf("after taking all: %d taken, %d left, %d devices, %v lengths, longest %d", len(rest), q.len(), len(q.by), q.byLen, q.longest)
	}
	// Every device holds one: a newcomer's message is the one refused.
	for i := range 10 {
		q.push(fmt.Sprint("gw-", i), msg("x"))
	}
	if got := q.push("gw-new", msg("y")); !slices.Equal(got, []string{"gw-new"}) || q.len() != 10 {
		t.Errorf("a newcomer to a queue of ten single messages dropped %q's", got)
	}
}

// TestFairQueueBytes: the byte bound drops as the message bound does —
// from the device holding the most, as many messages as the newcomer needs
// room for — and a queue of one message may pass it (a message is bounded
// by the packet size, not by the queue).
func TestFairQueueBytes(t *testing.T) {
	q := newFairQueue(1000, 100)
	msg := func(topic string, n int) message { return message{topic: topic, payload: make([]byte, n)} }
	for i := range 8 { // flood: 8 × 10 bytes
		if d := q.push("flood", msg(fmt.Sprint("f", i), 8)); d != nil {
			t.Fatalf("dropped %v below the byte bound", d)
		}
	}
	if d := q.push("a", msg("a0", 8)); d != nil { // 90 bytes
		t.Fatalf("dropped %v below the byte bound", d)
	}
	// 40 bytes more need three of flood's messages out, none of a's.
	if got := q.push("b", msg("b0", 38)); !slices.Equal(got, []string{"flood", "flood", "flood"}) {
		t.Fatalf("a 40-byte message dropped %v, want three of flood's", got)
	}
	if q.bytes != 100 || q.len() != 7 {
		t.Fatalf("%d bytes in %d messages, want 100 in 7", q.bytes, q.len())
	}
	var served []string
	for _, m := range q.take(100) {
		served = append(served, m.topic)
	}
	if want := "f3 a0 b0 f4 f5 f6 f7"; strings.Join(served, " ") != want {
		t.Errorf("served %v, want %s", served, want)
	}
	if q.bytes != 0 {
		t.Errorf("%d bytes counted in an empty queue", q.bytes)
	}
	// One message larger than the bound is kept when it is alone.
	if d := q.push("big", msg("big", 500)); d != nil || q.len() != 1 {
		t.Fatalf("a lone large message: dropped %v, %d queued", d, q.len())
	}
	// The next one finds the queue full; c would hold as many messages as
	// big, so c pays (the policy counts messages, not bytes).
	if got := q.push("c", msg("c0", 8)); !slices.Equal(got, []string{"c"}) || q.bytes != 503 {
		t.Fatalf("after a large message: dropped %v, %d bytes", got, q.bytes)
	}
}

// failingStore fails every Update while fail is set.
type failingStore struct {
	store.Database
	fail atomic.Bool
}

func (s *failingStore) Update(fn func(tx store.Tx) error) error {
	if s.fail.Load() {
		return errors.New("disk on fire")
	}
	return s.Database.Update(fn)
}

// TestDeliverAckedAfterCommit: a message from a feed that redelivers
// (DeliverAcked) is acknowledged once its effect is stored, not before;
// not when the transaction fails (so it comes again); and at once when it
// is invalid (it would be no better the next time).
func TestDeliverAckedAfterCommit(t *testing.T) {
	db := &failingStore{Database: fleettest.OpenStore(t)}
	f := newFixtureOn(t, db)
	var acks atomic.Int64
	ack := func() { acks.Add(1) }
	tel := func(seq uint64) []byte {
		raw, err := (&wire.Telemetry{Device: "gw-1", Session: 1, Seq: seq, From: 1, To: 2, Predictions: 1}).Marshal()
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	f.svc.DeliverAcked(f.svc.Topics().Telemetry("gw-1"), tel(1), ack)
	if n := acks.Load(); n != 0 {
		t.Fatalf("%d acks before the message was handled", n)
	}
	f.svc.Drain()
	if n := acks.Load(); n != 1 {
		t.Fatalf("%d acks after the message was stored, want 1", n)
	}
	db.fail.Store(true)
	f.svc.DeliverAcked(f.svc.Topics().Telemetry("gw-1"), tel(2), ack)
	f.svc.Drain()
	if n := acks.Load(); n != 1 {
		t.Fatalf("a message whose transaction failed was acknowledged (%d acks)", n)
	}
	f.svc.DeliverAcked(f.svc.Topics().Telemetry("gw-1"), []byte("{not telemetry"), ack)
	f.svc.Drain()
	if n := acks.Load(); n != 2 {
		t.Fatalf("an invalid message: %d acks, want 2 (dropped for good)", n)
	}
	db.fail.Store(false)
	f.svc.DeliverAcked(f.svc.Topics().Telemetry("gw-1"), tel(2), ack) // the redelivery
	f.svc.Drain()
	if n, p := acks.Load(), f.predictions(t, "gw-1"); n != 3 || p != 2 {
		t.Fatalf("after the redelivery: %d acks, %d reports applied; want 3 and 2", n, p)
	}
}

// TestRedeliveredStateNeverUndoesNewer is issue 39's deterministic case
// at the service: the database is down while a device publishes a state
// (a label change: its transaction fails, it is not acknowledged); the
// database comes back, the device installs a new release (SUCCEEDED and
// a new state); then the feed hands the unacknowledged state over again.
// The record keeps the new release, and the label change, which the newer
// state carried too. Before the device clock it went back to the old
// release until the device happened to send another state.
func TestRedeliveredStateNeverUndoesNewer(t *testing.T) {
	db := &failingStore{Database: fleettest.OpenStore(t)}
	f := newFixtureOn(t, db)
	old, newer := f.addBundle(t, 1), f.addBundle(t, 2)
	boot := uint64(7)
	state := func(n uint32, bundle string, site string) []byte {
		raw, err := (&wire.State{Device: "gw-1", Session: boot, Online: true, Clock: wire.ClockAt(boot, n),
			Model: &wire.ModelRef{ID: "vib", Release: 1, Bundle: bundle}, Labels: map[string]string{"site": site}}).Marshal()
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	topic := f.svc.Topics().State("gw-1")
	var acked atomic.Int64
	f.svc.DeliverAcked(topic, state(1, old, "north"), nil)
	f.svc.Drain()

	db.fail.Store(true) // PostgreSQL stopped
	stale := state(2, old, "south")
	f.svc.DeliverAcked(topic, stale, func() { acked.Add(1) })
	f.svc.Drain()
	if acked.Load() != 0 {
		t.Fatal("a state whose transaction failed was acknowledged")
	}
	db.fail.Store(false) // started again; the release installs
	f.svc.DeliverAcked(topic, state(4, newer, "south"), nil)
	f.svc.Drain()
	f.svc.DeliverAcked(topic, stale, func() { acked.Add(1) }) // the redelivery, after the ack wait
	f.svc.Drain()
	d, err := inventory.DeviceByID(f.db, "gw-1")
	if err != nil {
		t.Fatal(err)
	}
	if d.Model == nil || d.Model.Bundle != newer || d.Labels["site"] != "south" || acked.Load() != 1 {
		t.Fatalf("record shows bundle %v, labels %v (ack %d); want the new release %s, site south, the stale state acknowledged", d.Model, d.Labels, acked.Load(), newer)
	}
}
