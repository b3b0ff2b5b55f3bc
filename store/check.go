package store

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Check verifies the store's invariants in one read transaction and returns
// every violation found (joined), or nil:
//   - every bundle's content matches its hash key;
//   - the active and previous slots decode and name stored bundles, the
//     previous one is committed, and there is no previous without an active;
//   - outbox records decode and the stored count and byte total match them;
//   - job records decode, counters are 8 bytes, documents are valid JSON.
//
// It reads the whole file; tests run it after crashes. Open checks the file's
// structure (file.go), not these invariants: a value that does not decode is
// reported where it is read, as a *CorruptError naming bucket and key.
func (db *DB) Check() error {
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	err := db.view(func(tx *bolt.Tx) error {
		for _, name := range append(append([][]byte{}, schemaV1Buckets...), schemaV2Buckets...) {
			if tx.Bucket(name) == nil {
				return corrupt(name, "", errors.New("bucket missing"))
			}
		}
		add(checkBundles(tx))
		add(checkSlots(tx))
		add(checkOutbox(tx))
		add(tx.Bucket(bucketJobs).ForEach(func(k, v []byte) error {
			_, err := decodeJob(k, v)
			add(err)
			return nil
		}))
		for _, name := range [][]byte{bucketReleases, bucketDevice} {
			add(tx.Bucket(name).ForEach(func(k, v []byte) error {
				_, err := decodeU64(name, string(k), v)
				add(err)
				return nil
			}))
		}
		add(checkOperators(tx))
		add(checkAudit(tx))
		for _, name := range collectionBuckets {
			add(tx.Bucket(name).ForEach(func(k, v []byte) error {
				if !json.Valid(v) {
					add(corrupt(name, string(k), errors.New("document is not valid JSON")))
				}
				return nil
			}))
		}
		return nil
	})
	add(err)
	if len(errs) > 0 {
		return fmt.Errorf("store: check %s: %w", db.Path(), errors.Join(errs...))
	}
	return nil
}

func checkBundles(tx *bolt.Tx) error {
	var errs []error
	tx.Bucket(bucketBundles).ForEach(func(k, v []byte) error {
		if err := checkHash(string(k)); err != nil {
			errs = append(errs, corrupt(bucketBundles, string(k), err))
		} else if err := verifyBundle(string(k), v); err != nil {
			errs = append(errs, err)
		}
		return nil
	})
	return errors.Join(errs...)
}

func checkSlots(tx *bolt.Tx) error {
	s, err := readSlots(tx)
	if err != nil {
		return err
	}
	var errs []error
	bundles := tx.Bucket(bucketBundles)
	for _, c := range []struct {
		key  []byte
		slot *Slot
	}{{keyActive, s.active}, {keyPrevious, s.previous}, {keyShadow, s.shadow}} {
		if c.slot != nil && bundles.Get([]byte(c.slot.Hash)) == nil {
			errs = append(errs, corrupt(bucketSlots, string(c.key), fmt.Errorf("bundle %s is not stored", c.slot.Hash)))
		}
	}
	if s.previous != nil && s.active == nil {
		errs = append(errs, corrupt(bucketSlots, string(keyActive), errors.New("previous slot without an active one")))
	}
	if s.previous != nil && s.previous.State != InstallCommitted {
		errs = append(errs, corrupt(bucketSlots, string(keyPrevious), fmt.Errorf("state %q, want %q", s.previous.State, InstallCommitted)))
	}
	return errors.Join(errs...)
}

func checkOutbox(tx *bolt.Tx) error {
	t, err := loadTotals(tx.Bucket(bucketOutboxMeta))
	if err != nil {
		return err
	}
	var errs []error
	var count, size uint64
	b := tx.Bucket(bucketOutbox)
	b.ForEach(func(k, v []byte) error {
		count++
		size += uint64(len(v))
		if len(k) != 8 {
			errs = append(errs, corrupt(bucketOutbox, seqString(k), errors.New("key is not an 8-byte sequence")))
		} else if binary.BigEndian.Uint64(k) > b.Sequence() {
			errs = append(errs, corrupt(bucketOutbox, seqString(k), fmt.Errorf("above the bucket sequence %d", b.Sequence())))
		}
		if _, err := decodeOutboxRecord(v); err != nil {
			errs = append(errs, corrupt(bucketOutbox, seqString(k), err))
		}
		return nil
	})
	if count != t.count || size != t.bytes {
		errs = append(errs, corrupt(bucketOutboxMeta, "", fmt.Errorf("totals say %d messages / %d bytes, records are %d / %d",
			t.count, t.bytes, count, size)))
	}
	return errors.Join(errs...)
}
