package store

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The audit trail's hash chain. What it proves: that the records from
// Chain on are the ones trit-fleet wrote, in order, with none changed,
// added or removed in between — checked against the head, which the
// fleet signs with its online key at every append, and against the
// checkpoints (signed copies of the head, kept, logged and exportable).
// Someone who can write the database but does not hold the key can
// change, delete or insert a record, or cut the trail short, only in a
// way VerifyAudit reports. What it does not prove: anything to someone
// who holds the fleet's key (they can rewrite and re-sign the whole
// trail), that a restored older copy of the database is not the latest
// (only a checkpoint kept elsewhere — an export, the log — shows the
// trail once went further), or that what a record says happened is true.
//
// Invariants, kept by AppendAudit and AuditCheckpoint:
//   - Every record from Chain on holds in Prev the AuditHash of the record
//     before it (record Chain holds ""), and the head's Last is the hash
//     of record Next-1.
//   - The head's signature (Key, Sig) covers First, Next, Chain, Last and
//     the time it was made (headMessage).
//   - A checkpoint is the head as it was at a moment, stored under
//     "checkpoint/<Next>" in FleetAuditMeta; at most maxAuditCheckpoints
//     are kept, the oldest going first, and those that cover no stored
//     record.

// AuditHead is the trail's head document, and each checkpoint: records
// First..Next-1 exist, chained from Chain, the newest hashing to Last,
// signed at Signed by the key Key.
type AuditHead struct {
	First  uint64    `json:"first"`
	Next   uint64    `json:"next"`
	Chain  uint64    `json:"chain,omitempty"` // the first chained record; 0: none written yet
	Last   string    `json:"last,omitempty"`  // AuditHash of record Next-1, when chained
	Key    string    `json:"key,omitempty"`   // hex Ed25519 public key that signed
	Sig    string    `json:"sig,omitempty"`   // hex Ed25519 signature of headMessage
	Signed time.Time `json:"signed,omitzero"` // when it was signed
}

const (
	auditCheckpointPrefix = "checkpoint/"
	maxAuditCheckpoints   = 10000
	maxAuditProblems      = 20
)

// AuditHash is the hex SHA-256 of every field of r (Prev included), each
// length-prefixed, so it does not depend on how a store keeps the JSON.
func AuditHash(r *AuditRecord) string {
	h := sha256.New()
	h.Write([]byte("trit-audit-record/1\x00"))
	var n [4]byte
	for _, f := range []string{strconv.FormatUint(r.Seq, 10), r.Time.UTC().Format(time.RFC3339Nano), r.Who, r.Role, r.Remote, r.Agent,
		r.Action, r.Object, r.Outcome, strconv.Itoa(r.Status), r.Detail, strconv.FormatUint(r.Count, 10), r.Prev} {
		binary.BigEndian.PutUint32(n[:], uint32(len(f)))
		h.Write(n[:])
		h.Write([]byte(f))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// headMessage is what a head's signature covers.
func headMessage(h *AuditHead) []byte {
	return fmt.Appendf(nil, "trit-audit-head/1 first=%d next=%d chain=%d last=%s signed=%s",
		h.First, h.Next, h.Chain, h.Last, h.Signed.UTC().Format(time.RFC3339Nano))
}

// sign signs h at at with key (nil: leaves it unsigned).
func (h *AuditHead) sign(key ed25519.PrivateKey, at time.Time) {
	h.Key, h.Sig, h.Signed = "", "", at
	if len(key) != ed25519.PrivateKeySize {
		return
	}
	h.Key = hex.EncodeToString(key.Public().(ed25519.PublicKey))
	h.Sig = hex.EncodeToString(ed25519.Sign(key, headMessage(h)))
}

// Verify checks h's signature against keys: nil if one of them made it.
func (h *AuditHead) Verify(keys []ed25519.PublicKey) error {
	if h.Sig == "" {
		return errors.New("not signed")
	}
	sig, err := hex.DecodeString(h.Sig)
	if err != nil || len(sig) != ed25519.SignatureSize {
		return errors.New("the signature is not 64 bytes of hex")
	}
	for _, k := range keys {
		if hex.EncodeToString(k) == h.Key && ed25519.Verify(k, headMessage(h), sig) {
			return nil
		}
	}
	for _, k := range keys {
		if ed25519.Verify(k, headMessage(h), sig) {
			return nil
		}
	}
	return fmt.Errorf("the signature does not verify with the fleet's key (signed by key %.16s…)", h.Key)
}

func isHashHex(s string) bool {
	if len(s) != 2*sha256.Size {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// Clip shortens s to at most n bytes for a message, marking the cut.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// AuditCheckpoint signs the head anew at now with key and keeps a copy
// of it as a checkpoint, unless the latest checkpoint already covers
// every record (then ok is false). Checkpoints that cover no stored
// record go, and the oldest beyond maxAuditCheckpoints.
func AuditCheckpoint(tx Tx, key ed25519.PrivateKey, now time.Time) (head AuditHead, ok bool, err error) {
	b, err := getAuditBounds(tx)
	if err != nil {
		return b, false, err
	}
	cps, err := AuditCheckpoints(tx)
	if err != nil {
		return b, false, err
	}
	if len(cps) > 0 && cps[len(cps)-1].Next == b.Next || b.Next == 1 {
		return b, false, nil
	}
	b.sign(key, now)
	if err := tx.Put(FleetAuditMeta, auditBoundsKey, b); err != nil {
		return b, false, err
	}
	if err := tx.Put(FleetAuditMeta, auditCheckpointPrefix+AuditKey(b.Next), b); err != nil {
		return b, false, err
	}
	cps = append(cps, b)
	for i, cp := range cps {
		if cp.Next > b.First && len(cps)-i <= maxAuditCheckpoints {
			break
		}
		if err := tx.Delete(FleetAuditMeta, auditCheckpointPrefix+AuditKey(cp.Next)); err != nil && !errors.Is(err, ErrNotFound) {
			return b, false, err
		}
	}
	return b, true, nil
}

// AuditCheckpoints returns the stored checkpoints, oldest first. One
// that does not decode is returned as a head with only Next set (from
// its key) and Sig "damaged", which VerifyAudit reports.
func AuditCheckpoints(tx Tx) ([]AuditHead, error) {
	var out []AuditHead
	err := tx.ForEach(FleetAuditMeta, func(k string, raw []byte) error {
		rest, ok := strings.CutPrefix(k, auditCheckpointPrefix)
		if !ok {
			return nil
		}
		var h AuditHead
		if err := json.Unmarshal(raw, &h); err != nil {
			n, _ := strconv.ParseUint(rest, 10, 64)
			h = AuditHead{Next: n, Sig: "damaged"}
		}
		out = append(out, h)
		return nil
	})
	return out, err
}

// AuditReport is what VerifyAudit found.
type AuditReport struct {
	Head        AuditHead  `json:"head"`
	Records     uint64     `json:"records"`
	Checkpoints int        `json:"checkpoints"`
	Latest      *AuditHead `json:"latest_checkpoint,omitempty"`
	Given       int        `json:"given_checkpoints,omitempty"` // checkpoints from outside the store checked too
	Broken      uint64     `json:"broken,omitempty"`            // the first broken record's sequence; 0: none named
	Problems    []string   `json:"problems,omitempty"`          // what is wrong, at most maxAuditProblems
	Notes       []string   `json:"notes,omitempty"`             // what is not covered, and why
	Checked     time.Time  `json:"checked"`
	Keys        []string   `json:"keys,omitempty"` // the public keys checked against (hex)
	more        int        // problems beyond the bound
}

// OK reports whether nothing is wrong.
func (r *AuditReport) OK() bool { return len(r.Problems) == 0 }

func (r *AuditReport) problem(broken uint64, format string, args ...any) {
	if broken > 0 && (r.Broken == 0 || broken < r.Broken) {
		r.Broken = broken
	}
	if len(r.Problems) >= maxAuditProblems {
		r.more++
		return
	}
	r.Problems = append(r.Problems, fmt.Sprintf(format, args...))
}

// Summary says in one line what the report found.
func (r *AuditReport) Summary() string {
	if r.OK() {
		s := fmt.Sprintf("audit trail intact: records %d..%d (%d), head signed %s", r.Head.First, r.Head.Next-1, r.Records, r.Head.Signed.UTC().Format(time.RFC3339))
		if r.Latest != nil {
			s += fmt.Sprintf(", %d checkpoints, the latest at record %d (%s)", r.Checkpoints, r.Latest.Next-1, r.Latest.Signed.UTC().Format(time.RFC3339))
		}
		return s
	}
	first := "no record named"
	if r.Broken > 0 {
		first = fmt.Sprintf("first broken record %d", r.Broken)
	}
	s := fmt.Sprintf("audit trail BROKEN (%s): %s", first, r.Problems[0])
	if n := len(r.Problems) - 1 + r.more; n > 0 {
		s += fmt.Sprintf(" (and %d more problems)", n)
	}
	return s
}

// VerifyAudit checks the trail in tx: the records' sequence, each
// record's decoding and its link to the one before, the head's hash of
// the newest record and its signature, and every checkpoint (stored, and
// given from elsewhere: an export, the log) against the records. keys
// are the public keys the head and checkpoints must be signed with (nil:
// signatures are not checked). The error is the store's; what is wrong
// with the trail is in the report, the first broken record named.
func VerifyAudit(tx Tx, keys []ed25519.PublicKey, given []AuditHead, now time.Time) (*AuditReport, error) {
	rep := &AuditReport{Checked: now, Given: len(given)}
	for _, k := range keys {
		rep.Keys = append(rep.Keys, hex.EncodeToString(k))
	}
	head, err := getAuditBounds(tx)
	var cerr *CorruptError
	if errors.As(err, &cerr) {
		rep.problem(0, "the head does not decode: %v", err)
	} else if err != nil {
		return nil, err
	}
	rep.Head = head
	stored, err := AuditCheckpoints(tx)
	if err != nil {
		return nil, err
	}
	rep.Checkpoints = len(stored)
	if len(stored) > 0 {
		rep.Latest = &stored[len(stored)-1]
	}
	cps := append(slices.Clone(stored), given...)
	// The hash each checkpoint says its newest record has.
	want := map[uint64][]int{}
	for i := range cps {
		cp := &cps[i]
		what := fmt.Sprintf("checkpoint signed %s (records up to %d)", cp.Signed.UTC().Format(time.RFC3339), cp.Next-1)
		if i >= len(stored) {
			what = "given " + what
		}
		switch {
		case cp.Sig == "damaged":
			rep.problem(0, "the checkpoint stored under %s does not decode", AuditKey(cp.Next))
			continue
		case keys != nil:
			if err := cp.Verify(keys); err != nil {
				rep.problem(0, "%s: %v", what, err)
				continue
			}
		}
		if cp.Next > head.Next {
			rep.problem(head.Next, "%s: the trail ends at record %d: records %d..%d were deleted, or this is an older copy of the database",
				what, head.Next-1, head.Next, cp.Next-1)
			continue
		}
		if cp.Chain != 0 && head.Chain != cp.Chain {
			rep.problem(0, "%s: the chain starts at record %d, the head says %d", what, cp.Chain, head.Chain)
		}
		if cp.Next > 1 && cp.Next-1 >= max(cp.Chain, 1) && cp.Chain != 0 {
			want[cp.Next-1] = append(want[cp.Next-1], i)
		}
	}
	var headErr error
	if keys != nil && head.Next > 1 && head.Chain != 0 {
		headErr = head.Verify(keys)
	}
	vouched := uint64(0) // the newest record a verified checkpoint matched
	if head.Chain > head.First {
		rep.Notes = append(rep.Notes, fmt.Sprintf("records %d..%d were written before the chain existed (an older trit-fleet): they are not covered",
			head.First, min(head.Chain, head.Next)-1))
	}
	expect, prevSeq := head.First, uint64(0)
	var prevHash string
	// A problem with a record before the chain (an older trit-fleet's, or
	// a chain restarted after a break) is a note: nothing vouches for them.
	problem := func(seq uint64, format string, args ...any) {
		if head.Chain == 0 || seq < head.Chain {
			if len(rep.Notes) < maxAuditProblems {
				rep.Notes = append(rep.Notes, "before the chain: "+fmt.Sprintf(format, args...))
			}
			return
		}
		rep.problem(seq, format, args...)
	}
	err = tx.ForEach(FleetAudit, func(k string, raw []byte) error {
		seq, perr := strconv.ParseUint(k, 10, 64)
		if perr != nil || AuditKey(seq) != k {
			problem(expect, "a record is stored under %q, not a sequence number", Clip(k, 40))
			return nil
		}
		switch {
		case seq < head.First:
			rep.problem(seq, "record %d is before the trail's first record %d (written outside trit-fleet)", seq, head.First)
			return nil
		case seq >= head.Next:
			rep.problem(seq, "record %d is past the trail's last record %d (written outside trit-fleet)", seq, head.Next-1)
			return nil
		case seq > expect:
			if head.Chain != 0 && seq-1 >= head.Chain {
				rep.problem(max(expect, head.Chain), "records %d..%d are missing (deleted)", expect, seq-1)
			} else {
				problem(seq-1, "records %d..%d are missing (deleted)", expect, seq-1)
			}
		}
		expect = seq + 1
		rep.Records++
		rec, derr := DecodeAudit(k, raw)
		if derr != nil {
			problem(seq, "record %d does not decode: %v", seq, derr)
			prevSeq, prevHash = 0, ""
			return nil
		}
		h := AuditHash(&rec)
		if head.Chain == 0 && rec.Prev != "" && len(rep.Problems) == 0 {
			rep.problem(seq, "record %d is chained, but the head says the trail has no chain: the head was changed", seq)
		}
		if head.Chain != 0 && seq >= head.Chain {
			switch {
			case seq == head.Chain && rec.Prev != "":
				rep.problem(seq, "record %d starts the chain but links to a record before it", seq)
			case prevSeq == seq-1 && prevHash != "" && rec.Prev != prevHash:
				rep.problem(seq-1, "record %d was changed (it does not hash to what record %d holds), or record %d's link to it", seq-1, seq, seq)
			}
		}
		for _, i := range want[seq] {
			if cps[i].Last != h {
				rep.problem(seq, "record %d does not match the checkpoint signed %s: it, or a record before it, was changed", seq, cps[i].Signed.UTC().Format(time.RFC3339))
			} else if rep.Broken == 0 {
				vouched = seq
			}
		}
		prevSeq, prevHash = seq, h
		if seq < head.Chain || head.Chain == 0 {
			prevHash = "" // not chained: nothing to compare the next link to
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if expect < head.Next {
		rep.problem(expect, "records %d..%d are missing (deleted)", expect, head.Next-1)
	}
	if last := head.Next - 1; head.Chain != 0 && last >= head.Chain && head.Next > head.First && prevSeq == last && prevHash != head.Last {
		rep.problem(last, "record %d was changed: it does not hash to the head's %.16s…", last, head.Last)
	}
	if headErr != nil {
		// Nothing past the newest checkpoint that matched can be vouched
		// for: the first record after it is the first one named.
		from := max(vouched+1, head.First, head.Chain)
		at := from
		if rep.Broken != 0 {
			at = 0 // a record already named is the better answer
		}
		rep.problem(at, "the head (records %d..%d): %v: the trail was written outside trit-fleet; records from %d on cannot be vouched for",
			head.First, head.Next-1, headErr, from)
	}
	return rep, nil
}

// RestartAuditChain starts a new chain at the next record, rec (after a
// broken one an operator chose to run with): the records before it stay
// and are no longer covered; every checkpoint goes.
func RestartAuditChain(tx Tx, rec AuditRecord, lim AuditLimits) error {
	b, err := getAuditBounds(tx)
	var cerr *CorruptError
	if errors.As(err, &cerr) {
		// An unreadable head: start over after the highest record stored.
		b = AuditHead{First: 1, Next: 1}
		err = tx.ForEach(FleetAudit, func(k string, _ []byte) error {
			if seq, perr := strconv.ParseUint(k, 10, 64); perr == nil && seq >= b.Next {
				if b.First == 1 && b.Next == 1 {
					b.First = seq
				}
				b.Next = seq + 1
			}
			return nil
		})
	}
	if err != nil {
		return err
	}
	cps, err := AuditCheckpoints(tx)
	if err != nil {
		return err
	}
	for _, cp := range cps {
		if err := tx.Delete(FleetAuditMeta, auditCheckpointPrefix+AuditKey(cp.Next)); err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
	}
	b.Chain, b.Last = 0, ""
	if err := tx.Put(FleetAuditMeta, auditBoundsKey, b); err != nil {
		return err
	}
	_, err = AppendAudit(tx, rec, lim)
	return err
}
