package agent

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"time"

	"github.com/trit-iot/trit/store"
	"github.com/trit-iot/trit/wire"
)

// drainBatch is how many outbox messages one drain step reads.
const drainBatch = 32

// publisher drains the outbox to the broker in FIFO order. Telemetry is
// removed from the outbox once the broker acknowledged it (QoS 1 PUBACK);
// job events stay until the fleet acknowledges them on the acks topic, and
// are re-sent on every new connection and every telemetry.ack_retry.
type publisher struct {
	log      *slog.Logger
	db       *store.DB
	device   string
	ackRetry time.Duration
	conn     func() (Conn, uint64, uint64) // the session's connection, its generation and number
	kick     chan struct{}
	acks     chan []byte

	sent    map[uint64]uint64 // outbox seq of an event → connection generation it was sent on
	pending map[string]uint64 // event ID → outbox seq, sent and awaiting the fleet's ack
}

// newPublisher takes from a what the publisher uses: its log, database,
// device ID, ack retry interval and session (set before).
func newPublisher(a *Agent) *publisher {
	return &publisher{log: a.log, db: a.db, device: a.cfg.DeviceID, ackRetry: a.cfg.Telemetry.AckRetry.Duration, conn: a.sess.current,
		kick: make(chan struct{}, 1), acks: make(chan []byte, 64), sent: map[uint64]uint64{}, pending: map[string]uint64{}}
}

// kickNow asks for a drain; it never blocks.
func (p *publisher) kickNow() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// ack hands an ack payload over from the MQTT handler; it never blocks (a
// dropped ack is harmless: the event is re-sent and acknowledged again).
func (p *publisher) ack(payload []byte) {
	select {
	case p.acks <- payload:
	default:
		p.log.Warn("ack dropped: queue full")
	}
}

func (p *publisher) run(ctx context.Context) {
	retry := time.NewTicker(p.ackRetry)
	defer retry.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.kick:
		case <-retry.C:
			clear(p.sent)
		case data := <-p.acks:
			p.handleAck(data)
		}
		p.drain(ctx)
	}
}

func (p *publisher) handleAck(data []byte) {
	ack, err := wire.DecodeAck(data)
	if err != nil {
		p.log.Warn("ack refused", "err", err)
		return
	}
	if ack.Device != p.device {
		p.log.Warn("ack for another device ignored", "device", ack.Device)
		return
	}
	var seqs []uint64
	for _, id := range ack.IDs {
		if seq, ok := p.pending[id]; ok {
			seqs = append(seqs, seq)
			delete(p.pending, id)
			delete(p.sent, seq)
		}
	}
	if err := p.db.Ack(seqs...); err != nil {
		p.log.Error("outbox ack failed", "err", err)
	}
}

func (p *publisher) drain(ctx context.Context) {
	for ctx.Err() == nil {
		conn, gen, _ := p.conn()
		if conn == nil {
			return
		}
		entries, err := p.db.Peek(drainBatch + len(p.sent))
		var ce *store.CorruptError
		if errors.As(err, &ce) {
			if seq, perr := strconv.ParseUint(ce.Key, 10, 64); perr == nil {
				p.log.Error("corrupt outbox record dropped", "seq", seq, "err", err)
				p.db.Ack(seq)
				continue
			}
		}
		if err != nil {
			p.log.Error("outbox read failed", "err", err)
			return
		}
		p.forgetDropped(entries)
		progressed := false
		for _, e := range entries {
			var ev *wire.Event
			if k, _ := wire.ParseTopic(e.Topic); k.Kind == wire.KindEvents {
				ev, _ = wire.DecodeEvent(e.Payload)
			}
			if ev != nil && p.sent[e.Seq] == gen {
				continue // sent on this connection; waiting for the fleet's ack
			}
			m := Message{Topic: e.Topic, Payload: e.Payload, QoS: e.QoS, Retained: e.Retained}
			if err := conn.Publish(ctx, m); err != nil {
				p.log.Warn("outbox publish failed; will retry", "topic", e.Topic, "err", err)
				return
			}
			progressed = true
			if ev != nil {
				p.sent[e.Seq] = gen
				p.pending[ev.ID] = e.Seq
				continue
			}
			if err := p.db.Ack(e.Seq); err != nil {
				p.log.Error("outbox ack failed", "err", err)
				return
			}
		}
		if !progressed {
			return
		}
	}
}

// forgetDropped forgets events awaiting an ack that are no longer in the
// outbox: older than its oldest entry, they were dropped to respect the
// bound (a fleet that never acks would otherwise grow these maps forever).
func (p *publisher) forgetDropped(entries []store.OutboxEntry) {
	oldest := uint64(1<<64 - 1)
	if len(entries) > 0 {
		oldest = entries[0].Seq
	}
	for id, seq := range p.pending {
		if seq < oldest {
			delete(p.pending, id)
			delete(p.sent, seq)
		}
	}
}
