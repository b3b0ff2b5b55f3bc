package store

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
)

// The fleet's audit trail: who changed what, when, from where, and how it
// went. The functions take a Tx, so the trail lives in every fleet store
// (the bbolt file, store/postgres) as the collections FleetAudit and
// FleetAuditMeta. Invariants:
//   - Append only: AppendAudit adds a record under the next sequence
//     number; nothing changes a stored record, and the only deletions are
//     of the oldest records, once older than the retention
//     (AuditLimits.MaxAge): no record younger than it is ever deleted,
//     however many others are written.
//   - So the keys are the consecutive sequence numbers First..Next-1 of
//     the head document (AuditKey: 20 decimal digits, so byte order is
//     numeric order), and the record count is Next - First.
//   - Every stored record decodes (DecodeAudit), its Seq equal to its key.
//   - A hash chain (auditchain.go): from record Chain on, each record
//     holds the hash of the one before it (Prev), the head holds the hash
//     of the newest and is signed with the fleet's key at every append,
//     and checkpoints (signed copies of the head) are kept and logged.
//     Records before Chain were written before the chain existed.

// Audit record limits.
const (
	// MaxAuditField bounds each text field of a record.
	MaxAuditField = 1024
	// DefaultAuditMaxRecords and DefaultAuditMaxAge are the bound when
	// AuditLimits leaves them zero.
	DefaultAuditMaxRecords = 100000
	DefaultAuditMaxAge     = 400 * 24 * time.Hour
	// maxAuditTrim bounds the records one append deletes, so a bound that
	// shrank by a million costs many appends, not one long transaction.
	maxAuditTrim = 1000
)

// Audit outcomes.
const (
	AuditOK      = "ok"      // done
	AuditFailed  = "failed"  // allowed, but it failed (the status says why)
	AuditRefused = "refused" // the role may not do it (403)
)

// AuditRecord is one entry of the trail. Its hash (AuditHash) covers
// every field. It owns the record's fields: api.AuditEntry is the same
// fields as the API serves them, converted in one place
// (access.Audit.Entries), which a test keeps to the same JSON names.
type AuditRecord struct {
	Seq     uint64    `json:"seq"`              // assigned by AppendAudit
	Time    time.Time `json:"time"`             // when it was decided
	Who     string    `json:"who"`              // operator name
	Role    string    `json:"role,omitempty"`   // the operator's role then
	Remote  string    `json:"remote,omitempty"` // source address
	Agent   string    `json:"agent,omitempty"`  // User-Agent, or "cli", "signal"
	Action  string    `json:"action"`           // e.g. "rollout.abort"
	Object  string    `json:"object,omitempty"` // e.g. "rollout/r1"
	Outcome string    `json:"outcome"`          // AuditOK, AuditFailed, AuditRefused
	Status  int       `json:"status,omitempty"` // HTTP status, when there was one
	Detail  string    `json:"detail,omitempty"` // reason, error message
	// Count is how many refusals this record stands for (AuditRefused
	// records are aggregated per source, operator and minute); 0 means 1.
	Count uint64 `json:"count,omitempty"`
	// Prev is the hex SHA-256 (AuditHash) of the record before it; ""
	// for the first record of the chain and for records written before
	// the chain existed.
	Prev string `json:"prev,omitempty"`
}

// AuditLimits bound the trail and sign it. Records go once older than
// MaxAge (the retention, measured from the newest record's time) and
// never before. MaxRecords deletes nothing: past it the fleet raises an
// alarm (someone writes the trail unusually often). Zero fields mean the
// defaults.
type AuditLimits struct {
	MaxRecords int
	MaxAge     time.Duration
	// Key signs the head at every append (the fleet's online command
	// key). Nil leaves the head unsigned, which VerifyAudit reports
	// when given keys to check.
	Key ed25519.PrivateKey
}

func (r *AuditRecord) check() error {
	if r.Time.IsZero() {
		return errors.New("no time")
	}
	for _, f := range []struct {
		name, v  string
		required bool
	}{{"who", r.Who, true}, {"role", r.Role, false}, {"remote", r.Remote, false}, {"agent", r.Agent, false},
		{"action", r.Action, true}, {"object", r.Object, false}, {"outcome", r.Outcome, true}, {"detail", r.Detail, false}} {
		if f.required && f.v == "" {
			return fmt.Errorf("no %s", f.name)
		}
		if len(f.v) > MaxAuditField {
			return fmt.Errorf("%s of %d bytes, at most %d", f.name, len(f.v), MaxAuditField)
		}
	}
	switch r.Outcome {
	case AuditOK, AuditFailed, AuditRefused:
	default:
		return fmt.Errorf("outcome %q, want %s, %s or %s", r.Outcome, AuditOK, AuditFailed, AuditRefused)
	}
	if r.Status < 0 || r.Status > 999 {
		return fmt.Errorf("status %d out of range", r.Status)
	}
	if r.Prev != "" && !isHashHex(r.Prev) {
		return fmt.Errorf("prev %q is not 64 lowercase hex digits", Clip(r.Prev, 80))
	}
	return nil
}

// AuditKey is the key of record seq: 20 decimal digits.
func AuditKey(seq uint64) string { return fmt.Sprintf("%020d", seq) }

// DecodeAudit decodes the record stored under key.
func DecodeAudit(key string, raw []byte) (AuditRecord, error) {
	var r AuditRecord
	if err := json.Unmarshal(raw, &r); err != nil {
		return AuditRecord{}, corrupt(bucketFleetAudit, key, err)
	}
	if err := r.check(); err != nil {
		return AuditRecord{}, corrupt(bucketFleetAudit, key, err)
	}
	if AuditKey(r.Seq) != key {
		return AuditRecord{}, corrupt(bucketFleetAudit, key, fmt.Errorf("record says seq %d", r.Seq))
	}
	return r, nil
}

// auditBounds is the trail's head document (AuditHead): records
// First..Next-1 exist; the chain and its signature (auditchain.go).
type auditBounds = AuditHead

const auditBoundsKey = "bounds"

func getAuditBounds(tx Tx) (auditBounds, error) {
	b := auditBounds{First: 1, Next: 1}
	ok, err := tx.Get(FleetAuditMeta, auditBoundsKey, &b)
	if err != nil {
		return b, err
	}
	if ok && (b.First < 1 || b.Next < b.First || b.Chain > b.Next) {
		return b, corrupt(bucketFleetAuditMeta, auditBoundsKey, fmt.Errorf("first %d, next %d, chain %d", b.First, b.Next, b.Chain))
	}
	return b, nil
}

// AppendAudit adds rec (its Seq and Prev are assigned and it is
// returned with its sequence), re-signs the head with lim.Key, and
// deletes the oldest records older than lim.MaxAge, at most maxAuditTrim
// of them per call. A record with a missing or oversized field is
// ErrInvalid.
func AppendAudit(tx Tx, rec AuditRecord, lim AuditLimits) (uint64, error) {
	if lim.MaxAge <= 0 {
		lim.MaxAge = DefaultAuditMaxAge
	}
	rec.Prev = ""
	if err := rec.check(); err != nil {
		return 0, fmt.Errorf("store: audit record: %v: %w", err, ErrInvalid)
	}
	b, err := getAuditBounds(tx)
	if err != nil {
		return 0, err
	}
	if b.Chain == 0 {
		// The first record of the chain: any before it (an upgraded
		// trail) predate it.
		b.Chain, b.Last = b.Next, ""
	}
	rec.Seq, rec.Prev = b.Next, b.Last
	if err := tx.Put(FleetAudit, AuditKey(rec.Seq), rec); err != nil {
		return 0, err
	}
	b.Next++
	b.Last = AuditHash(&rec)
	cutoff := rec.Time.Add(-lim.MaxAge)
	for n := 0; n < maxAuditTrim && b.First < rec.Seq; n++ {
		var raw json.RawMessage
		ok, err := tx.Get(FleetAudit, AuditKey(b.First), &raw)
		if err != nil {
			return 0, err
		}
		if !ok {
			break // deleted by someone else: VerifyAudit must still see the gap
		}
		old, err := DecodeAudit(AuditKey(b.First), raw)
		if err != nil || !old.Time.Before(cutoff) {
			break // a damaged record is VerifyAudit's to report, never trimmed away
		}
		if err := tx.Delete(FleetAudit, AuditKey(b.First)); err != nil {
			return 0, err
		}
		b.First++
	}
	b.sign(lim.Key, rec.Time)
	if err := tx.Put(FleetAuditMeta, auditBoundsKey, b); err != nil {
		return 0, err
	}
	return rec.Seq, nil
}

// AuditCount returns how many records the trail holds.
func AuditCount(tx Tx) (uint64, error) {
	b, err := getAuditBounds(tx)
	return b.Next - b.First, err
}

// AuditQuery selects records. Zero fields select everything.
type AuditQuery struct {
	Who    string    // exactly this operator
	Object string    // objects equal to it or starting with it and "/" (e.g. "rollout", "rollout/r1")
	Action string    // actions equal to it or starting with it and "." (e.g. "rollout", "rollout.abort")
	Since  time.Time // at or after
	Limit  int       // the newest Limit matches; 0: all
}

// Match reports whether q selects r.
func (q *AuditQuery) Match(r *AuditRecord) bool {
	return (q.Who == "" || r.Who == q.Who) &&
		(q.Object == "" || r.Object == q.Object || strings.HasPrefix(r.Object, q.Object+"/")) &&
		(q.Action == "" || r.Action == q.Action || strings.HasPrefix(r.Action, q.Action+".")) &&
		!r.Time.Before(q.Since)
}

// Audit returns the records q selects, oldest first. It reads the whole
// trail (bounded by AuditLimits) and keeps at most q.Limit records; a
// record whose stored JSON does not contain the JSON text of every
// operator, object and action asked for cannot match and is not decoded.
func Audit(tx Tx, q AuditQuery) ([]AuditRecord, error) {
	var needles [][]byte
	for _, s := range []string{q.Who, q.Object, q.Action} {
		if s != "" {
			enc, err := json.Marshal(s) // escaped as the stored record is
			if err != nil {
				return nil, fmt.Errorf("store: audit query: %v: %w", err, ErrInvalid)
			}
			needles = append(needles, enc[1:len(enc)-1])
		}
	}
	var ring []AuditRecord // the newest q.Limit matches; oldest at ring[next] once full
	next := 0
	err := tx.ForEach(FleetAudit, func(k string, raw []byte) error {
		for _, n := range needles {
			if !bytes.Contains(raw, n) {
				return nil
			}
		}
		r, err := DecodeAudit(k, raw)
		if err != nil {
			return err
		}
		if !q.Match(&r) {
			return nil
		}
		if q.Limit > 0 && len(ring) == q.Limit {
			ring[next] = r
			next = (next + 1) % q.Limit
			return nil
		}
		ring = append(ring, r)
		return nil
	})
	return append(ring[next:], ring[:next]...), err
}

// checkAudit verifies that the audit records decode and that their keys are
// exactly the bounds' range.
func checkAudit(tx *bolt.Tx) error {
	var errs []error
	var b auditBounds
	if raw := tx.Bucket(bucketFleetAuditMeta).Get([]byte(auditBoundsKey)); raw != nil {
		if err := json.Unmarshal(raw, &b); err != nil || b.First < 1 || b.Next < b.First {
			return corrupt(bucketFleetAuditMeta, auditBoundsKey, fmt.Errorf("bounds %s", raw))
		}
	} else {
		b = auditBounds{First: 1, Next: 1}
	}
	want := b.First
	tx.Bucket(bucketFleetAudit).ForEach(func(k, v []byte) error {
		if _, err := DecodeAudit(string(k), v); err != nil {
			errs = append(errs, err)
		} else if string(k) != AuditKey(want) {
			errs = append(errs, corrupt(bucketFleetAudit, string(k), fmt.Errorf("want record %d next", want)))
		}
		want++
		return nil
	})
	if want != b.Next {
		errs = append(errs, corrupt(bucketFleetAuditMeta, auditBoundsKey, fmt.Errorf("bounds %d..%d, records up to %d", b.First, b.Next-1, want-1)))
	}
	return errors.Join(errs...)
}
