package store

import (
	"bytes"
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
//     of the oldest records, by AppendAudit's bound.
//   - So the keys are the consecutive sequence numbers First..Next-1 of
//     the bounds document (AuditKey: 20 decimal digits, so byte order is
//     numeric order), and the record count is Next - First.
//   - Every stored record decodes (DecodeAudit), its Seq equal to its key.

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

// AuditRecord is one entry of the trail.
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
}

// AuditLimits bound the trail: the oldest records go when there are more
// than MaxRecords or when they are older than MaxAge (measured from the
// newest record's time). Zero fields mean the defaults.
type AuditLimits struct {
	MaxRecords int
	MaxAge     time.Duration
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

// auditBounds is the trail's bounds document: records First..Next-1 exist.
type auditBounds struct {
	First uint64 `json:"first"`
	Next  uint64 `json:"next"`
}

const auditBoundsKey = "bounds"

func getAuditBounds(tx Tx) (auditBounds, error) {
	b := auditBounds{First: 1, Next: 1}
	ok, err := tx.Get(FleetAuditMeta, auditBoundsKey, &b)
	if err != nil {
		return b, err
	}
	if ok && (b.First < 1 || b.Next < b.First) {
		return b, corrupt(bucketFleetAuditMeta, auditBoundsKey, fmt.Errorf("first %d, next %d", b.First, b.Next))
	}
	return b, nil
}

// AppendAudit adds rec (its Seq is assigned and returned) and deletes the
// oldest records beyond lim, at most maxAuditTrim of them per call. A
// record with a missing or oversized field is ErrInvalid.
func AppendAudit(tx Tx, rec AuditRecord, lim AuditLimits) (uint64, error) {
	if lim.MaxRecords <= 0 {
		lim.MaxRecords = DefaultAuditMaxRecords
	}
	if lim.MaxAge <= 0 {
		lim.MaxAge = DefaultAuditMaxAge
	}
	if err := rec.check(); err != nil {
		return 0, fmt.Errorf("store: audit record: %v: %w", err, ErrInvalid)
	}
	b, err := getAuditBounds(tx)
	if err != nil {
		return 0, err
	}
	rec.Seq = b.Next
	if err := tx.Put(FleetAudit, AuditKey(rec.Seq), rec); err != nil {
		return 0, err
	}
	b.Next++
	cutoff := rec.Time.Add(-lim.MaxAge)
	for n := 0; n < maxAuditTrim && b.First < rec.Seq; n++ {
		if b.Next-b.First <= uint64(lim.MaxRecords) {
			var raw json.RawMessage
			ok, err := tx.Get(FleetAudit, AuditKey(b.First), &raw)
			if err != nil {
				return 0, err
			}
			if ok {
				old, err := DecodeAudit(AuditKey(b.First), raw)
				if err != nil {
					return 0, err
				}
				if !old.Time.Before(cutoff) {
					break
				}
			}
		}
		if err := tx.Delete(FleetAudit, AuditKey(b.First)); err != nil && !errors.Is(err, ErrNotFound) {
			return 0, err
		}
		b.First++
	}
	if err := tx.Put(FleetAuditMeta, auditBoundsKey, b); err != nil {
		return 0, err
	}
	return rec.Seq, nil
}

// AuditQuery selects records. Zero fields select everything.
type AuditQuery struct {
	Who    string    // exactly this operator
	Object string    // objects equal to it or starting with it and "/" (e.g. "rollout", "rollout/r1")
	Action string    // actions equal to it or starting with it and "." (e.g. "rollout", "rollout.abort")
	Since  time.Time // at or after
	Limit  int       // the newest Limit matches; 0: all
}

func (q *AuditQuery) match(r *AuditRecord) bool {
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
		if !q.match(&r) {
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
