package fleet

import (
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/trit-iot/trit/store"
	"github.com/trit-iot/trit/wire"
)

// The inventory is what the fleet knows of each device, built from the
// devices' retained states, job events and telemetry. A device appears the
// first time it says anything; records are never deleted automatically.

// Device is one device's inventory record.
type Device struct {
	ID       string    `json:"id"`
	Online   bool      `json:"online"`
	Session  uint64    `json:"session"`
	LastSeen time.Time `json:"last_seen,omitzero"`
	// From the device's latest state.
	AgentVersion string              `json:"agent_version,omitempty"`
	Hardware     string              `json:"hardware,omitempty"`
	Labels       map[string]string   `json:"labels,omitempty"`
	Model        *wire.ModelRef      `json:"model,omitempty"`
	Previous     *wire.ModelRef      `json:"previous,omitempty"`
	Health       string              `json:"health,omitempty"`
	Sensors      []wire.SensorHealth `json:"sensors,omitempty"`
	Outbox       *wire.OutboxInfo    `json:"outbox,omitempty"`
	// From telemetry.
	Predictions uint64            `json:"predictions,omitempty"` // total reported
	Latency     *wire.Latency     `json:"latency_us,omitempty"`  // latest interval
	Counts      map[string]uint64 `json:"counts,omitempty"`      // per class, latest interval
	Last        *wire.Prediction  `json:"last_prediction,omitempty"`
	// LastSeq is the highest deployment command sequence sent to the device;
	// the next command carries LastSeq+1.
	LastSeq uint64 `json:"last_seq,omitempty"`
	// LastJob is the device's latest job event.
	LastJob *JobRecord `json:"last_job,omitempty"`
}

// JobRecord is the latest job event of a device.
type JobRecord struct {
	Rollout string        `json:"rollout"`
	Seq     uint64        `json:"seq"`
	State   wire.JobState `json:"state"`
	Code    string        `json:"code,omitempty"`
	Reason  string        `json:"reason,omitempty"`
	Time    time.Time     `json:"time"`
}

// getDevice reads a device record in tx; a device never seen gets a new,
// empty record.
func getDevice(tx *store.Tx, id string) (*Device, error) {
	d := &Device{}
	ok, err := tx.Get(store.FleetDevices, id, d)
	if err != nil {
		return nil, err
	}
	if !ok {
		d = &Device{ID: id}
	}
	return d, nil
}

// applyState merges a decoded retained state. It returns false if s is
// older than what the record already reflects (a stale Last Will, say).
func (d *Device) applyState(s *wire.State, now time.Time) bool {
	// A device republishes its state within a session (after an install,
	// when a sensor fails), so a state of the current session replaces the
	// record — except an online one after the session's Last Will, which
	// can only be a stale copy. An older session's state never does.
	switch {
	case d.Session == 0:
	case s.Session < d.Session:
		return false
	case s.Session == d.Session && !d.Online && s.Online:
		return false
	}
	d.Session, d.Online, d.LastSeen = s.Session, s.Online, now
	if !s.Online {
		return true // a Last Will carries no details; keep the last known ones
	}
	d.AgentVersion, d.Hardware, d.Labels = s.AgentVersion, s.Hardware, s.Labels
	d.Model, d.Previous, d.Health, d.Sensors, d.Outbox = s.Model, s.Previous, s.Health, s.Sensors, s.Outbox
	return true
}

// applyEvent records a job event as the device's latest job; a SUCCEEDED
// event also says which model now runs.
func (d *Device) applyEvent(ev *wire.Event, now time.Time) {
	d.LastSeen = now
	d.LastJob = &JobRecord{Rollout: ev.Rollout, Seq: ev.Seq, State: ev.State, Code: ev.Code, Reason: ev.Reason, Time: time.UnixMilli(ev.Time).UTC()}
	if ev.State == wire.JobSucceeded && ev.Model != nil {
		d.Model = ev.Model
	}
}

// applyTelemetry merges a telemetry report.
func (d *Device) applyTelemetry(m *wire.Telemetry, now time.Time) {
	d.LastSeen = now
	d.Predictions += m.Predictions
	if m.Latency != nil {
		d.Latency = m.Latency
	}
	if m.Last != nil {
		d.Last = m.Last
	}
	d.Counts = m.Counts
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

// Devices returns every device record, sorted by ID.
func Devices(db *store.DB) ([]Device, error) {
	var out []Device
	err := db.ForEach(store.FleetDevices, func(key string, raw []byte) error {
		var d Device
		if err := json.Unmarshal(raw, &d); err != nil {
			return fmt.Errorf("fleet: device record %s: %w", key, err)
		}
		out = append(out, d)
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, err
}

// DeviceByID returns one device record.
func DeviceByID(db *store.DB, id string) (*Device, error) {
	var d Device
	ok, err := db.Get(store.FleetDevices, id, &d)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: device %s", ErrNotFound, id)
	}
	return &d, nil
}

// Select returns the IDs of the devices matching selector, sorted.
func Select(db *store.DB, selector map[string]string) ([]string, error) {
	all, err := Devices(db)
	if err != nil {
		return nil, err
	}
	var ids []string
	for i := range all {
		if all[i].Matches(selector) {
			ids = append(ids, all[i].ID)
		}
	}
	return ids, nil
}
