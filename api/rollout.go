package api

import (
	"time"

	"github.com/trit-iot/trit/wire"
)

// RolloutState is the state of a whole rollout.
type RolloutState string

// Rollout states.
const (
	RolloutRunning RolloutState = "running"
	RolloutPaused  RolloutState = "paused"
	// RolloutAborted: stopped by the abort criterion or an operator.
	RolloutAborted RolloutState = "aborted"
	// RolloutCompleted: every device finished and at least one succeeded;
	// Reason counts those that did not, if any (a partial outcome).
	RolloutCompleted RolloutState = "completed"
	// RolloutFailed: every device finished and none succeeded.
	RolloutFailed RolloutState = "failed"
)

// Done reports whether the rollout can make no more progress.
func (s RolloutState) Done() bool {
	return s == RolloutAborted || s == RolloutCompleted || s == RolloutFailed
}

// DeviceState is where one device is in a rollout.
type DeviceState string

// Device states. Pending devices have not been notified yet; Notified ones
// were sent the deployment command and have not reported yet; Queued,
// Downloading, Installing, Succeeded, Failed and Rejected are the device's
// latest job event (wire.JobState, by DeviceStateOf); the rest are the
// fleet's own. The finished ones are final for the current attempt.
const (
	DevicePending     DeviceState = "pending"
	DeviceNotified    DeviceState = "notified"
	DeviceQueued      DeviceState = "queued"
	DeviceDownloading DeviceState = "downloading"
	DeviceInstalling  DeviceState = "installing"
	DeviceSucceeded   DeviceState = "succeeded"
	DeviceFailed      DeviceState = "failed"
	DeviceRejected    DeviceState = "rejected"
	DeviceTimedOut    DeviceState = "timed-out"
	// DeviceShadowing: the device scores the candidate in shadow.
	DeviceShadowing DeviceState = "shadowing"
	// DeviceShadowPassed: its shadow report passed the gates; it waits for
	// the rest of its phase before the promotion is sent.
	DeviceShadowPassed DeviceState = "shadow-passed"
	// DeviceGateFailed: its shadow report, or its reports after the
	// install, failed a gate (the rollout aborted).
	DeviceGateFailed DeviceState = "gate-failed"
	// DeviceVerifying: it installed the model and reports its confidence:
	// the confidence gate judges it once it has reported enough windows
	// (ConfidenceGate).
	DeviceVerifying DeviceState = "verifying"
)

// DeviceStateOf returns the device state a job event in state j puts a
// device in: the protocol's job state, named in the API's lower case. ok
// is false for a state the protocol does not define.
func DeviceStateOf(j wire.JobState) (s DeviceState, ok bool) {
	switch j {
	case wire.JobQueued:
		return DeviceQueued, true
	case wire.JobDownloading:
		return DeviceDownloading, true
	case wire.JobInstalling:
		return DeviceInstalling, true
	case wire.JobSucceeded:
		return DeviceSucceeded, true
	case wire.JobFailed:
		return DeviceFailed, true
	case wire.JobRejected:
		return DeviceRejected, true
	}
	return "", false
}

// InProgress reports whether a device was notified and has not finished.
func (s DeviceState) InProgress() bool {
	switch s {
	case DeviceNotified, DeviceQueued, DeviceDownloading, DeviceInstalling, DeviceShadowing, DeviceVerifying:
		return true
	}
	return false
}

// Finished reports whether the device's current attempt has ended.
func (s DeviceState) Finished() bool {
	switch s {
	case DeviceSucceeded, DeviceFailed, DeviceRejected, DeviceTimedOut, DeviceGateFailed:
		return true
	}
	return false
}

// Failed reports whether the device's current attempt ended without
// success.
func (s DeviceState) Failed() bool {
	return s == DeviceFailed || s == DeviceRejected || s == DeviceTimedOut || s == DeviceGateFailed
}

// Failure kinds, for abort criteria and retries.
const (
	FailureFailed   = "failed"
	FailureRejected = "rejected"
	FailureTimedOut = "timed-out"
	FailureAny      = "any"
)

// Phase is one step of a phased rollout: it brings the number of devices
// notified up to Percent of all devices, or Count devices (exactly one of the
// two is set), not before StartAt (zero: as soon as the phase before it has
// finished).
type Phase struct {
	Percent float64   `json:"percent,omitempty"`
	Count   int       `json:"count,omitempty"`
	StartAt time.Time `json:"start_at,omitzero"`
}

// Rate paces a rollout exponentially: BasePerMinute devices may be notified
// per minute at first; after every IncreaseAfter successes the allowance is
// multiplied by Factor.
type Rate struct {
	BasePerMinute float64 `json:"base_per_minute"`
	Factor        float64 `json:"factor"`
	IncreaseAfter int     `json:"increase_after"`
}

// Pace is how fast a rollout proceeds: Phases or Rate, or neither (every
// device at once).
type Pace struct {
	Phases []Phase `json:"phases,omitempty"`
	Rate   *Rate   `json:"rate,omitempty"`
}

// AbortPolicy stops a rollout when, once at least MinExecuted devices have
// finished, more than ThresholdPercent of the finished devices failed in the
// way On names (one of the Failure kinds).
type AbortPolicy struct {
	On               string  `json:"on"`
	ThresholdPercent float64 `json:"threshold_percent"`
	MinExecuted      int     `json:"min_executed"`
}

// DeviceProgress is one device's place in a rollout.
type DeviceProgress struct {
	State      DeviceState `json:"state"`
	Seq        uint64      `json:"seq,omitempty"` // sequence of the latest command sent
	Attempts   int         `json:"attempts,omitempty"`
	Reason     string      `json:"reason,omitempty"`
	NotifiedAt time.Time   `json:"notified_at,omitzero"`
	UpdatedAt  time.Time   `json:"updated_at,omitzero"`
	// Resend: the device refused the command as superseded; the next Step
	// sends it again with a new sequence (above the device's).
	Resend  bool `json:"resend,omitempty"`
	Resends int  `json:"resends,omitempty"` // how often that happened
	// Stage, in a shadow rollout: StageShadow or StagePromote for the
	// device's current command; "" for a device that installs directly.
	Stage string `json:"stage,omitempty"`
	// Shadow is the device's latest shadow report (StageShadow).
	Shadow *wire.ShadowReport `json:"shadow,omitempty"`
	// Verify is what the confidence gate judges it on after its install
	// (DeviceVerifying).
	Verify *VerifyReport `json:"verify,omitempty"`
}

// Rollout is the persistent state of one rollout, as the API shows it.
type Rollout struct {
	ID string `json:"id"`
	// Damaged, in a list, marks a record that does not decode (Damaged):
	// why; no other field is set.
	Damaged  string            `json:"damaged,omitempty"`
	Bundle   string            `json:"bundle"` // SHA-256 hex of the signed bundle
	ModelID  string            `json:"model_id"`
	Release  uint64            `json:"release"`
	Rollback bool              `json:"rollback,omitempty"`
	Selector map[string]string `json:"selector,omitempty"` // how Devices was chosen, for the record
	Pace     Pace              `json:"pace"`
	Abort    AbortPolicy       `json:"abort"`
	// Timeout bounds how long a notified device may take to finish.
	Timeout time.Duration `json:"timeout"`
	// Retries gives, per failure kind, how many times a device is sent the
	// command again after failing that way.
	Retries map[string]int `json:"retries,omitempty"`
	// Shadow, if set, shadows the candidate on the first phases' devices
	// and promotes it only if every one passes the gates (ShadowPolicy).
	Shadow *ShadowPolicy `json:"shadow,omitempty"`
	// TrainCounts are the bundle's training rows per class (BundleInfo),
	// for the shadow gate on divergence from training.
	TrainCounts map[string]uint64 `json:"train_counts,omitempty"`
	// Gate is the confidence gate (ConfidenceGate); nil when the rollout
	// has none, GateNote saying why (turned off, a rollback, a bundle
	// without calibration).
	Gate     *ConfidenceGate `json:"gate,omitempty"`
	GateNote string          `json:"gate_note,omitempty"`
	// AutoRollback is the rollout that rolled back the devices that had
	// installed the bundle when its confidence gate failed, or why there
	// is none.
	AutoRollback string `json:"auto_rollback,omitempty"`
	// GateFailed marks a rollout its confidence gate aborted after some
	// devices installed the model: the fleet rolls them back.
	GateFailed bool `json:"gate_failed,omitempty"`

	State     RolloutState               `json:"state"`
	Reason    string                     `json:"reason,omitempty"` // why it was aborted or paused
	Order     []string                   `json:"order"`            // notification order
	Devices   map[string]*DeviceProgress `json:"devices"`
	Started   time.Time                  `json:"started"`
	Updated   time.Time                  `json:"updated"`
	Finished  time.Time                  `json:"finished,omitzero"`
	Successes int                        `json:"successes"`
	// RateCredit is how many more devices a Rate-paced rollout may notify,
	// accrued up to RateAt.
	RateCredit float64   `json:"rate_credit,omitempty"`
	RateAt     time.Time `json:"rate_at,omitzero"`
	// CreatedBy is the operator who created it ("" before operators, or
	// for a rollback made by the fleet).
	CreatedBy string `json:"created_by,omitempty"`
	// Approval, when set, holds the rollout at Approval.After devices until
	// a person other than CreatedBy approves it (the fleet's two-person
	// rule, docs/FLEET.md "Approval").
	Approval *Approval `json:"approval,omitempty"`
}

// Approval is a rollout's two-person rule: at most After devices are
// notified until ApprovedBy is set (After is 0 but for the shadowing
// devices of a shadow rollout).
type Approval struct {
	After int `json:"after"`
	// Emergency marks an emergency rollback: approved by its creator's
	// role (responder) alone, at once, without a second person.
	Emergency bool `json:"emergency,omitempty"`
	// Promotion also holds the shadow's promotion until the approval: the
	// devices shadow the candidate, and none activates it before an
	// operator approves (a retraining policy's rollout, docs/FLEET.md
	// "Closing the loop").
	Promotion  bool      `json:"promotion,omitempty"`
	ApprovedBy string    `json:"approved_by,omitempty"`
	ApprovedAt time.Time `json:"approved_at,omitzero"`
}

// Pending reports whether the rollout still waits for its approval.
func (a *Approval) Pending() bool { return a != nil && a.ApprovedBy == "" }

// Counts returns how many devices are in each state.
func (r *Rollout) Counts() map[DeviceState]int {
	out := map[DeviceState]int{}
	for _, d := range r.Devices {
		out[d.State]++
	}
	return out
}

// RolloutRequest is the body of POST /v1/rollouts.
type RolloutRequest struct {
	ID       string            `json:"id"`
	Bundle   string            `json:"bundle"` // the bundle's hash, or a unique prefix of it
	Devices  []string          `json:"devices,omitempty"`
	Selector map[string]string `json:"selector,omitempty"`
	Pace     Pace              `json:"pace"`
	Abort    AbortPolicy       `json:"abort"`
	Timeout  time.Duration     `json:"timeout,omitempty"`
	Retries  map[string]int    `json:"retries,omitempty"`
	// Rollback sends the bundle flagged as a rollback, which a device
	// installs even below its highest release. Allowed only for a bundle
	// every target device ran before.
	Rollback bool `json:"rollback,omitempty"`
	// Shadow, if set, shadows the bundle on the first phases' devices and
	// promotes it only if they all pass its gates.
	Shadow *ShadowPolicy `json:"shadow,omitempty"`
	// AllowUnknown accepts device IDs not in the inventory (devices that
	// have not reported yet); without it they are refused, as typos.
	AllowUnknown bool `json:"allow_unknown,omitempty"`
	// Emergency, with Rollback and the two-person rule on, sends the
	// rollback without waiting for a second person's approval; only the
	// responder role may (docs/FLEET.md "Approval").
	Emergency bool `json:"emergency,omitempty"`
	// Gate is the confidence gate; nil: DefaultConfidenceGate. NoGate
	// turns it off.
	Gate   *ConfidenceGate `json:"gate,omitempty"`
	NoGate bool            `json:"no_gate,omitempty"`
}

// ControlRequest is the (optional) body of pause, resume and abort.
type ControlRequest struct {
	Reason string `json:"reason"`
}

// RollbackRequest is the body of POST /v1/rollouts/{id}/rollback.
type RollbackRequest struct {
	ID string `json:"id"` // the new rollout's ID
	// Emergency: as RolloutRequest.Emergency.
	Emergency bool `json:"emergency,omitempty"`
}
