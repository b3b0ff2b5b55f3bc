package api

import (
	"math"
	"time"

	"github.com/trit-iot/trit/wire"
)

// Device is one device's inventory record.
type Device struct {
	ID string `json:"id"`
	// Damaged, in a list, marks a record that does not decode (Damaged):
	// why; no other field is set.
	Damaged  string    `json:"damaged,omitempty"`
	Online   bool      `json:"online"`
	Session  uint64    `json:"session"`
	Instance string    `json:"instance,omitempty"` // the agent database's instance ID
	LastSeen time.Time `json:"last_seen,omitzero"`
	// From the device's latest state.
	AgentVersion string            `json:"agent_version,omitempty"`
	Hardware     string            `json:"hardware,omitempty"`
	LabelSource  string            `json:"label_source,omitempty"` // the device's label source, if it has one
	Labels       map[string]string `json:"labels,omitempty"`
	Model        *wire.ModelRef    `json:"model,omitempty"`
	Previous     *wire.ModelRef    `json:"previous,omitempty"`
	// Unloadable is the committed model the device does not run because
	// it does not load (its stored bundle is damaged, or no longer fits
	// its configuration) and why; Model is then what runs instead (its
	// previous model), or nil. Cleared when a model is installed.
	Unloadable *wire.UnloadableModel `json:"unloadable,omitempty"`
	Health     string                `json:"health,omitempty"`
	Sensors    []wire.SensorHealth   `json:"sensors,omitempty"`
	Outbox     *wire.OutboxInfo      `json:"outbox,omitempty"`
	// From telemetry.
	Predictions uint64            `json:"predictions,omitempty"` // total reported
	Latency     *wire.Latency     `json:"latency_us,omitempty"`  // latest interval
	Counts      map[string]uint64 `json:"counts,omitempty"`      // per class, latest interval
	// CountsOther are the classes of the latest interval that Counts
	// leaves out (a model of more classes than a report names,
	// wire.Telemetry.Other) and their predictions; nil when Counts has
	// every class.
	CountsOther *wire.OtherCounts `json:"counts_other,omitempty"`
	Last        *wire.Prediction  `json:"last_prediction,omitempty"`
	// ShadowModel is the candidate the device scores in shadow (from its
	// state), Shadow its latest report (from telemetry).
	ShadowModel *wire.ModelRef     `json:"shadow_model,omitempty"`
	Shadow      *wire.ShadowReport `json:"shadow,omitempty"`
	// Drift is the active model's latest drift report; Drifting is set
	// while its score is at or above the fleet's alert threshold.
	Drift    *wire.DriftReport `json:"drift,omitempty"`
	Drifting bool              `json:"drifting,omitempty"`
	// Confidence is the active model's latest confidence report (a
	// calibrated bundle, format 5): its windows reported unknown and the
	// confidence histogram; see UnknownRate.
	Confidence *wire.ConfidenceReport `json:"confidence,omitempty"`
	// Uncertain is set while the unknown rate of its latest interval is at
	// or above the fleet's alert threshold ([alerts] unknown).
	Uncertain bool `json:"uncertain,omitempty"`
	// HealthHour and HealthDay are the UTC hour and day (Unix seconds of
	// their start) of the latest health history documents written for
	// the device (fleet/inventory/health.go prunes from them).
	HealthHour int64 `json:"health_hour,omitempty"`
	HealthDay  int64 `json:"health_day,omitempty"`
	// StateClock is the device clock (wire.Clock) of the newest state
	// applied, ModelClock that of the state or SUCCEEDED event that last
	// set Model: an older one, handed over late (a redelivery, a stale
	// retained message), changes neither. Zero: no clock (an agent
	// before it).
	StateClock wire.Clock `json:"state_clock,omitempty"`
	ModelClock wire.Clock `json:"model_clock,omitempty"`
	// TelemetrySession and TelemetrySeq are the session and sequence of
	// the newest telemetry report applied.
	TelemetrySession uint64 `json:"telemetry_session,omitempty"`
	TelemetrySeq     uint64 `json:"telemetry_seq,omitempty"`
	// TelemetryRuns are the reports applied, as runs of consecutive
	// sequence numbers of one agent process, oldest first (at most
	// MaxTelemetryRuns), and every report at or below TelemetryFloor is
	// taken as applied: a copy of a report (several replicas each
	// receiving it, a redelivery however late) is never applied twice,
	// while reports arriving out of order still are (fleet/inventory/telemetry.go).
	TelemetryRuns  []TelemetryRun `json:"telemetry_runs,omitempty"`
	TelemetryFloor *TelemetryRun  `json:"telemetry_floor,omitempty"`
	// TelemetryFirst is the process (TelemetryRun.Key) of the first
	// report the record applied: the reports before it are not counted
	// missing (the record may follow a restored backup).
	TelemetryFirst uint64 `json:"telemetry_first,omitempty"`
	// TelemetryWindow and TelemetryFrom are what fleets before 0.6 kept
	// (a window of 64 reports below TelemetrySeq): read from such a record
	// once, as a floor, and cleared.
	TelemetryWindow uint64 `json:"telemetry_window,omitempty"`
	TelemetryFrom   uint64 `json:"telemetry_from,omitempty"`
	// TelemetryMissingBefore is the part of TelemetryMissing counted in
	// runs since folded into the floor.
	TelemetryMissingBefore uint64 `json:"telemetry_missing_before,omitempty"`
	// TelemetryMissing counts the reports of the device's telemetry
	// sequence the fleet has not received: gaps in the sequence, less the
	// late reports that filled them since. Reports go missing when a broker
	// drops them (its queue for trit-fleet full) or the device's outbox
	// was full; the device never sends them again.
	TelemetryMissing uint64 `json:"telemetry_missing,omitempty"`
	// LastSeq is the highest deployment command sequence sent to the device;
	// the next command carries LastSeq+1.
	LastSeq uint64 `json:"last_seq,omitempty"`
	// LastJob is the device's latest job event about a command the fleet
	// sent it (one of Sent).
	LastJob *JobRecord `json:"last_job,omitempty"`
	// Sent is the fleet's own record of the latest deployment commands it
	// sent the device, oldest first (at most 8): a job event counts as the
	// device's job only if it names one of them.
	Sent []JobRef `json:"sent,omitempty"`
	// ForeignJobs counts job events about commands the fleet never sent
	// (most often a forged or altered command the device refused);
	// LastForeignJob is the latest. They never become LastJob.
	ForeignJobs    uint64     `json:"foreign_jobs,omitempty"`
	LastForeignJob *JobRecord `json:"last_foreign_job,omitempty"`
	// Limited counts the device's messages the fleet's per-device limits
	// dropped or held back; absent while none was.
	Limited *Limited `json:"limited,omitempty"`
}

// Limited counts what the fleet's per-device limits did to one device's
// messages (docs/FLEET.md, "Per-device limits"), since its record was
// made. Each count saturates rather than wraps.
type Limited struct {
	// Rate and Bytes count QoS 0 messages the embedded broker dropped: over
	// the device's message rate, or its byte rate.
	Rate  uint64 `json:"rate,omitempty"`
	Bytes uint64 `json:"bytes,omitempty"`
	// Queue counts messages the fleet's intake dropped: its queue was full
	// and the device held the largest share of it.
	Queue uint64 `json:"queue,omitempty"`
	// Throttled counts QoS 1 messages the embedded broker held back until
	// the device's budget allowed them: delayed, not lost.
	Throttled uint64 `json:"throttled,omitempty"`
	// Last is when the latest of them was counted.
	Last time.Time `json:"last,omitzero"`
}

// Dropped is the messages lost: Rate + Bytes + Queue (saturating).
func (l *Limited) Dropped() uint64 {
	if l == nil {
		return 0
	}
	return satAdd(satAdd(l.Rate, l.Bytes), l.Queue)
}

// Add adds o's counts to l's (saturating) and keeps the later Last.
func (l *Limited) Add(o Limited) {
	l.Rate, l.Bytes = satAdd(l.Rate, o.Rate), satAdd(l.Bytes, o.Bytes)
	l.Queue, l.Throttled = satAdd(l.Queue, o.Queue), satAdd(l.Throttled, o.Throttled)
	if o.Last.After(l.Last) {
		l.Last = o.Last
	}
}

func satAdd(a, b uint64) uint64 {
	if a+b < a {
		return math.MaxUint64
	}
	return a + b
}

// TelemetryRun is a run of telemetry reports of one agent process,
// sequence numbers From to To. Boot is the process's boot number
// (wire.Telemetry.Boot); reports of agents before it carry none and are
// kept per Session instead.
type TelemetryRun struct {
	Boot    uint64 `json:"boot,omitempty"`
	Session uint64 `json:"session,omitempty"`
	From    uint64 `json:"from"`
	To      uint64 `json:"to"`
}

// Key is the run's process: its boot number, or for a report without one
// its session.
func (r TelemetryRun) Key() uint64 {
	if r.Boot != 0 {
		return r.Boot
	}
	return r.Session
}

// MaxTelemetryRuns bounds Device.TelemetryRuns. A device's reports are
// one run while they arrive in order; every gap open at once is one more
// (replicas sharing a device's burst each hold some of it until they
// commit: up to the reports in flight), so the bound is generous — a
// record of 1,024 runs is about 40 KB.
const MaxTelemetryRuns = 1024

// JobRef names a deployment command: (rollout, seq) identifies a job.
type JobRef struct {
	Rollout string `json:"rollout"`
	Seq     uint64 `json:"seq"`
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

// Forgotten is the response of DELETE /v1/devices/{id}.
type Forgotten struct {
	Forgotten string `json:"forgotten"`
}

// UnknownRate is the share (0 … 1) of the latest telemetry interval's
// windows the device's calibrated model reported unknown, and whether
// there is one (a calibrated model and at least one window).
func (d *Device) UnknownRate() (float64, bool) {
	c := d.Confidence
	if c == nil {
		return 0, false
	}
	var n uint64
	for _, k := range c.Histogram {
		n += k
	}
	if n == 0 {
		return 0, false
	}
	return float64(c.Unknown) / float64(n), true
}
