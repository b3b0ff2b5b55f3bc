package wire

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// JobState is the state of a deployment job on a device.
type JobState string

// Job states. A job goes QUEUED → DOWNLOADING → INSTALLING → SUCCEEDED,
// and may end in FAILED (install or health check failed; the previous model
// runs again) or REJECTED (the command or bundle was refused; nothing
// changed) from any earlier state.
const (
	JobQueued      JobState = "QUEUED"
	JobDownloading JobState = "DOWNLOADING"
	JobInstalling  JobState = "INSTALLING"
	JobSucceeded   JobState = "SUCCEEDED"
	JobFailed      JobState = "FAILED"
	JobRejected    JobState = "REJECTED"
)

// Valid reports whether s is a defined state.
func (s JobState) Valid() bool {
	switch s {
	case JobQueued, JobDownloading, JobInstalling, JobSucceeded, JobFailed, JobRejected:
		return true
	}
	return false
}

// Terminal reports whether s ends a job.
func (s JobState) Terminal() bool { return s == JobSucceeded || s == JobFailed || s == JobRejected }

// Reason codes of FAILED and REJECTED events, for machines (abort criteria,
// dashboards); Event.Reason has the human text.
const (
	CodeCommandSignature = "command-signature" // unknown key or bad signature on the command
	CodeCommandExpired   = "command-expired"   // the command's expires_at passed
	CodeCommandInvalid   = "command-invalid"   // malformed, wrong target, stale sequence
	CodeOversize         = "bundle-oversize"   // bundle above the device's size cap
	CodeHashMismatch     = "bundle-hash"       // bytes do not hash to the command's bundle
	CodeBundleSignature  = "bundle-signature"  // untrusted key, bad signature, unsigned
	CodeBundleInvalid    = "bundle-invalid"    // fails to decode, expired
	CodeIncompatible     = "incompatible"      // features, hardware or agent version
	CodeReleaseTooOld    = "release-too-old"   // anti-rollback
	CodeDownloadTimeout  = "download-timeout"  // the bundle did not arrive in time
	CodeStore            = "store"             // the database refused the install
	CodeSelfTest         = "self-test"         // health check: bundle self-test
	CodeHealthCheck      = "health-check"      // health check: inference cycles failed
	CodeSuperseded       = "superseded"        // a newer command arrived first
	CodeNoActive         = "no-active-model"   // a shadow command on a device without a model
)

// Event reports a job's transition. ID is "{rollout}/{seq}/{state}" and is
// what Ack lists; a device re-sends an event until it is acknowledged, so
// receivers must treat events idempotently by ID.
type Event struct {
	V       int       `json:"v"`
	ID      string    `json:"id"`
	Device  string    `json:"device"`
	Rollout string    `json:"rollout"`
	Seq     uint64    `json:"seq"`
	State   JobState  `json:"state"`
	Code    string    `json:"code,omitempty"`   // FAILED / REJECTED: a Code* constant
	Reason  string    `json:"reason,omitempty"` // human-readable
	Bundle  string    `json:"bundle,omitempty"` // the command's bundle hash
	Model   *ModelRef `json:"model,omitempty"`  // SUCCEEDED: what now runs
	// HighestSeq, on a REJECTED superseded event, is the highest sequence
	// the device has recorded: the fleet's next command must be above it.
	HighestSeq uint64 `json:"highest_seq,omitempty"`
	Time       int64  `json:"time"` // Unix milliseconds
	// Clock orders the event among the device's states and events
	// (Clock), stamped when the event happened, not when it is sent
	// again; zero from agents before it existed.
	Clock Clock `json:"clock,omitempty"`
}

// EventID returns the ID of the event of a job reaching state.
func EventID(rollout string, seq uint64, state JobState) string {
	return rollout + "/" + strconv.FormatUint(seq, 10) + "/" + string(state)
}

// Marshal encodes e, setting V and ID.
func (e *Event) Marshal() ([]byte, error) {
	e.V = ProtocolVersion
	e.ID = EventID(e.Rollout, e.Seq, e.State)
	return json.Marshal(e)
}

// DecodeEvent parses a job event strictly.
func DecodeEvent(data []byte) (*Event, error) {
	var e Event
	if err := decodeStrict(data, MaxEventSize, "event", &e, func() int { return e.V }); err != nil {
		return nil, err
	}
	fail := func(field, format string, args ...any) (*Event, error) {
		return nil, decodeErr(ErrMalformed, "event", field, format, args...)
	}
	if err := CheckID(e.Device); err != nil {
		return fail("device", "%v", err)
	}
	if err := CheckRolloutID(e.Rollout); err != nil {
		return fail("rollout", "%v", err)
	}
	if !e.State.Valid() {
		return fail("state", "unknown job state %q", e.State)
	}
	if e.ID != EventID(e.Rollout, e.Seq, e.State) {
		return fail("id", "%q does not match rollout, seq and state", e.ID)
	}
	if e.Bundle != "" {
		if err := CheckHash(e.Bundle); err != nil {
			return fail("bundle", "%v", err)
		}
	}
	if e.Model != nil {
		if err := e.Model.check(); err != nil {
			return fail("model", "%v", err)
		}
	}
	return &e, nil
}

// Ack is the fleet's acknowledgement of a device's events, by ID.
type Ack struct {
	V      int      `json:"v"`
	Device string   `json:"device"`
	IDs    []string `json:"ids"`
}

// MaxAckIDs bounds the IDs of one Ack.
const MaxAckIDs = 64

// Marshal encodes a, setting V.
func (a *Ack) Marshal() ([]byte, error) {
	a.V = ProtocolVersion
	return json.Marshal(a)
}

// DecodeAck parses an ack strictly.
func DecodeAck(data []byte) (*Ack, error) {
	var a Ack
	if err := decodeStrict(data, MaxAckSize, "ack", &a, func() int { return a.V }); err != nil {
		return nil, err
	}
	if err := CheckID(a.Device); err != nil {
		return nil, decodeErr(ErrMalformed, "ack", "device", "%v", err)
	}
	if len(a.IDs) == 0 || len(a.IDs) > MaxAckIDs {
		return nil, decodeErr(ErrMalformed, "ack", "ids", "%d IDs, want 1..%d", len(a.IDs), MaxAckIDs)
	}
	for i, id := range a.IDs {
		if err := checkEventID(id); err != nil {
			return nil, decodeErr(ErrMalformed, "ack", "ids", "ID %d: %v", i, err)
		}
	}
	return &a, nil
}

func checkEventID(id string) error {
	parts := strings.Split(id, "/")
	if len(parts) != 3 {
		return fmt.Errorf("%q: want rollout/seq/state", id)
	}
	if err := CheckRolloutID(parts[0]); err != nil {
		return err
	}
	if _, err := strconv.ParseUint(parts[1], 10, 64); err != nil {
		return fmt.Errorf("%q: bad sequence", id)
	}
	if !JobState(parts[2]).Valid() {
		return fmt.Errorf("%q: unknown state", id)
	}
	return nil
}
