package wire

import "encoding/json"

// Latency summarizes inference latencies over a telemetry interval, in
// microseconds.
type Latency struct {
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// Prediction is one inference result.
type Prediction struct {
	Class string `json:"class"`
	Time  int64  `json:"time"` // Unix milliseconds of the reading
}

// Telemetry is a device's report for one interval [From, To). (Session,
// Seq) identifies a report: Seq counts from 1 in every session, so a
// receiver sees gaps and repeats.
type Telemetry struct {
	V       int       `json:"v"`
	Device  string    `json:"device"`
	Session uint64    `json:"session"`
	Seq     uint64    `json:"seq"`
	From    int64     `json:"from"` // Unix milliseconds
	To      int64     `json:"to"`
	Model   *ModelRef `json:"model,omitempty"`
	// Predictions made in the interval, and per class label.
	Predictions uint64            `json:"predictions"`
	Counts      map[string]uint64 `json:"counts,omitempty"`
	// Errors counts failed cycles (sensor or inference).
	Errors  uint64      `json:"errors,omitempty"`
	Latency *Latency    `json:"latency_us,omitempty"`
	Last    *Prediction `json:"last,omitempty"`
	// Dropped is the outbox's drop counter when the report was made.
	Dropped uint64 `json:"outbox_dropped,omitempty"`
	// Shadow: the candidate the device runs in shadow, if any.
	Shadow *ShadowReport `json:"shadow,omitempty"`
	// Drift: the active model's drift score, if its bundle has a
	// fingerprint.
	Drift *DriftReport `json:"drift,omitempty"`
}

// MaxTelemetryClasses bounds Counts.
const MaxTelemetryClasses = 256

// Marshal encodes t, setting V.
func (t *Telemetry) Marshal() ([]byte, error) {
	t.V = ProtocolVersion
	return json.Marshal(t)
}

// DecodeTelemetry parses a telemetry report strictly.
func DecodeTelemetry(data []byte) (*Telemetry, error) {
	var t Telemetry
	if err := decodeStrict(data, MaxTelemetrySize, "telemetry", &t, func() int { return t.V }); err != nil {
		return nil, err
	}
	fail := func(field, format string, args ...any) (*Telemetry, error) {
		return nil, decodeErr(ErrMalformed, "telemetry", field, format, args...)
	}
	if err := CheckID(t.Device); err != nil {
		return fail("device", "%v", err)
	}
	if t.Session == 0 || t.Seq == 0 {
		return fail("seq", "session %d and seq %d must be at least 1", t.Session, t.Seq)
	}
	if t.To < t.From {
		return fail("to", "%d is before from %d", t.To, t.From)
	}
	if len(t.Counts) > MaxTelemetryClasses {
		return fail("counts", "%d classes, at most %d", len(t.Counts), MaxTelemetryClasses)
	}
	if t.Model != nil {
		if err := t.Model.check(); err != nil {
			return fail("model", "%v", err)
		}
	}
	if t.Shadow != nil {
		if err := t.Shadow.check(); err != nil {
			return fail("shadow", "%v", err)
		}
	}
	if t.Drift != nil {
		if err := t.Drift.check(); err != nil {
			return fail("drift", "%v", err)
		}
	}
	var sum uint64
	for c, n := range t.Counts {
		if n > t.Predictions || sum+n > t.Predictions {
			return fail("counts", "class %q: counts add up to more than %d predictions", c, t.Predictions)
		}
		sum += n
	}
	return &t, nil
}
