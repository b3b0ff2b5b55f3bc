package wire

import (
	"encoding/json"
	"fmt"
	"strings"
)

// ModelRef names an installed model.
type ModelRef struct {
	ID      string `json:"id"`      // bundle model ID
	Release uint64 `json:"release"` // bundle release counter
	Bundle  string `json:"bundle"`  // SHA-256 of the bundle, lowercase hex
	// Install is "committed" or "pending-health-check".
	Install string `json:"install,omitempty"`
}

// UnloadableModel is a device's committed model that does not run: its
// stored bundle fails verification or decoding (a damaged SD card: its
// bytes no longer match their hash; a release key no longer trusted) or no
// longer fits the device's configuration. The device runs its previous
// model instead (State.Model, health "degraded") or none ("no-model"),
// until the same bundle is delivered again or another model is installed.
type UnloadableModel struct {
	ModelRef
	// Error says why it does not load, at most MaxUnloadableError bytes.
	Error string `json:"error"`
}

// MaxUnloadableError bounds UnloadableModel.Error, in bytes.
const MaxUnloadableError = 512

// Describe says which model does not load and why, for people: "model
// vib release 2 (bundle 0123456789ab) does not load: store: corrupt value
// in bucket …".
func (u *UnloadableModel) Describe() string {
	b := u.Bundle
	if len(b) > 12 {
		b = b[:12]
	}
	return fmt.Sprintf("model %s release %d (bundle %s) does not load: %s", u.ID, u.Release, b, u.Error)
}

// SensorHealth is one sensor's condition as a device reports it.
type SensorHealth struct {
	Sensor string `json:"sensor"`
	State  string `json:"state"` // SensorOK, SensorFailed or SensorSlow
	Since  int64  `json:"since"` // Unix seconds of the last change
	// LastError is the most recent error, even if recovered since; for a
	// slow sensor, its rates ("reads 1.8 kHz of the configured 20 kHz").
	LastError string `json:"last_error,omitempty"`
	Failures  int    `json:"failures,omitempty"` // consecutive failures
}

// Sensor states. SensorSlow came after the others, as a value of the
// existing field, so fleets older than it store and show it as it is.
const (
	SensorOK     = "ok"
	SensorFailed = "failed" // reads fail (retried with backoff)
	SensorSlow   = "slow"   // reads succeed, fewer per second than configured
)

// Describe says what is wrong with a sensor, "" when it is ok:
// "accel reads 1.8 kHz of the configured 20 kHz", "env failed: device did
// not respond".
func (h SensorHealth) Describe() string {
	switch {
	case h.State == SensorOK:
		return ""
	case h.State == SensorSlow && h.LastError != "":
		return h.Sensor + " " + h.LastError
	case h.LastError != "":
		return h.Sensor + " " + h.State + ": " + h.LastError
	}
	return h.Sensor + " " + h.State
}

// HealthDetail is a device's health with what makes it so, for people:
// "degraded: accel reads 1.8 kHz of the configured 20 kHz; env failed: …",
// or health alone when no sensor explains it.
func HealthDetail(health string, sensors []SensorHealth) string {
	var why []string
	for _, h := range sensors {
		if d := h.Describe(); d != "" {
			why = append(why, d)
		}
	}
	if len(why) == 0 {
		return health
	}
	return health + ": " + strings.Join(why, "; ")
}

// OutboxInfo summarizes a device's store-and-forward queue.
type OutboxInfo struct {
	Count   uint64 `json:"count"`   // messages waiting
	Bytes   uint64 `json:"bytes"`   // their size
	Dropped uint64 `json:"dropped"` // dropped to respect the bound, ever
	// MaxBytes is the bound (telemetry.outbox_max_bytes): Bytes near it
	// means the oldest messages are about to be dropped. Zero: not reported
	// (agents before it was added).
	MaxBytes uint64 `json:"max_bytes,omitempty"`
}

// State is a device's retained state. The Last Will is a State with Online
// false and only V, Device, Instance and Session set; on every connection the
// device publishes a full State with Online true and a Session one higher
// than any before, so a receiver keeps the State with the highest Session
// (and, for equal Sessions, the one with Online false, which the broker can
// only send after the online one) — within one Instance. A new Instance is a
// new life of the device (its database was reset or replaced: sessions
// start again at 1); docs/PROTOCOL.md "Sessions" has the rule.
type State struct {
	V       int    `json:"v"`
	Device  string `json:"device"`
	Session uint64 `json:"session"`
	Online  bool   `json:"online"`
	// Instance identifies the device's database (16 lowercase hex digits,
	// random, made with the database). Empty from agents before it existed.
	Instance string `json:"instance,omitempty"`
	// Clock orders the device's states and events (Clock): zero from
	// agents before it existed, and in a Last Will.
	Clock Clock `json:"clock,omitempty"`
	// HighestSeq is the highest deployment command sequence the device has
	// recorded: a fleet whose counter for the device is lower (its database
	// was restored from a backup) moves past it. Zero: none, or not reported.
	HighestSeq   uint64            `json:"highest_seq,omitempty"`
	Time         int64             `json:"time,omitempty"` // Unix seconds when published
	AgentVersion string            `json:"agent_version,omitempty"`
	Hardware     string            `json:"hardware,omitempty"`
	Labels       map[string]string `json:"labels,omitempty"`
	Model        *ModelRef         `json:"model,omitempty"`    // active model
	Previous     *ModelRef         `json:"previous,omitempty"` // kept for rollback
	Shadow       *ModelRef         `json:"shadow,omitempty"`   // candidate scored in shadow
	// Unloadable is the committed model the device does not run because
	// it does not load; Model is then what runs instead (the previous
	// model), or nil. Absent from agents before it; a fleet older than it
	// refuses the state of a device that has one.
	Unloadable *UnloadableModel `json:"unloadable,omitempty"`
	Sensors    []SensorHealth   `json:"sensors,omitempty"`
	Outbox     *OutboxInfo      `json:"outbox,omitempty"`
	// Health is "ok", "degraded" (a sensor failed or is slow, or the
	// device runs its previous model because its committed one does not
	// load: Unloadable) or "no-model".
	Health string `json:"health,omitempty"`
	// LabelSource names the device's label source (agent
	// label_source.name): the fleet asks it for labelled windows
	// (RequestLabels). Empty: none. A fleet older than it refuses the
	// state of a device that has one.
	LabelSource string `json:"label_source,omitempty"`
}

// Offline returns the Last Will payload for a session of a device instance
// ("" for none).
func Offline(device, instance string, session uint64) ([]byte, error) {
	return json.Marshal(State{V: ProtocolVersion, Device: device, Session: session, Instance: instance})
}

// CheckInstance accepts a device instance ID: empty, or 16 lowercase hex
// digits.
func CheckInstance(id string) error {
	if id == "" {
		return nil
	}
	if len(id) != 16 {
		return fmt.Errorf("instance %q: want 16 lowercase hex digits", id)
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return fmt.Errorf("instance %q: want 16 lowercase hex digits", id)
		}
	}
	return nil
}

// Marshal encodes s, setting V.
func (s *State) Marshal() ([]byte, error) {
	s.V = ProtocolVersion
	return json.Marshal(s)
}

// DecodeState parses a device state strictly.
func DecodeState(data []byte) (*State, error) {
	var s State
	if err := decodeStrict(data, MaxStateSize, "state", &s, func() int { return s.V }); err != nil {
		return nil, err
	}
	if err := CheckID(s.Device); err != nil {
		return nil, decodeErr(ErrMalformed, "state", "device", "%v", err)
	}
	if s.Session == 0 {
		return nil, decodeErr(ErrMalformed, "state", "session", "must be at least 1")
	}
	if err := CheckInstance(s.Instance); err != nil {
		return nil, decodeErr(ErrMalformed, "state", "instance", "%v", err)
	}
	if s.LabelSource != "" {
		if err := CheckID(s.LabelSource); err != nil {
			return nil, decodeErr(ErrMalformed, "state", "label_source", "%v", err)
		}
	}
	for _, m := range []*ModelRef{s.Model, s.Previous, s.Shadow} {
		if m == nil {
			continue
		}
		if err := m.check(); err != nil {
			return nil, decodeErr(ErrMalformed, "state", "model", "%v", err)
		}
	}
	if u := s.Unloadable; u != nil {
		if err := u.check(); err != nil {
			return nil, decodeErr(ErrMalformed, "state", "unloadable", "%v", err)
		}
		if len(u.Error) > MaxUnloadableError {
			return nil, decodeErr(ErrMalformed, "state", "unloadable", "error of %d bytes, want at most %d", len(u.Error), MaxUnloadableError)
		}
	}
	return &s, nil
}

func (m *ModelRef) check() error {
	if m.ID == "" || len(m.ID) > 64 {
		return fmt.Errorf("model id %q: want 1..64 bytes", m.ID)
	}
	if err := CheckHash(m.Bundle); err != nil {
		return fmt.Errorf("bundle: %v", err)
	}
	return nil
}

// Newer reports whether state b supersedes state a (see State): within one
// instance, a higher session, or the same session going offline, or two
// online states of one session in the order of their clocks (one without
// a clock, from an agent before it, supersedes); across instances, an
// online state of another instance (the device's new life), never an
// offline one (the will of a former life).
func Newer(b, a *State) bool {
	if a == nil {
		return true
	}
	if a.Instance != "" && b.Instance != "" && a.Instance != b.Instance {
		return b.Online
	}
	if b.Session != a.Session {
		return b.Session > a.Session
	}
	if !a.Online || !b.Online {
		return a.Online && !b.Online
	}
	return b.Clock.After(a.Clock)
}
