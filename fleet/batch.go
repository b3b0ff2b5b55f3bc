package fleet

import (
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet/fault"
	"github.com/trit-iot/trit/fleet/inventory"
	"github.com/trit-iot/trit/fleet/rollout"
	"github.com/trit-iot/trit/store"
	"github.com/trit-iot/trit/wire"
)

// A batch is one store transaction's worth of device messages (intake.go,
// handleBatch): the device records and rollouts they touch, read once and
// written back once at the end, and what to report once the transaction
// commits. Each kind of message has its applier below; they share only
// the batch. It knows the service only by what batchEnv gives it, so it
// sits below the service in the package's layering (scripts/fleetgraph.go)
// and can be read without it.
//
// Invariants:
//   - A batch lives for one run of one transaction: a run the database
//     cancels for a conflict starts from a new batch, so nothing a
//     cancelled run gathered is acknowledged or reported.
//   - Every device record the batch read is written back; a rollout only
//     if an applier changed it (changed).
//   - A record that does not decode (damaged) is as if unknown: its
//     device's messages are dropped, not acknowledged, and nothing else
//     in the batch is stopped by it.
//   - Nothing leaves the batch but log lines and the telemetry and alert
//     counters (a run the database cancels has counted already):
//     acknowledgements and alert lines are sent after the commit
//     (Service.afterBatch).
type batch struct {
	env batchEnv
	tx  store.Tx
	now time.Time

	devices  map[string]*inventory.Device
	rollouts map[string]*rollout.Rollout // nil value: not found
	changed  map[string]bool             // rollouts to write back
	damaged  map[string]string           // records that do not decode: device or rollout ID -> which

	// What the service reports after the commit (afterBatch).
	acks      map[string][]string // device -> event IDs
	finished  []api.DeviceState   // final states of devices' attempts, for the metrics
	alerts    []string            // devices whose drift crossed the alert threshold
	uncertain []string            // devices whose unknown rate crossed its alert threshold
}

// batchEnv is what a batch needs of the service: its log, its alert
// thresholds (Options.DriftAlert, UnknownAlert) and the counters of
// telemetry and alerts (Metrics).
type batchEnv struct {
	log           *slog.Logger
	alerts        inventory.Alerts
	telemetry     *atomic.Uint64
	driftAlerts   *atomic.Uint64
	unknownAlerts *atomic.Uint64
}

// decoded is an incoming message that passed its decoder.
type decoded struct {
	device    string
	state     *wire.State
	event     *wire.Event
	telemetry *wire.Telemetry
	response  *wire.Response
}

func newBatch(env batchEnv, tx store.Tx, now time.Time) *batch {
	return &batch{env: env, tx: tx, now: now, devices: map[string]*inventory.Device{}, rollouts: map[string]*rollout.Rollout{},
		changed: map[string]bool{}, damaged: map[string]string{}, acks: map[string][]string{}}
}

// apply is the batch's transaction: msgs and the limited counts applied,
// the records written back.
func (b *batch) apply(msgs []*decoded, limited map[string]api.Limited) error {
	if err := b.prefetch(msgs, limited); err != nil {
		return err
	}
	for _, m := range msgs {
		d, err := b.device(m.device)
		if err != nil {
			return err
		}
		if d == nil { // its record is damaged: dropped, not acknowledged (re-sent once it is forgotten)
			continue
		}
		switch {
		case m.state != nil:
			b.applyState(d, m.state)
		case m.telemetry != nil:
			err = b.applyTelemetry(d, m.telemetry)
		case m.event != nil:
			err = b.applyEvent(d, m.event)
		}
		if err != nil {
			return err
		}
	}
	if err := b.applyLimited(limited); err != nil {
		return err
	}
	return b.write()
}

// device returns the record of device id, nil if it is damaged.
func (b *batch) device(id string) (*inventory.Device, error) {
	if d := b.devices[id]; d != nil || b.damaged[id] != "" {
		return d, nil
	}
	d, err := inventory.Get(b.tx, id)
	if fault.IsDamaged(err) {
		b.damaged[id] = "device"
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	b.devices[id] = d
	return d, nil
}

// rollout returns rollout id, nil if there is none (or it is damaged).
func (b *batch) rollout(id string) (*rollout.Rollout, error) {
	r, seen := b.rollouts[id]
	if seen {
		return r, nil
	}
	var rr rollout.Rollout
	ok, err := b.tx.Get(store.FleetRollouts, id, &rr)
	if fault.IsDamaged(err) { // as if unknown: one record stops nothing else
		b.damaged[id] = "rollout"
		ok, err = false, nil
	}
	if err != nil {
		return nil, err
	}
	if ok {
		r = &rr
	}
	b.rollouts[id] = r
	return r, nil
}

// applyState applies a device's state message to its record.
func (b *batch) applyState(d *inventory.Device, m *wire.State) {
	if d.ApplyState(m, b.now) == inventory.StateNewLife {
		b.env.log.Warn("device started a new life: its database was reset or replaced (or two gateways share its ID)",
			"device", d.ID, "instance", m.Instance, "session", m.Session)
	}
}

// applyTelemetry applies a device's telemetry report: to its record and
// health history, to the alerts, and to the rollouts it speaks of (the
// confidence gate, the shadow).
func (b *batch) applyTelemetry(d *inventory.Device, m *wire.Telemetry) error {
	if d.TelemetrySeen(m) {
		// A copy of a report already applied (another replica applied
		// it, or the broker delivered it again): once only.
		return nil
	}
	env := b.env
	env.telemetry.Add(1)
	newest := d.ApplyTelemetry(m, b.now)
	if err := inventory.RecordHealth(b.tx, d, m, b.now); err != nil {
		return err
	}
	drift, unknown := env.alerts.Evaluate(d, newest)
	if drift {
		env.driftAlerts.Add(1)
		b.alerts = append(b.alerts, d.ID)
	}
	if unknown {
		env.unknownAlerts.Add(1)
		b.uncertain = append(b.uncertain, d.ID)
	}
	if err := b.applyGate(d, m); err != nil {
		return err
	}
	return b.applyShadow(d, m.Shadow)
}

// applyGate adds telemetry about a model's confidence to the confidence
// gate of the device's latest job (rollout.ApplyTelemetry).
func (b *batch) applyGate(d *inventory.Device, m *wire.Telemetry) error {
	n := len(d.Sent)
	if n == 0 || m.Model == nil || m.Confidence == nil {
		return nil
	}
	r, err := b.rollout(d.Sent[n-1].Rollout)
	if err != nil {
		return err
	}
	if r != nil && r.ApplyTelemetry(d.ID, m, b.now) {
		b.changed[r.ID] = true
	}
	return nil
}

// applyShadow records a shadow report (nil: none) in its rollout.
func (b *batch) applyShadow(d *inventory.Device, sh *wire.ShadowReport) error {
	if sh == nil {
		return nil
	}
	r, err := b.rollout(sh.Rollout)
	if err != nil {
		return err
	}
	if r != nil && r.ApplyShadow(d.ID, sh, b.now) {
		b.changed[sh.Rollout] = true
	}
	return nil
}

// applyEvent applies a job event: acknowledged in any case, taken as the
// device's job only if it is about a command the fleet sent it, and then
// reported to its rollout.
func (b *batch) applyEvent(d *inventory.Device, ev *wire.Event) error {
	b.acks[ev.Device] = append(b.acks[ev.Device], ev.ID)
	if !d.ApplyEvent(ev, b.now) { // counted on the record; acknowledged, and nothing else
		b.env.log.Warn("job event about a command the fleet never sent it (a forged or altered command?): not taken as the device's job",
			"device", d.ID, "rollout", fault.Clip(ev.Rollout, 128), "seq", ev.Seq, "state", ev.State, "code", ev.Code, "foreign_jobs", d.ForeignJobs)
		return nil
	}
	r, err := b.rollout(ev.Rollout)
	if err != nil || r == nil {
		return err
	}
	ds, _ := api.DeviceStateOf(ev.State)
	reason := ev.Reason
	if ev.Code != "" {
		reason = ev.Code + ": " + reason
	}
	// A device that refused the command as superseded told us its
	// highest sequence (applyEvent moved the counter past it): the
	// command goes again, above it.
	resend := ev.State == wire.JobRejected && ev.Code == wire.CodeSuperseded &&
		ev.HighestSeq >= ev.Seq && d.LastSeq >= ev.HighestSeq
	rep := rollout.Report{Device: ev.Device, Seq: ev.Seq, State: ds, Reason: reason, Resend: resend}
	if r.Apply(rep, b.now) {
		b.changed[ev.Rollout] = true
		if ds.Finished() && !r.Devices[ev.Device].Resend {
			b.finished = append(b.finished, ds)
		}
	}
	return nil
}

// applyLimited adds the counts of limited messages to the devices'
// records.
func (b *batch) applyLimited(limited map[string]api.Limited) error {
	for id, c := range limited {
		if wire.CheckID(id) != nil {
			continue // no device: a topic the decoder refused
		}
		d, err := b.device(id)
		if err != nil {
			return err
		}
		if d == nil {
			continue
		}
		if d.Limited == nil {
			d.Limited = &api.Limited{}
		}
		d.Limited.Add(c)
	}
	return nil
}

// write puts back every device record read and every rollout changed.
func (b *batch) write() error {
	for id, d := range b.devices {
		if err := b.tx.Put(store.FleetDevices, id, d); err != nil {
			return err
		}
	}
	for id, r := range b.rollouts {
		if r != nil && b.changed[id] {
			if err := b.tx.Put(store.FleetRollouts, id, r); err != nil {
				return err
			}
		}
	}
	return nil
}

// prefetcher is a transaction that reads many documents in one round trip
// (store/postgres): the batch's device records and health documents.
type prefetcher interface {
	Prefetch(coll store.Collection, keys []string) error
}

// prefetch reads, where the store can (prefetcher), the batch's device
// records and the health documents its telemetry writes (those a record's
// finished minute or hour moves to, inventory.FlushKeys) in two round
// trips, not three a message. The records it decodes for that are the
// batch's (b.device): each is decoded once.
func (b *batch) prefetch(msgs []*decoded, limited map[string]api.Limited) error {
	p, ok := b.tx.(prefetcher)
	if !ok {
		return nil
	}
	var ids, reporting []string
	for _, m := range msgs {
		ids = append(ids, m.device)
		if m.telemetry != nil {
			reporting = append(reporting, m.device)
		}
	}
	for id := range limited {
		if wire.CheckID(id) == nil {
			ids = append(ids, id)
		}
	}
	if err := p.Prefetch(store.FleetDevices, ids); err != nil {
		return err
	}
	var health []string
	slices.Sort(reporting)
	for _, id := range slices.Compact(reporting) {
		d, err := b.device(id) // from the prefetched records
		if err != nil {
			return err
		}
		if d != nil { // nil: damaged, its messages are dropped
			health = append(health, inventory.FlushKeys(d, b.now)...)
		}
	}
	if len(health) == 0 {
		return nil
	}
	return p.Prefetch(store.FleetHealth, health)
}
