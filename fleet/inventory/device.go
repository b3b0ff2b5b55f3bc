// Package inventory is the fleet's device record: what the fleet knows of
// each device (Device), how each message a device sends applies to it
// (state, job event, telemetry), and the two alerts the record raises
// (Alerts). It knows the store only by a transaction to read a record in
// (Get), and nothing of the service, the brokers or HTTP: the fleet's
// intake applies messages through it, and internal/layering holds it to
// api, wire and store.
package inventory

import (
	"math"
	"time"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/store"
	"github.com/trit-iot/trit/wire"
)

// The inventory is what the fleet knows of each device, built from the
// devices' retained states, job events and telemetry. A device appears the
// first time it says anything; records are never deleted automatically
// (ForgetDevice deletes one, ResetDevice makes it accept the next state).
//
// Which state wins (docs/PROTOCOL.md "Sessions, Last Will and state"):
// within one instance of the device (one agent database) the highest
// session, for the same session offline over online, and of two online
// states of one session the later by the device's clock; an online state
// of another instance is the device's new life (its database was reset or
// replaced, its sessions start again at 1) and replaces the record's
// session; an offline state of another instance is the late will of a
// former life and is ignored.

// Device is one device's inventory record (api.Device) with the logic that
// applies what the device reports.
type Device struct {
	api.Device
	// MinutePoint and HourPoint are the health points (health.go) of the
	// minute and the hour of the device's latest telemetry report. They
	// live in the record, which every report rewrites anyway, and move to
	// the device's health history documents when a report arrives in a
	// later minute (hour): a report rewrites one document of its own
	// rather than two of up to 60 and 24 points.
	MinutePoint *api.HealthPoint `json:"health_minute_point,omitempty"`
	HourPoint   *api.HealthPoint `json:"health_hour_point,omitempty"`
}

// Get reads a device record in tx; a device never seen gets a new, empty
// record. A record that does not decode is the decoder's error.
func Get(tx store.Tx, id string) (*Device, error) {
	d := &Device{}
	ok, err := tx.Get(store.FleetDevices, id, d)
	if err != nil {
		return nil, err
	}
	if !ok {
		d = &Device{Device: api.Device{ID: id}}
	}
	return d, nil
}

// maxSeqJump bounds how far a device's reported highest sequence may move
// the fleet's counter for it at once: more than any real gap (commands sent
// since a backup), far from the end of the counter, so a forged state
// cannot exhaust it.
const maxSeqJump = 1 << 32

// StateResult says what ApplyState did with a state.
type StateResult int

const (
	StateIgnored StateResult = iota // older than the record
	StateApplied                    // newer, same instance
	StateNewLife                    // an online state of another instance
)

// ApplyState merges a decoded retained state and reports what it did (see
// the rule at the top of this file).
func (d *Device) ApplyState(s *wire.State, now time.Time) StateResult {
	// A device republishes its state within a session (after an install,
	// when a sensor fails): two online states of one session are applied
	// in the order of the device's clock (wire.Clock), whatever order they
	// arrive in — one published while the fleet's database was down and
	// handed over again later, a stale retained copy read again after a
	// reconnection. An online state after the session's Last Will can
	// only be a stale copy; an older session's state never applies.
	res := StateApplied
	switch {
	case d.Session == 0:
	case s.Instance != "" && d.Instance != "" && s.Instance != d.Instance:
		if !s.Online {
			return StateIgnored
		}
		res = StateNewLife
		d.StateClock, d.ModelClock = 0, 0 // a new database: its clock starts again
	case s.Session < d.Session:
		return StateIgnored
	case s.Session == d.Session && !d.Online && s.Online:
		return StateIgnored
	case s.Session == d.Session && d.Online && s.Online && !s.Clock.After(d.StateClock):
		return StateIgnored
	}
	d.Session, d.Online, d.LastSeen = s.Session, s.Online, now
	if s.Instance != "" {
		d.Instance = s.Instance
	}
	d.raiseSeq(s.HighestSeq)
	if !s.Online {
		return res // a Last Will carries no details; keep the last known ones
	}
	d.StateClock = s.Clock
	d.AgentVersion, d.Hardware, d.Labels, d.LabelSource = s.AgentVersion, s.Hardware, s.Labels, s.LabelSource
	d.Health, d.Sensors, d.Outbox = s.Health, s.Sensors, s.Outbox
	d.ShadowModel = s.Shadow
	// A SUCCEEDED event stamped after this state already said what runs.
	if s.Clock.After(d.ModelClock) {
		d.Model, d.Previous, d.Unloadable, d.ModelClock = s.Model, s.Previous, s.Unloadable, s.Clock
	}
	return res
}

// raiseSeq moves the device's command counter up to the highest sequence
// the device reports having recorded: after the fleet's database was
// restored from a backup, its counter may be below the device's, and a
// device refuses a command whose sequence is below one it has seen. It
// reports whether the counter moved. A jump above maxSeqJump is ignored.
func (d *Device) raiseSeq(highest uint64) bool {
	if highest <= d.LastSeq || highest-d.LastSeq > maxSeqJump {
		return false
	}
	d.LastSeq = highest
	return true
}

// maxSent bounds the record of commands sent to a device (Device.Sent):
// enough for the late events of every job a device can still be
// reporting on, small enough to keep every record short.
const maxSent = 8

// NoteSent records that the fleet sent the device the command (rollout,
// seq): the fleet's own job record, against which events are checked.
func (d *Device) NoteSent(rollout string, seq uint64) {
	d.Sent = append(d.Sent, api.JobRef{Rollout: rollout, Seq: seq})
	if n := len(d.Sent); n > maxSent {
		d.Sent = append(d.Sent[:0], d.Sent[n-maxSent:]...)
	}
}

// sentJob reports whether the fleet sent the device the command (rollout,
// seq). A record kept by a trit-fleet older than Sent has none: for it
// the command counter bounds what the fleet can have sent.
func (d *Device) sentJob(rollout string, seq uint64) bool {
	if len(d.Sent) == 0 {
		return seq > 0 && seq <= d.LastSeq
	}
	for _, j := range d.Sent {
		if j.Rollout == rollout && j.Seq == seq {
			return true
		}
	}
	return false
}

// ApplyEvent records a job event as the device's latest job, unless it is
// older than the one recorded: an event of an earlier command (lower
// sequence), or an earlier step of the same job — a device re-sends an
// event until it is acknowledged, so a re-sent INSTALLING can arrive after
// the job's FAILED. A SUCCEEDED event also says which model now runs.
//
// Only a job the fleet sent counts (sentJob): an event's rollout and
// sequence are an echo of the command the device received, which may be
// one the fleet never signed — a command altered on the broker, which the
// device refuses (REJECTED) with the altered sequence, however high. Such
// an event is counted (ForeignJobs, LastForeignJob) and changes nothing
// else — not the command counter either, whatever highest_seq it carries
// (a forged 2^32 made reconciliation skip the device's unfinished job);
// ApplyEvent reports false for it.
func (d *Device) ApplyEvent(ev *wire.Event, now time.Time) bool {
	d.LastSeen = now
	rec := &api.JobRecord{Rollout: ev.Rollout, Seq: ev.Seq, State: ev.State, Code: ev.Code, Reason: ev.Reason, Time: time.UnixMilli(ev.Time).UTC()}
	if !d.sentJob(ev.Rollout, ev.Seq) { // its highest_seq too is someone else's word: the counter stays
		// A device re-sends an event until it is acknowledged: count it once.
		if f := d.LastForeignJob; f == nil || f.Rollout != ev.Rollout || f.Seq != ev.Seq || f.State != ev.State {
			d.ForeignJobs = min(d.ForeignJobs, math.MaxUint64-1) + 1
		}
		d.LastForeignJob = rec
		return false
	}
	d.raiseSeq(ev.HighestSeq)
	if j := d.LastJob; j != nil && (ev.Seq < j.Seq || ev.Seq == j.Seq && ev.Rollout == j.Rollout && jobRank(ev.State) <= jobRank(j.State)) {
		return true
	}
	d.LastJob = rec
	// What now runs, unless a state stamped after the event said otherwise
	// (a rollback, a later install): a late event does not undo it.
	if ev.State == wire.JobSucceeded && ev.Model != nil && ev.Clock.After(d.ModelClock) {
		// The installed model runs: a committed model that did not
		// load (this one delivered again, or one it replaced) is gone.
		d.Model, d.Unloadable, d.ModelClock = ev.Model, nil, ev.Clock
	}
	return true
}

// jobRank orders a job's states: the terminal ones last.
func jobRank(s wire.JobState) int {
	switch s {
	case wire.JobQueued:
		return 1
	case wire.JobDownloading:
		return 2
	case wire.JobInstalling:
		return 3
	}
	return 4
}

// ApplyTelemetry merges a telemetry report (TelemetrySeen said it is not
// a copy) and reports whether it was the newest applied so far. The
// device-supplied count saturates instead of wrapping. The latest
// interval's figures (latency, last prediction, counts, shadow, drift,
// confidence) come from the newest report only: a late one adds its
// predictions and nothing else. The alerts those figures raise are
// Alerts.Evaluate's to decide.
func (d *Device) ApplyTelemetry(m *wire.Telemetry, now time.Time) (newest bool) {
	d.LastSeen = now
	newest = d.markTelemetry(m)
	d.Predictions = satAdd(d.Predictions, m.Predictions)
	if !newest {
		return false
	}
	if m.Latency != nil {
		d.Latency = m.Latency
	}
	if m.Last != nil {
		d.Last = m.Last
	}
	d.Counts, d.CountsOther = m.Counts, m.Other
	d.Shadow = m.Shadow
	d.Drift = m.Drift           // nil: the running model has no fingerprint, or no window yet
	d.Confidence = m.Confidence // nil: the running model has no calibration, or no window
	return true
}

// Matches reports whether the device carries every label of selector.
func (d *Device) Matches(selector map[string]string) bool {
	for k, v := range selector {
		if d.Labels[k] != v {
			return false
		}
	}
	return true
}
