package store

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"time"
)

// An export of the audit trail: one JSON object a line — {"head": …}
// first, then {"checkpoint": …} for each stored checkpoint, oldest first,
// then {"record": …} for each record, oldest first, as stored. Kept
// elsewhere it is the evidence the database alone cannot be: its head
// and checkpoints, given to VerifyAudit later (trit-fleet audit verify
// --checkpoints), show whether the trail still holds what it held, and
// VerifyAuditExport checks the export itself, offline, with the fleet's
// public key.

// AuditExportLine is one line of an export.
type AuditExportLine struct {
	Head       *AuditHead      `json:"head,omitempty"`
	Checkpoint *AuditHead      `json:"checkpoint,omitempty"`
	Record     json.RawMessage `json:"record,omitempty"`
}

// Bounds of an export read back.
const (
	// MaxAuditExportLine bounds one line: a record of every field at
	// MaxAuditField, escaped, with room to spare.
	MaxAuditExportLine = 64 << 10
	// MaxAuditExportRecords bounds the records read from one export.
	MaxAuditExportRecords = 10_000_000
)

// ExportAudit writes the trail in tx to w.
func ExportAudit(tx Tx, w io.Writer) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	head, err := getAuditBounds(tx)
	if err != nil {
		return err
	}
	if err := enc.Encode(AuditExportLine{Head: &head}); err != nil {
		return err
	}
	cps, err := AuditCheckpoints(tx)
	if err != nil {
		return err
	}
	for i := range cps {
		if err := enc.Encode(AuditExportLine{Checkpoint: &cps[i]}); err != nil {
			return err
		}
	}
	err = tx.ForEach(FleetAudit, func(_ string, raw []byte) error {
		return enc.Encode(AuditExportLine{Record: bytes.Clone(raw)})
	})
	if err != nil {
		return err
	}
	return bw.Flush()
}

// ReadAuditExport reads an export into memory: its head, checkpoints and
// records. A line that is not one of the three, a record that is not a
// JSON object with a sequence, a second head, or more than the bounds,
// is an error naming the line.
func ReadAuditExport(r io.Reader) (head *AuditHead, cps []AuditHead, recs map[string][]byte, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), MaxAuditExportLine)
	recs = map[string][]byte{}
	n := 0
	for sc.Scan() {
		n++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var l AuditExportLine
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&l); err != nil {
			return nil, nil, nil, fmt.Errorf("audit export line %d: %v", n, err)
		}
		set := 0
		for _, b := range []bool{l.Head != nil, l.Checkpoint != nil, l.Record != nil} {
			if b {
				set++
			}
		}
		switch {
		case set != 1:
			return nil, nil, nil, fmt.Errorf("audit export line %d: want exactly one of head, checkpoint, record", n)
		case l.Head != nil:
			if head != nil {
				return nil, nil, nil, fmt.Errorf("audit export line %d: a second head", n)
			}
			head = l.Head
		case l.Checkpoint != nil:
			if len(cps) >= maxAuditCheckpoints {
				return nil, nil, nil, fmt.Errorf("audit export line %d: more than %d checkpoints", n, maxAuditCheckpoints)
			}
			cps = append(cps, *l.Checkpoint)
		default:
			var s struct {
				Seq uint64 `json:"seq"`
			}
			if err := json.Unmarshal(l.Record, &s); err != nil {
				return nil, nil, nil, fmt.Errorf("audit export line %d: record: %v", n, err)
			}
			if len(recs) >= MaxAuditExportRecords {
				return nil, nil, nil, fmt.Errorf("audit export line %d: more than %d records", n, MaxAuditExportRecords)
			}
			if _, dup := recs[AuditKey(s.Seq)]; dup {
				return nil, nil, nil, fmt.Errorf("audit export line %d: record %d twice", n, s.Seq)
			}
			recs[AuditKey(s.Seq)] = bytes.Clone(l.Record)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, nil, nil, fmt.Errorf("audit export line %d: %w", n+1, err)
	}
	if head == nil {
		return nil, nil, nil, fmt.Errorf("audit export: no head line")
	}
	return head, cps, recs, nil
}

// VerifyAuditExport checks an export as VerifyAudit checks a store, with
// given checkpoints from elsewhere too.
func VerifyAuditExport(r io.Reader, keys []ed25519.PublicKey, given []AuditHead, now time.Time) (*AuditReport, error) {
	head, cps, recs, err := ReadAuditExport(r)
	if err != nil {
		return nil, err
	}
	tx := &memAuditTx{head: head, cps: cps, recs: recs}
	return VerifyAudit(tx, keys, given, now)
}

// memAuditTx is a read-only Tx over an export's trail.
type memAuditTx struct {
	head *AuditHead
	cps  []AuditHead
	recs map[string][]byte
}

func (m *memAuditTx) Put(Collection, string, any) error {
	return fmt.Errorf("store: an audit export is read-only: %w", ErrInvalid)
}
func (m *memAuditTx) Delete(Collection, string) error {
	return fmt.Errorf("store: an audit export is read-only: %w", ErrInvalid)
}

func (m *memAuditTx) Get(coll Collection, key string, v any) (bool, error) {
	var raw []byte
	switch {
	case coll == FleetAuditMeta && key == auditBoundsKey:
		raw, _ = json.Marshal(m.head)
	case coll == FleetAudit:
		raw = m.recs[key]
	}
	if raw == nil {
		return false, nil
	}
	return true, decodeDoc(coll, key, raw, v)
}

func (m *memAuditTx) ForEach(coll Collection, fn func(key string, raw []byte) error) error {
	switch coll {
	case FleetAuditMeta:
		for _, cp := range m.cps {
			raw, _ := json.Marshal(cp)
			if err := fn(auditCheckpointPrefix+AuditKey(cp.Next), raw); err != nil {
				return err
			}
		}
	case FleetAudit:
		for _, k := range slices.Sorted(maps.Keys(m.recs)) {
			if err := fn(k, m.recs[k]); err != nil {
				return err
			}
		}
	}
	return nil
}
