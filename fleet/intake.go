package fleet

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet/fault"
	"github.com/trit-iot/trit/fleet/inventory"
	"github.com/trit-iot/trit/store"
	"github.com/trit-iot/trit/wire"
)

type message struct {
	topic   string
	payload []byte
	ack     func() // nil, or called once the message's effect is stored (DeliverAcked)
}

// intake is the service's incoming side: the fair queue of device messages
// (fairqueue.go) and the per-device counts of limited messages waiting to
// be added to the devices' records.
type intake struct {
	q *fairQueue

	mu      sync.Mutex
	pending map[string]api.Limited        // counts not yet in the records
	source  func() map[string]api.Limited // the embedded broker's counts (TakeLimited), or nil
	logAt   time.Time                     // of the last "incoming queue full" line
	logN    uint64                        // drops since that line
	logBy   map[string]uint64             // … per device (bounded by maxDropCounted)
}

func newIntake(queue, queueBytes int) *intake {
	return &intake{q: newFairQueue(queue, queueBytes), pending: map[string]api.Limited{}, logBy: map[string]uint64{}}
}

// queueLogEvery bounds the "incoming queue full" lines.
const queueLogEvery = time.Minute

// CountLimitedBy makes the service add, every tick, the counts take
// returns (the embedded broker's TakeLimited) to the devices' records.
// Call it before Run.
func (s *Service) CountLimitedBy(take func() map[string]api.Limited) {
	s.in.mu.Lock()
	defer s.in.mu.Unlock()
	s.in.source = take
}

// Deliver hands an incoming message to the service loop. It never blocks.
// Messages wait in one queue per device, served in turn; when the total
// reaches Options.Queue messages or Options.QueueBytes bytes, a message of
// the device holding the most is
// dropped, counted on its record (Limited.Queue) and in
// trit_fleet_dropped_messages_total, and logged at most once a minute with
// the counts (devices re-send unacknowledged events, and states are
// retained).
func (s *Service) Deliver(topic string, payload []byte) { s.DeliverAcked(topic, payload, nil) }

// DeliverAcked is Deliver for a source that redelivers what is not
// acknowledged (NATSFeed): ack, if not nil, is called once the message's
// effect is stored, or once it is dropped as invalid. A message dropped
// because the queue is full, or whose store transaction failed, is not
// acknowledged, so it comes again.
func (s *Service) DeliverAcked(topic string, payload []byte, ack func()) {
	device := "" // a topic the decoder will refuse shares one queue
	if t, err := wire.ParseTopic(topic); err == nil {
		device = t.Device
	}
	dropped := s.in.q.push(device, message{topic: topic, payload: payload, ack: ack})
	if len(dropped) == 0 {
		return
	}
	s.metrics.dropped.Add(uint64(len(dropped)))
	in := s.in
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, id := range dropped {
		in.logN++
		if _, ok := in.logBy[id]; ok || len(in.logBy) < maxDropCounted {
			in.logBy[id]++
		}
	}
	s.logDrops(s.opt.Now())
}

// logDrops logs the queue's drops since the last line if a line is due
// (at most one per queueLogEvery). Called with s.in.mu held.
func (s *Service) logDrops(now time.Time) {
	in := s.in
	if in.logN == 0 || now.Sub(in.logAt) < queueLogEvery {
		return
	}
	top, n := "", uint64(0)
	for id, k := range in.logBy {
		if k > n || k == n && id < top {
			top, n = id, k
		}
	}
	s.log.Warn("incoming queue full; messages of the devices holding most of it dropped",
		"dropped", in.logN, "devices", len(in.logBy), "most_from", fault.Clip(top, 100), "most", n, "queue", s.opt.Queue)
	in.logAt, in.logN = now, 0
	clear(in.logBy)
}

// takeLimited returns the counts to add to the records: the queue's drops,
// those the source gave since, and any left from a failed write.
func (in *intake) takeLimited(now time.Time) map[string]api.Limited {
	drops := in.q.takeDropped()
	in.mu.Lock()
	defer in.mu.Unlock()
	for id, n := range drops {
		c := in.pending[id]
		c.Add(api.Limited{Queue: n, Last: now})
		in.pending[id] = c
	}
	if len(in.pending) == 0 {
		return nil
	}
	out := in.pending
	in.pending = map[string]api.Limited{}
	return out
}

// pull adds the source's counts to the pending ones.
func (in *intake) pull() {
	in.mu.Lock()
	source := in.source
	in.mu.Unlock()
	if source == nil {
		return
	}
	counts := source()
	in.putBack(counts)
}

// putBack adds counts to the pending ones (after a failed write).
func (in *intake) putBack(counts map[string]api.Limited) {
	in.mu.Lock()
	defer in.mu.Unlock()
	for id, c := range counts {
		p := in.pending[id]
		p.Add(c)
		in.pending[id] = p
	}
}

// maxBatch bounds the messages handled in one store transaction.
const maxBatch = 512

// Run handles incoming messages and steps the rollouts until ctx ends.
// Messages that arrive together are handled in one store transaction (a
// group commit): with a thousand devices reporting, one fsync per message
// would be the fleet's bottleneck. A batch takes one message per device in
// turn, so a device with a thousand waiting does not delay the others'.
func (s *Service) Run(ctx context.Context) error {
	if ls, ok := s.db.(Leases); ok {
		s.leader.renewing.Store(true)
		go s.keepLease(ctx, ls)
	}
	tick := time.NewTicker(s.opt.Tick)
	defer tick.Stop()
	s.Tick()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-s.in.q.ready:
			s.handleBatch(s.in.q.take(maxBatch))
			if s.in.q.len() > 0 {
				select { // more than one batch waits: come back after any tick
				case s.in.q.ready <- struct{}{}:
				default:
				}
			}
		case <-tick.C:
			s.in.mu.Lock()
			s.logDrops(s.opt.Now()) // drops since the last line, once it is due
			s.in.mu.Unlock()
			s.in.pull()
			s.handleBatch(nil) // records the limited counts, if any
			s.Tick()
		}
	}
}

// Drain handles every message queued so far and records the limited
// counts (for tests and shutdown).
func (s *Service) Drain() {
	s.in.pull()
	for {
		batch := s.in.q.take(maxBatch)
		s.handleBatch(batch)
		if len(batch) == 0 {
			return
		}
	}
}

// decode checks one message's topic and payload; a bad one is logged,
// counted and dropped (nil).
func (s *Service) decode(m message) *decoded {
	t, err := wire.ParseTopic(m.topic)
	if err != nil || t.Fleet != s.topics.Fleet() {
		s.log.Warn("message on an unexpected topic dropped", "topic", m.topic, "err", err)
		return nil
	}
	d := &decoded{device: t.Device}
	var named string
	switch t.Kind {
	case wire.KindState:
		if d.state, err = wire.DecodeState(m.payload); err == nil {
			named = d.state.Device
		}
	case wire.KindEvents:
		if d.event, err = wire.DecodeEvent(m.payload); err == nil {
			named = d.event.Device
		}
	case wire.KindTelemetry:
		if d.telemetry, err = wire.DecodeTelemetry(m.payload); err == nil {
			named = d.telemetry.Device
		}
	case wire.KindResponses:
		if d.response, err = wire.DecodeResponse(m.payload); err == nil {
			named = d.response.Device
		}
	default:
		s.log.Warn("message on a fleet-to-device topic dropped", "topic", m.topic)
		return nil
	}
	if err == nil && named != t.Device {
		err = fmt.Errorf("payload names device %q on %s's topic", named, t.Device)
	}
	if err != nil {
		s.metrics.invalid.Add(1)
		s.log.Warn("invalid device message dropped", "topic", m.topic, "err", err)
		return nil
	}
	return d
}

// handleBatch applies a batch of messages in one transaction (a batch,
// batch.go, one applier per kind of message), then acknowledges its
// events. If the transaction fails nothing is acknowledged, and the
// devices re-send their events.
func (s *Service) handleBatch(batch []message) {
	var msgs []*decoded
	var settled, stored []func() // acknowledgements due now, and once the transaction commits
	for _, m := range batch {
		d := s.decode(m)
		switch {
		case d == nil:
			settled = append(settled, m.ack) // invalid: no better when sent again
		case d.response != nil:
			// Responses go to their waiters; nothing is stored.
			if !s.reqs.deliver(d.device, d.response) {
				s.log.Debug("response nobody waits for dropped", "device", d.device, "id", d.response.ID)
			}
			settled = append(settled, m.ack)
		default:
			msgs = append(msgs, d)
			stored = append(stored, m.ack)
		}
	}
	ackAll(settled)
	now := s.opt.Now()
	limited := s.in.takeLimited(now)
	if len(msgs) == 0 && len(limited) == 0 {
		return
	}
	update := s.db.Update
	if c, ok := s.db.(sharedUpdater); ok {
		update = c.UpdateShared
	}
	env := batchEnv{log: s.log, alerts: inventory.Alerts{Drift: s.opt.DriftAlert, Unknown: s.opt.UnknownAlert},
		telemetry: &s.metrics.telemetry, driftAlerts: &s.metrics.driftAlerts, unknownAlerts: &s.metrics.unknownAlerts}
	b := newBatch(env, nil, now) // replaced by each run of the transaction
	s.mu.Lock()
	var err error
	for attempt := 1; ; attempt++ {
		err = update(func(tx store.Tx) error {
			b = newBatch(env, tx, now)
			return b.apply(msgs, limited)
		})
		if !errors.Is(err, store.ErrConflict) || attempt == maxConflictRetries {
			break
		}
		s.log.Debug("device messages' transaction conflicted with another; running it again", "attempt", attempt, "err", err)
	}
	s.mu.Unlock()
	if err != nil {
		s.in.putBack(limited)
		s.log.Error("storing device messages failed; events not acknowledged, devices will re-send them", "messages", len(msgs), "err", err)
		return
	}
	s.afterBatch(stored, b)
}

// maxConflictRetries bounds how often a batch whose transaction the
// database cancelled for a conflict with another (store.ErrConflict) is
// run: after that it fails as any other, and is not acknowledged.
const maxConflictRetries = 3

// sharedUpdater is a store whose writers that only touch documents they
// read by key may run side by side (store/postgres): the intake's batches
// are such writers.
type sharedUpdater interface {
	UpdateShared(fn func(tx store.Tx) error) error
}

// afterBatch does what follows a batch's commit: logs, metrics, the
// acknowledgements of the feed's messages (stored) and of the devices'
// events.
func (s *Service) afterBatch(stored []func(), b *batch) {
	if len(b.damaged) > 0 {
		ids := slices.Sorted(maps.Keys(b.damaged))
		s.log.Warn("records that do not decode skipped: messages of a device whose record is damaged are dropped until it is forgotten (tritctl devices forget ID)",
			"records", len(ids), "first", fault.Clip(b.damaged[ids[0]]+" "+ids[0], 200))
	}
	ackAll(stored)
	for _, ds := range b.finished {
		s.metrics.finished(ds)
	}
	for _, id := range b.alerts {
		s.log.Warn("device input drifted past the alert threshold", "device", id, "threshold", s.opt.DriftAlert)
	}
	for _, id := range b.uncertain {
		s.log.Warn("device reports unknown windows past the alert threshold", "device", id, "threshold", s.opt.UnknownAlert)
	}
	for device, ids := range b.acks {
		for len(ids) > 0 {
			k := min(len(ids), wire.MaxAckIDs)
			ack := &wire.Ack{Device: device, IDs: ids[:k]}
			ids = ids[k:]
			raw, err := ack.Marshal()
			if err == nil {
				err = s.pub.Publish(s.topics.Acks(device), 1, false, raw)
			}
			if err != nil {
				s.log.Warn("ack not sent; the device will re-send its events", "device", device, "err", err)
			}
		}
	}
}

// ackAll calls every non-nil acknowledgement.
func ackAll(acks []func()) {
	for _, ack := range acks {
		if ack != nil {
			ack()
		}
	}
}
