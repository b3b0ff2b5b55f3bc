package access

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/store"
)

// Checking the audit trail's hash chain (store/auditchain.go says what it
// proves and what it does not): at start (trit-fleet refuses to start on
// a broken chain unless [audit] start_on_broken), every VerifyEvery while
// it runs, and on request (GET /v1/audit/verify, trit-fleet audit verify).
// A broken chain is an alarm (the console's overview, /metrics
// trit_fleet_alarms{alarm="audit-chain"}) and an error in the log until a
// check finds it whole again. Every CheckpointEvery the head is signed
// anew and kept as a checkpoint, and logged with its hash and signature,
// so the log holds evidence the database alone cannot: a trail that goes
// back (records deleted, an older copy of the database put in place) is
// reported against the highest head this process has seen.

// Defaults of the checks' schedule.
const (
	DefaultAuditVerifyEvery     = time.Hour
	DefaultAuditCheckpointEvery = time.Hour
)

// Verify checks the trail now, and against the highest head this process
// has seen; it remembers the report for Alarms and logs a broken chain.
func (a *Audit) Verify() (*store.AuditReport, error) {
	a.Flush() // refusals waiting for their minute are written first
	var rep *store.AuditReport
	err := a.db.View(func(tx store.Tx) error {
		var err error
		rep, err = store.VerifyAudit(tx, a.keys, nil, a.now())
		return err
	})
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	h := a.check.highest
	switch {
	case h.Next > rep.Head.Next:
		rep.Problems = append(rep.Problems, fmt.Sprintf("the trail went back while trit-fleet ran: it reached record %d, it now ends at %d (records deleted, or an older copy of the database)",
			h.Next-1, rep.Head.Next-1))
		rep.Broken = min(max(rep.Broken, rep.Head.Next), rep.Head.Next)
	case h.Next == rep.Head.Next && h.Last != "" && h.Last != rep.Head.Last:
		rep.Problems = append(rep.Problems, fmt.Sprintf("record %d changed while trit-fleet ran", h.Next-1))
		rep.Broken = h.Next - 1
	}
	if rep.OK() && rep.Head.Next >= h.Next {
		a.check.highest = rep.Head
	}
	was := a.check.latest
	a.check.latest = rep
	a.mu.Unlock()
	switch {
	case !rep.OK():
		a.log.Error("audit trail broken", "broken", rep.Broken, "problems", len(rep.Problems), "summary", rep.Summary())
	case was != nil && !was.OK():
		a.log.Info("audit trail intact again", "summary", rep.Summary())
	}
	return rep, nil
}

// Checkpoint signs the head anew and keeps it as a checkpoint, if
// records were added since the latest; it logs the checkpoint.
func (a *Audit) Checkpoint() error {
	a.Flush()
	var head store.AuditHead
	var ok bool
	err := a.db.Update(func(tx store.Tx) error {
		var err error
		head, ok, err = store.AuditCheckpoint(tx, a.lim.Key, a.now())
		return err
	})
	if err != nil {
		return err
	}
	if ok {
		a.mu.Lock()
		if head.Next >= a.check.highest.Next {
			a.check.highest = head
		}
		a.mu.Unlock()
		a.log.Info("audit checkpoint", "first", head.First, "last_seq", head.Next-1, "last_hash", head.Last, "signed", head.Signed.UTC().Format(time.RFC3339Nano), "key", head.Key, "sig", head.Sig)
	}
	return nil
}

// Restart starts a new chain after a broken one that an operator chose
// to run with ([audit] start_on_broken): the records before it stay,
// and are reported as not covered; the first record of the new chain
// says why (action audit.chain-restart, with the broken chain's
// summary). The old checkpoints go: they cover the old chain.
func (a *Audit) Restart(why string) error {
	rec := store.AuditRecord{Time: a.now(), Who: "trit-fleet", Agent: "start", Action: "audit.chain-restart", Outcome: store.AuditFailed,
		Detail: clipAudit("started with [audit] start_on_broken on a broken chain: " + why)}
	err := a.db.Update(func(tx store.Tx) error { return store.RestartAuditChain(tx, rec, a.lim) })
	if err != nil {
		return err
	}
	a.mu.Lock()
	a.check = chainCheck{}
	a.mu.Unlock()
	a.log.Warn("audit chain restarted on a broken trail", "why", why)
	return nil
}

// Watch checkpoints and verifies the trail on its schedule until ctx
// ends (zero durations: the defaults).
func (a *Audit) Watch(ctx context.Context, checkpointEvery, verifyEvery time.Duration) {
	if checkpointEvery <= 0 {
		checkpointEvery = DefaultAuditCheckpointEvery
	}
	if verifyEvery <= 0 {
		verifyEvery = DefaultAuditVerifyEvery
	}
	cp, vf := time.NewTicker(checkpointEvery), time.NewTicker(verifyEvery)
	defer cp.Stop()
	defer vf.Stop()
	for {
		select {
		case <-ctx.Done():
			a.Flush()
			return
		case <-cp.C:
			if err := a.Checkpoint(); err != nil {
				a.log.Error("audit checkpoint failed", "err", err)
			}
		case <-vf.C:
			if _, err := a.Verify(); err != nil {
				a.log.Error("audit check failed", "err", err)
			}
		}
	}
}

// Alarm is one of the trail's conditions that need an operator, as the
// service raises it among its own (fleet.Alarm, the same fields).
type Alarm struct {
	Name string // stable, for the metric's label: "audit-chain"
	Text string // what is wrong and what to do, for a person
}

// Alarms raises the broken chain, and a trail past [audit] max_records.
func (a *Audit) Alarms() []Alarm {
	a.mu.Lock()
	rep := a.check.latest
	a.mu.Unlock()
	if rep == nil {
		return nil
	}
	var out []Alarm
	if !rep.OK() {
		out = append(out, Alarm{Name: "audit-chain", Text: fmt.Sprintf("The audit trail's hash chain is broken (checked %s): %s. Records were changed or deleted outside trit-fleet: compare with your exports (trit-fleet audit verify).",
			rep.Checked.UTC().Format(time.RFC3339), rep.Summary())})
	}
	maxRecords := a.lim.MaxRecords
	if maxRecords <= 0 {
		maxRecords = store.DefaultAuditMaxRecords
	}
	if rep.Records > uint64(maxRecords) {
		out = append(out, Alarm{Name: "audit-size", Text: fmt.Sprintf("The audit trail holds %d records, more than [audit] max_records (%d); none younger than the retention is deleted. Look at who writes it so often (tritctl audit).",
			rep.Records, maxRecords)})
	}
	return out
}

// Verification is rep as the API shows it.
func Verification(rep *store.AuditReport) api.AuditVerification {
	v := api.AuditVerification{OK: rep.OK(), Summary: rep.Summary(), Broken: rep.Broken, Problems: rep.Problems, Notes: rep.Notes,
		First: rep.Head.First, Next: rep.Head.Next, Records: rep.Records, Checkpoints: rep.Checkpoints, Checked: rep.Checked}
	if rep.Latest != nil {
		v.LatestSeq, v.LatestTime = rep.Latest.Next-1, rep.Latest.Signed
	}
	return v
}

// ErrAuditBroken refuses to start on a broken audit trail.
var ErrAuditBroken = errors.New("fleet: the audit trail is broken")
