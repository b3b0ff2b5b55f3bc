package store

import (
	"fmt"
	"testing"
)

// Benchmarks run with fsync on (the production setting) unless the name says
// NoSync, which isolates the store's own cost from the disk's.

// BenchmarkOutbox measures the agent's telemetry path: one Enqueue per
// message, and every 100 messages a Peek(100) and one Ack of the batch.
func BenchmarkOutbox(b *testing.B) {
	for _, noSync := range []bool{false, true} {
		b.Run(fmt.Sprintf("NoSync=%v", noSync), func(b *testing.B) {
			db := openTest(b, &Options{NoSync: noSync})
			m := OutboxMsg{Topic: "trit/v1/fleet/devices/dev-0001/telemetry", Payload: make([]byte, 200), QoS: 1}
			b.SetBytes(int64(OutboxRecordSize(m)))
			b.ResetTimer()
			for i := range b.N {
				if err := db.Enqueue(m); err != nil {
					b.Fatal(err)
				}
				if i%100 == 99 {
					drain(b, db, 100)
				}
			}
		})
	}
}

// BenchmarkOutboxBatch enqueues 100 messages per transaction.
func BenchmarkOutboxBatch(b *testing.B) {
	db := openTest(b, nil)
	batch := make([]OutboxMsg, 100)
	for i := range batch {
		batch[i] = OutboxMsg{Topic: "trit/v1/fleet/devices/dev-0001/telemetry", Payload: make([]byte, 200), QoS: 1}
	}
	b.SetBytes(int64(len(batch) * OutboxRecordSize(batch[0])))
	b.ResetTimer()
	for range b.N {
		if err := db.Enqueue(batch...); err != nil {
			b.Fatal(err)
		}
		drain(b, db, len(batch))
	}
}

// BenchmarkOutboxFull enqueues into a full outbox, so every Enqueue also
// drops the oldest message: the cost stays flat with thousands queued.
func BenchmarkOutboxFull(b *testing.B) {
	db := openTest(b, &Options{NoSync: true, OutboxMaxBytes: 1 << 20})
	m := OutboxMsg{Topic: "t/telemetry", Payload: make([]byte, 100), QoS: 1}
	for {
		if st, _ := db.OutboxStats(); st.Dropped > 0 {
			break
		}
		db.Enqueue(m)
	}
	b.ResetTimer()
	for range b.N {
		if err := db.Enqueue(m); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	st, _ := db.OutboxStats()
	b.ReportMetric(float64(st.Count), "queued")
}

func drain(b *testing.B, db *DB, n int) {
	got, err := db.Peek(n)
	if err != nil {
		b.Fatal(err)
	}
	seqs := make([]uint64, len(got))
	for i, e := range got {
		seqs[i] = e.Seq
	}
	if err := db.Ack(seqs...); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkActivate alternates two 256 KiB bundles: Activate then Commit,
// the two transactions of a successful install.
func BenchmarkActivate(b *testing.B) {
	db := openTest(b, nil)
	var hashes [2]string
	for i := range hashes {
		data := make([]byte, 256<<10)
		data[0] = byte(i)
		h, err := db.PutBundle(data)
		if err != nil {
			b.Fatal(err)
		}
		hashes[i] = h
	}
	b.ResetTimer()
	for i := range b.N {
		if err := db.Activate(hashes[i%2], SlotMeta{ModelID: "m", Release: uint64(i)}); err != nil {
			b.Fatal(err)
		}
		if err := db.Commit(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFleetUpdate updates one rollout and 100 device documents in one
// transaction, the fleet's multi-record pattern.
func BenchmarkFleetUpdate(b *testing.B) {
	db := openTest(b, nil)
	type dev struct {
		ID    string
		Model string
		Seq   int
	}
	b.ResetTimer()
	for i := range b.N {
		err := db.Update(func(tx Tx) error {
			for d := range 100 {
				id := fmt.Sprintf("dev-%04d", d)
				if err := tx.Put(FleetDevices, id, dev{ID: id, Model: "m", Seq: i}); err != nil {
					return err
				}
			}
			return tx.Put(FleetRollouts, "r1", map[string]int{"seq": i})
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}
