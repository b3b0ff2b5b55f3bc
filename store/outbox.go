package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	bolt "go.etcd.io/bbolt"
)

// The outbox is a store-and-forward queue of MQTT messages. Messages are
// numbered by the outbox bucket's sequence, so cursor order is FIFO. The sum
// of stored record sizes is bounded by Options.OutboxMaxBytes: when a new
// message pushes it over, older ordinary messages are dropped, oldest first,
// and older priority messages (job events) only once no older ordinary one
// is left — telemetry piling up during an outage never pushes out a job's
// result while there is older telemetry to drop. Drops are counted. Count, byte total and drop counter live in bucketOutboxMeta and
// change in the same transaction as the records, so they never need a
// rescan. Enqueueing a priority message is an essential write that may use
// the file's reserve on a full disk (reserve.go); an ordinary one is not.

// OutboxMsg is an MQTT message waiting to be published.
type OutboxMsg struct {
	Topic    string
	Payload  []byte
	QoS      byte // 0, 1 or 2
	Retained bool
	// Priority marks a message that must not be lost to telemetry: it is
	// dropped for the bound only when no ordinary message is left, and it
	// may be written with the reserve when the disk is full.
	Priority bool
}

// OutboxEntry is a queued message and its sequence number.
type OutboxEntry struct {
	Seq uint64
	OutboxMsg
}

// OutboxStats summarizes the outbox.
type OutboxStats struct {
	Count    uint64 // queued messages
	Bytes    uint64 // sum of stored record sizes
	Dropped  uint64 // messages dropped to respect the bound, ever
	MaxBytes uint64 // the bound in force
}

// Outbox record layout (version 1):
//
//	byte 0     format version (1)
//	byte 1     flags: bits 0-1 QoS, bit 2 retained, bit 3 priority, other bits zero
//	bytes 2-3  topic length, big-endian uint16
//	topic, then payload to the end of the record
const (
	outboxVersion    = 1
	outboxHeaderLen  = 4
	outboxQoSMask    = 0x03
	outboxRetainFlag = 0x04
	outboxPriority   = 0x08
)

// OutboxRecordSize returns the bytes msg counts against the outbox bound.
func OutboxRecordSize(msg OutboxMsg) int {
	return outboxHeaderLen + len(msg.Topic) + len(msg.Payload)
}

// checkTopic accepts an MQTT topic name one may publish to.
func checkTopic(t string) error {
	switch {
	case t == "":
		return errors.New("empty topic")
	case len(t) > 0xffff:
		return fmt.Errorf("topic is %d bytes, max %d", len(t), 0xffff)
	case !utf8.ValidString(t):
		return errors.New("topic is not valid UTF-8")
	case strings.ContainsAny(t, "+#\x00"):
		return fmt.Errorf("topic %q contains a wildcard or NUL", t)
	}
	return nil
}

func encodeOutboxRecord(m OutboxMsg) ([]byte, error) {
	if err := checkTopic(m.Topic); err != nil {
		return nil, err
	}
	if m.QoS > 2 {
		return nil, fmt.Errorf("QoS %d, want 0, 1 or 2", m.QoS)
	}
	flags := m.QoS
	if m.Retained {
		flags |= outboxRetainFlag
	}
	if m.Priority {
		flags |= outboxPriority
	}
	rec := make([]byte, 0, OutboxRecordSize(m))
	rec = append(rec, outboxVersion, flags)
	rec = binary.BigEndian.AppendUint16(rec, uint16(len(m.Topic)))
	rec = append(rec, m.Topic...)
	return append(rec, m.Payload...), nil
}

// decodeOutboxRecord decodes a record; the result does not alias rec.
func decodeOutboxRecord(rec []byte) (OutboxMsg, error) {
	if len(rec) < outboxHeaderLen {
		return OutboxMsg{}, fmt.Errorf("record is %d bytes, shorter than its header", len(rec))
	}
	if rec[0] != outboxVersion {
		return OutboxMsg{}, fmt.Errorf("record format version %d, want %d", rec[0], outboxVersion)
	}
	flags := rec[1]
	if flags&^(outboxQoSMask|outboxRetainFlag|outboxPriority) != 0 || flags&outboxQoSMask == 3 {
		return OutboxMsg{}, fmt.Errorf("bad flags %#02x", flags)
	}
	n := int(binary.BigEndian.Uint16(rec[2:4]))
	if outboxHeaderLen+n > len(rec) {
		return OutboxMsg{}, fmt.Errorf("topic length %d overruns %d-byte record", n, len(rec))
	}
	m := OutboxMsg{
		Topic:    string(rec[outboxHeaderLen : outboxHeaderLen+n]),
		Payload:  bytes.Clone(rec[outboxHeaderLen+n:]),
		QoS:      flags & outboxQoSMask,
		Retained: flags&outboxRetainFlag != 0,
		Priority: flags&outboxPriority != 0,
	}
	if err := checkTopic(m.Topic); err != nil {
		return OutboxMsg{}, err
	}
	if m.Payload == nil {
		m.Payload = []byte{}
	}
	return m, nil
}

func seqKey(seq uint64) []byte { return u64Bytes(seq) }

func seqString(k []byte) string {
	if len(k) != 8 {
		return fmt.Sprintf("%x", k)
	}
	return strconv.FormatUint(binary.BigEndian.Uint64(k), 10)
}

// outboxTotals mirrors bucketOutboxMeta.
type outboxTotals struct {
	count, bytes, dropped uint64
}

func loadTotals(m *bolt.Bucket) (outboxTotals, error) {
	var t outboxTotals
	var err error
	if t.count, err = getU64(m, bucketOutboxMeta, keyOutboxCount); err != nil {
		return t, err
	}
	if t.bytes, err = getU64(m, bucketOutboxMeta, keyOutboxBytes); err != nil {
		return t, err
	}
	t.dropped, err = getU64(m, bucketOutboxMeta, keyOutboxDropped)
	return t, err
}

func (t outboxTotals) save(m *bolt.Bucket) error {
	if err := m.Put(keyOutboxCount, u64Bytes(t.count)); err != nil {
		return err
	}
	if err := m.Put(keyOutboxBytes, u64Bytes(t.bytes)); err != nil {
		return err
	}
	return m.Put(keyOutboxDropped, u64Bytes(t.dropped))
}

// isPriorityRecord reports whether a stored record is a priority message
// (a record too short to say counts as ordinary).
func isPriorityRecord(rec []byte) bool {
	return len(rec) >= outboxHeaderLen && rec[1]&outboxPriority != 0
}

// dropOldest removes records until t.bytes fits limit. Records numbered
// from keep on (the ones being enqueued) go last: first the older ordinary
// records, oldest first, then the older priority ones, then, if a batch is
// larger than the bound by itself, its own oldest.
func dropOldest(b *bolt.Bucket, t *outboxTotals, limit, keep uint64) error {
	if t.bytes <= limit {
		return nil
	}
	over := t.bytes - limit
	var doomed [][]byte
	var freed uint64
	for pass := range 3 {
		c := b.Cursor()
		for k, v := c.First(); k != nil && freed < over; k, v = c.Next() {
			older := len(k) != 8 || binary.BigEndian.Uint64(k) < keep
			var take bool
			switch pass {
			case 0:
				take = older && !isPriorityRecord(v)
			case 1:
				take = older && isPriorityRecord(v)
			case 2:
				take = !older
			}
			if take {
				doomed = append(doomed, bytes.Clone(k))
				freed += uint64(len(v))
			}
		}
	}
	if freed < over {
		return corrupt(bucketOutboxMeta, string(keyOutboxBytes),
			fmt.Errorf("byte total %d but the records hold %d less than that over the bound", t.bytes, over-freed))
	}
	for _, k := range doomed {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	t.bytes -= min(freed, t.bytes)
	t.count -= min(uint64(len(doomed)), t.count)
	t.dropped += uint64(len(doomed))
	return nil
}

// trimOutbox applies the bound to the stored outbox (used at Open, when the
// bound may have shrunk).
func (db *DB) trimOutbox(tx *bolt.Tx) error {
	b, err := bucket(tx, bucketOutbox)
	if err != nil {
		return err
	}
	m, err := bucket(tx, bucketOutboxMeta)
	if err != nil {
		return err
	}
	t, err := loadTotals(m)
	if err != nil {
		return err
	}
	if t.bytes <= db.outboxMax {
		return nil
	}
	if err := dropOldest(b, &t, db.outboxMax, b.Sequence()+1); err != nil {
		return err
	}
	return t.save(m)
}

// Enqueue appends msgs to the outbox in one transaction, then drops the
// oldest messages (ordinary ones first) while the outbox exceeds its bound.
// A message whose record alone exceeds the bound is ErrTooLarge and nothing
// is enqueued. If any of msgs is a priority message the write is essential
// (it may use the reserve when the disk is full); otherwise it is ordinary
// and fails with ErrNoSpace while the reserve is in use.
func (db *DB) Enqueue(msgs ...OutboxMsg) error {
	if len(msgs) == 0 {
		return nil
	}
	write := db.ordinary
	recs := make([][]byte, len(msgs))
	for i, m := range msgs {
		if m.Priority {
			write = db.essential
		}
		rec, err := encodeOutboxRecord(m)
		if err != nil {
			return fmt.Errorf("store: enqueue message %d: %w: %w", i, ErrInvalid, err)
		}
		if uint64(len(rec)) > db.outboxMax {
			return fmt.Errorf("store: enqueue message %d to %q: record of %d bytes, bound %d: %w",
				i, m.Topic, len(rec), db.outboxMax, ErrTooLarge)
		}
		recs[i] = rec
	}
	err := write(func(tx *bolt.Tx) error {
		b, err := bucket(tx, bucketOutbox)
		if err != nil {
			return err
		}
		m, err := bucket(tx, bucketOutboxMeta)
		if err != nil {
			return err
		}
		t, err := loadTotals(m)
		if err != nil {
			return err
		}
		keep := b.Sequence() + 1
		for _, rec := range recs {
			seq, err := b.NextSequence()
			if err != nil {
				return err
			}
			if err := b.Put(seqKey(seq), rec); err != nil {
				return err
			}
			t.count++
			t.bytes += uint64(len(rec))
		}
		if err := dropOldest(b, &t, db.outboxMax, keep); err != nil {
			return err
		}
		return t.save(m)
	})
	if err != nil {
		return fmt.Errorf("store: enqueue: %w", err)
	}
	return nil
}

// Peek returns up to max of the oldest queued messages, oldest first,
// without removing them; see Ack. A record that cannot be decoded yields a
// *CorruptError whose Key is the decimal sequence number; acking that
// sequence removes it.
func (db *DB) Peek(max int) ([]OutboxEntry, error) {
	if max <= 0 {
		return nil, fmt.Errorf("store: peek: max %d, want > 0: %w", max, ErrInvalid)
	}
	var out []OutboxEntry
	err := db.view(func(tx *bolt.Tx) error {
		b, err := bucket(tx, bucketOutbox)
		if err != nil {
			return err
		}
		c := b.Cursor()
		for k, v := c.First(); k != nil && len(out) < max; k, v = c.Next() {
			if len(k) != 8 {
				return corrupt(bucketOutbox, seqString(k), errors.New("key is not an 8-byte sequence"))
			}
			msg, err := decodeOutboxRecord(v)
			if err != nil {
				return corrupt(bucketOutbox, seqString(k), err)
			}
			out = append(out, OutboxEntry{Seq: binary.BigEndian.Uint64(k), OutboxMsg: msg})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: peek: %w", err)
	}
	return out, nil
}

// Ack removes the messages with the given sequence numbers after they were
// published. Unknown sequence numbers (already acked or dropped) are ignored.
func (db *DB) Ack(seqs ...uint64) error {
	if len(seqs) == 0 {
		return nil
	}
	err := db.essential(func(tx *bolt.Tx) error {
		b, err := bucket(tx, bucketOutbox)
		if err != nil {
			return err
		}
		m, err := bucket(tx, bucketOutboxMeta)
		if err != nil {
			return err
		}
		t, err := loadTotals(m)
		if err != nil {
			return err
		}
		changed := false
		for _, seq := range seqs {
			k := seqKey(seq)
			v := b.Get(k)
			if v == nil {
				continue
			}
			n := uint64(len(v))
			if err := b.Delete(k); err != nil {
				return err
			}
			t.bytes -= min(n, t.bytes)
			t.count -= min(1, t.count)
			changed = true
		}
		if !changed {
			return nil
		}
		return t.save(m)
	})
	if err != nil {
		return fmt.Errorf("store: ack: %w", err)
	}
	return nil
}

// OutboxStats returns the outbox counters.
func (db *DB) OutboxStats() (OutboxStats, error) {
	var t outboxTotals
	err := db.view(func(tx *bolt.Tx) error {
		m, err := bucket(tx, bucketOutboxMeta)
		if err != nil {
			return err
		}
		t, err = loadTotals(m)
		return err
	})
	if err != nil {
		return OutboxStats{}, fmt.Errorf("store: outbox stats: %w", err)
	}
	return OutboxStats{Count: t.count, Bytes: t.bytes, Dropped: t.dropped, MaxBytes: db.outboxMax}, nil
}
