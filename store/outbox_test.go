package store

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"testing"

	bolt "go.etcd.io/bbolt"
)

func msg(i int, payloadLen int) OutboxMsg {
	return OutboxMsg{
		Topic:    "trit/v1/f/devices/d1/telemetry",
		Payload:  bytes.Repeat([]byte{byte('a' + i%26)}, payloadLen),
		QoS:      byte(i % 3),
		Retained: i%2 == 0,
	}
}

// rescan recomputes the outbox totals from the records.
func rescan(t *testing.T, db *DB) (count, size uint64) {
	t.Helper()
	db.bolt.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketOutbox).ForEach(func(_, v []byte) error {
			count++
			size += uint64(len(v))
			return nil
		})
	})
	return count, size
}

func TestOutboxFIFO(t *testing.T) {
	db := openTest(t, nil)
	if got, err := db.Peek(10); err != nil || len(got) != 0 {
		t.Fatalf("Peek on empty outbox = %v, %v", got, err)
	}
	var sent []OutboxMsg
	for i := range 25 {
		m := msg(i, i)
		sent = append(sent, m)
		if err := db.Enqueue(m); err != nil {
			t.Fatal(err)
		}
	}
	got, err := db.Peek(10)
	if err != nil || len(got) != 10 {
		t.Fatalf("Peek(10) = %d entries, %v", len(got), err)
	}
	for i, e := range got {
		w := sent[i]
		if e.Topic != w.Topic || !bytes.Equal(e.Payload, w.Payload) || e.QoS != w.QoS || e.Retained != w.Retained {
			t.Fatalf("entry %d = %+v, want %+v", i, e.OutboxMsg, w)
		}
		if i > 0 && e.Seq <= got[i-1].Seq {
			t.Fatalf("sequence not increasing: %d after %d", e.Seq, got[i-1].Seq)
		}
	}
	// Peek does not remove.
	again, _ := db.Peek(1)
	if again[0].Seq != got[0].Seq {
		t.Fatal("Peek removed messages")
	}
	// Ack out of order, twice, and with unknown numbers.
	if err := db.Ack(got[3].Seq, got[0].Seq, got[1].Seq, got[2].Seq, got[0].Seq, 1<<60); err != nil {
		t.Fatal(err)
	}
	next, _ := db.Peek(100)
	if len(next) != 21 || !bytes.Equal(next[0].Payload, sent[4].Payload) {
		t.Fatalf("after acking 4: %d left, first payload %q", len(next), next[0].Payload)
	}
	st, err := db.OutboxStats()
	if err != nil {
		t.Fatal(err)
	}
	c, b := rescan(t, db)
	if st.Count != 21 || st.Count != c || st.Bytes != b || st.Dropped != 0 {
		t.Fatalf("stats %+v, rescan %d/%d", st, c, b)
	}
	// Sequence numbers keep increasing across reopen (no reuse of acked ones).
	last := next[len(next)-1].Seq
	db = reopen(t, db, nil)
	if err := db.Enqueue(msg(99, 3)); err != nil {
		t.Fatal(err)
	}
	all, _ := db.Peek(1000)
	if all[len(all)-1].Seq <= last {
		t.Fatalf("new seq %d not after %d", all[len(all)-1].Seq, last)
	}
	if _, err := db.Peek(0); !errors.Is(err, ErrInvalid) {
		t.Errorf("Peek(0) = %v, want ErrInvalid", err)
	}
}

func TestOutboxBoundDropsOldest(t *testing.T) {
	const payload = 100
	recSize := OutboxRecordSize(msg(0, payload))
	limit := int64(10*recSize + recSize/2) // room for 10 records
	db := openTest(t, &Options{OutboxMaxBytes: limit})

	for i := range 25 {
		if err := db.Enqueue(msg(i, payload)); err != nil {
			t.Fatal(err)
		}
		st, _ := db.OutboxStats()
		if st.Bytes > uint64(limit) {
			t.Fatalf("after %d messages: %d bytes over the %d bound", i+1, st.Bytes, limit)
		}
	}
	st, err := db.OutboxStats()
	if err != nil {
		t.Fatal(err)
	}
	if st.Count != 10 || st.Dropped != 15 || st.Bytes != uint64(10*recSize) || st.MaxBytes != uint64(limit) {
		t.Fatalf("stats %+v, want 10 kept, 15 dropped, %d bytes", st, 10*recSize)
	}
	// The survivors are the newest 10, in order.
	got, _ := db.Peek(100)
	for i, e := range got {
		if want := msg(15+i, payload); !bytes.Equal(e.Payload, want.Payload) || e.QoS != want.QoS {
			t.Fatalf("survivor %d is not message %d", i, 15+i)
		}
	}
	// The drop counter persists and keeps growing.
	db = reopen(t, db, &Options{OutboxMaxBytes: limit})
	db.Enqueue(msg(25, payload))
	if st, _ := db.OutboxStats(); st.Dropped != 16 {
		t.Fatalf("dropped after reopen %d, want 16", st.Dropped)
	}
	if c, b := rescan(t, db); c != 10 || b != uint64(10*recSize) {
		t.Fatalf("rescan %d/%d", c, b)
	}

	// A batch larger than the bound keeps only its newest messages.
	batch := make([]OutboxMsg, 30)
	for i := range batch {
		batch[i] = msg(100+i, payload)
	}
	if err := db.Enqueue(batch...); err != nil {
		t.Fatal(err)
	}
	got, _ = db.Peek(100)
	if len(got) != 10 || !bytes.Equal(got[0].Payload, batch[20].Payload) {
		t.Fatalf("after big batch: %d kept, first %q", len(got), got[0].Payload[:1])
	}
	if st, _ := db.OutboxStats(); st.Dropped != 16+30 {
		t.Fatalf("dropped %d, want %d", st.Dropped, 16+30)
	}

	// Reopening with a smaller bound trims at once.
	db = reopen(t, db, &Options{OutboxMaxBytes: int64(3 * recSize)})
	st, _ = db.OutboxStats()
	if st.Count != 3 || st.Dropped != 16+30+7 {
		t.Fatalf("after shrinking the bound: %+v", st)
	}
	if err := db.Check(); err != nil {
		t.Fatal(err)
	}
}

func TestOutboxTooLarge(t *testing.T) {
	db := openTest(t, &Options{OutboxMaxBytes: 1000})
	db.Enqueue(msg(0, 10))
	big := msg(1, 1000)
	if err := db.Enqueue(big); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("oversized message: %v, want ErrTooLarge", err)
	}
	// A batch with one oversized message enqueues nothing.
	if err := db.Enqueue(msg(2, 10), big); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("batch with oversized message: %v, want ErrTooLarge", err)
	}
	st, _ := db.OutboxStats()
	if st.Count != 1 || st.Dropped != 0 {
		t.Fatalf("rejected messages changed the outbox: %+v", st)
	}
	// Exactly the bound fits and evicts everything else.
	exact := msg(3, 1000-OutboxRecordSize(msg(3, 0)))
	if err := db.Enqueue(exact); err != nil {
		t.Fatalf("message of exactly the bound: %v", err)
	}
	if st, _ := db.OutboxStats(); st.Count != 1 || st.Bytes != 1000 || st.Dropped != 1 {
		t.Fatalf("after exact-bound message: %+v", st)
	}
}

func TestOutboxInvalidMessages(t *testing.T) {
	db := openTest(t, nil)
	for _, m := range []OutboxMsg{
		{Topic: ""},
		{Topic: "a/+/b"},
		{Topic: "a/#"},
		{Topic: "a\x00b"},
		{Topic: "\xff\xfe"},
		{Topic: string(make([]byte, 70000))},
		{Topic: "ok", QoS: 3},
	} {
		if err := db.Enqueue(m); !errors.Is(err, ErrInvalid) {
			t.Errorf("Enqueue(topic %.10q, qos %d) = %v, want ErrInvalid", m.Topic, m.QoS, err)
		}
	}
	if st, _ := db.OutboxStats(); st.Count != 0 {
		t.Fatalf("invalid messages were queued: %+v", st)
	}
}

func TestOutboxCorruptRecord(t *testing.T) {
	db := openTest(t, nil)
	db.Enqueue(msg(0, 5), msg(1, 5), msg(2, 5))
	entries, _ := db.Peek(3)
	bad := entries[1].Seq
	// Same length, broken header: totals stay consistent.
	db.bolt.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketOutbox)
		v := bytes.Clone(b.Get(seqKey(bad)))
		v[0] = 9
		return b.Put(seqKey(bad), v)
	})
	_, err := db.Peek(10)
	var ce *CorruptError
	if !errors.As(err, &ce) || ce.Bucket != "outbox" || ce.Key != strconv.FormatUint(bad, 10) {
		t.Fatalf("Peek over a corrupt record: %v, want CorruptError outbox/%d", err, bad)
	}
	// Peeking before the bad record still works, and acking it clears it.
	if got, err := db.Peek(1); err != nil || len(got) != 1 {
		t.Fatalf("Peek(1) = %v, %v", got, err)
	}
	seq, _ := strconv.ParseUint(ce.Key, 10, 64)
	if err := db.Ack(seq); err != nil {
		t.Fatal(err)
	}
	if got, err := db.Peek(10); err != nil || len(got) != 2 {
		t.Fatalf("after acking the bad record: %d entries, %v", len(got), err)
	}
	if err := db.Check(); err != nil {
		t.Fatal(err)
	}
}

func TestOutboxCorruptTotals(t *testing.T) {
	db := openTest(t, nil)
	db.Enqueue(msg(0, 5))
	db.bolt.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketOutboxMeta).Put(keyOutboxBytes, []byte{1}) })
	var ce *CorruptError
	if err := db.Enqueue(msg(1, 5)); !errors.As(err, &ce) || ce.Bucket != "outbox_meta" || ce.Key != "bytes" {
		t.Fatalf("Enqueue with a 1-byte total: %v", err)
	}
	db.bolt.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketOutboxMeta).Put(keyOutboxBytes, u64Bytes(12345))
	})
	if err := db.Check(); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Check with a wrong byte total: %v, want ErrCorrupt", err)
	}
}

func TestOutboxRecordRoundTrip(t *testing.T) {
	for i, m := range []OutboxMsg{
		{Topic: "t", Payload: nil},
		{Topic: "a/b/c", Payload: []byte{0, 1, 2}, QoS: 2, Retained: true},
		{Topic: "ü/ñ", Payload: bytes.Repeat([]byte("z"), 5000), QoS: 1},
	} {
		rec, err := encodeOutboxRecord(m)
		if err != nil {
			t.Fatal(err)
		}
		if len(rec) != OutboxRecordSize(m) {
			t.Errorf("case %d: record %d bytes, OutboxRecordSize %d", i, len(rec), OutboxRecordSize(m))
		}
		got, err := decodeOutboxRecord(rec)
		if err != nil {
			t.Fatal(err)
		}
		if got.Topic != m.Topic || !bytes.Equal(got.Payload, m.Payload) || got.QoS != m.QoS || got.Retained != m.Retained {
			t.Errorf("case %d: %+v != %+v", i, got, m)
		}
		for cut := range outboxHeaderLen + len(m.Topic) {
			if _, err := decodeOutboxRecord(rec[:cut]); err == nil {
				t.Errorf("case %d: truncated to %d bytes decoded", i, cut)
			}
		}
	}
}

// TestOutboxManySmall checks the totals stay exact over thousands of small
// messages with interleaved acks and drops.
func TestOutboxManySmall(t *testing.T) {
	db := openTest(t, &Options{OutboxMaxBytes: 20000, NoSync: true})
	var enq, acked int
	for round := range 200 {
		batch := make([]OutboxMsg, 25)
		for i := range batch {
			batch[i] = OutboxMsg{Topic: "t/" + strconv.Itoa(round), Payload: []byte(fmt.Sprint(enq + i)), QoS: 1}
		}
		enq += len(batch)
		if err := db.Enqueue(batch...); err != nil {
			t.Fatal(err)
		}
		if round%3 == 0 {
			got, err := db.Peek(40)
			if err != nil {
				t.Fatal(err)
			}
			seqs := make([]uint64, len(got))
			for i, e := range got {
				seqs[i] = e.Seq
			}
			if err := db.Ack(seqs...); err != nil {
				t.Fatal(err)
			}
			acked += len(got)
		}
	}
	st, _ := db.OutboxStats()
	c, b := rescan(t, db)
	if st.Count != c || st.Bytes != b {
		t.Fatalf("totals %+v, rescan %d/%d", st, c, b)
	}
	if uint64(enq) != st.Count+st.Dropped+uint64(acked) {
		t.Fatalf("enqueued %d != kept %d + dropped %d + acked %d", enq, st.Count, st.Dropped, acked)
	}
	if st.Dropped == 0 {
		t.Fatal("test did not exercise dropping")
	}
}

// TestOutboxConcurrent enqueues from several goroutines while another drains;
// every message is delivered once, in per-producer order.
func TestOutboxConcurrent(t *testing.T) {
	db := openTest(t, &Options{NoSync: true})
	const producers, each = 4, 200
	done := make(chan error, producers)
	for p := range producers {
		go func() {
			for i := range each {
				if err := db.Enqueue(OutboxMsg{Topic: fmt.Sprintf("p/%d", p), Payload: []byte(strconv.Itoa(i))}); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	next := make([]int, producers)
	received, finished := 0, 0
	for received < producers*each {
		got, err := db.Peek(50)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range got {
			p, _ := strconv.Atoi(e.Topic[2:])
			if i, _ := strconv.Atoi(string(e.Payload)); i != next[p] {
				t.Fatalf("producer %d: got message %d, want %d", p, i, next[p])
			}
			next[p]++
			if err := db.Ack(e.Seq); err != nil {
				t.Fatal(err)
			}
		}
		received += len(got)
		if len(got) == 0 {
			if finished == producers {
				t.Fatalf("outbox empty after %d of %d messages", received, producers*each)
			}
			if err := <-done; err != nil { // wait for a producer instead of spinning
				t.Fatal(err)
			}
			finished++
		}
	}
	if st, _ := db.OutboxStats(); st.Count != 0 || st.Bytes != 0 || st.Dropped != 0 {
		t.Fatalf("after draining: %+v", st)
	}
}
