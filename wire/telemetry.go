package wire

import (
	"encoding/json"
	"fmt"
)

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
	// Confidence (0..1) and Unknown: a calibrated model's (bundle format
	// 5) calibrated confidence and whether the window was reported
	// unknown; absent for other models.
	Confidence float64 `json:"confidence,omitempty"`
	Unknown    bool    `json:"unknown,omitempty"`
}

// ConfidenceReport is a calibrated model's confidence over a telemetry
// interval (bundle format 5; absent for other models, so agents running
// them send what earlier agents sent). Unknown windows are counted in
// Predictions and Counts too, under the class the model gave them.
type ConfidenceReport struct {
	// Unknown windows, and of them those whose confidence was below the
	// threshold and those whose novelty was above it (a window may be
	// both).
	Unknown       uint64 `json:"unknown"`
	LowConfidence uint64 `json:"low_confidence,omitempty"`
	Novel         uint64 `json:"novel,omitempty"`
	// Histogram counts windows per tenth of confidence: [0, 0.1), …,
	// [0.9, 1]; ConfidenceBins entries.
	Histogram []uint64 `json:"histogram"`
	// Mean is the mean confidence, 0..1.
	Mean float64 `json:"mean"`
	// AnsweredMean is the mean confidence of the windows not reported
	// unknown (0..1); absent when every window was unknown, and from
	// agents before 0.5.0 (then Mean stands for it when nothing was
	// unknown). A model that answers nothing has no answered confidence:
	// Mean alone would show it confident.
	AnsweredMean *float64 `json:"answered_mean,omitempty"`
	// MinConfidence and MaxNovelty are the thresholds in force (the
	// bundle's or the agent config's; 0 = that test is off).
	MinConfidence float64 `json:"min_confidence,omitempty"`
	MaxNovelty    uint32  `json:"max_novelty,omitempty"`
}

// ConfidenceBins is the length of ConfidenceReport.Histogram.
const ConfidenceBins = 10

// check validates r against the interval's predictions.
func (r *ConfidenceReport) check(predictions uint64) error {
	if len(r.Histogram) != ConfidenceBins {
		return fmt.Errorf("histogram has %d bins, want %d", len(r.Histogram), ConfidenceBins)
	}
	var sum uint64
	for _, n := range r.Histogram {
		// sum ≤ predictions, so predictions-sum cannot wrap; sum+n could,
		// and a report of counts near 2⁶⁴ would pass.
		if n > predictions-sum {
			return fmt.Errorf("histogram counts add up to more than %d predictions", predictions)
		}
		sum += n
	}
	switch {
	case r.Unknown > predictions:
		return fmt.Errorf("%d unknown of %d predictions", r.Unknown, predictions)
	case r.LowConfidence > r.Unknown || r.Novel > r.Unknown:
		return fmt.Errorf("%d low-confidence and %d novel windows, more than the %d unknown", r.LowConfidence, r.Novel, r.Unknown)
	case !(r.Mean >= 0 && r.Mean <= 1):
		return fmt.Errorf("mean confidence %v, want 0..1", r.Mean)
	case r.AnsweredMean != nil && !(*r.AnsweredMean >= 0 && *r.AnsweredMean <= 1):
		return fmt.Errorf("answered mean confidence %v, want 0..1", *r.AnsweredMean)
	case r.AnsweredMean != nil && r.Unknown == sum && sum > 0:
		return fmt.Errorf("an answered mean confidence, but all %d windows were unknown", sum)
	case !(r.MinConfidence >= 0 && r.MinConfidence <= 1):
		return fmt.Errorf("minimum confidence %v, want 0..1", r.MinConfidence)
	}
	return nil
}

// Answered returns the windows not reported unknown and their mean
// confidence; ok is false when the report cannot say (every window
// unknown, or an agent before answered_mean with unknown windows).
func (r *ConfidenceReport) Answered() (windows uint64, mean float64, ok bool) {
	var n uint64
	for _, k := range r.Histogram {
		n += k
	}
	switch {
	case r.AnsweredMean != nil && n > r.Unknown:
		return n - r.Unknown, *r.AnsweredMean, true
	case r.AnsweredMean == nil && r.Unknown == 0 && n > 0:
		return n, r.Mean, true
	}
	return 0, 0, false
}

// Telemetry is a device's report for one interval [From, To). Seq counts
// from 1 in every agent process, Boot names the process (its boot number,
// Clock.Boot), so (Boot, Seq) identifies a report and orders a device's
// reports, and a receiver sees gaps and repeats. Session is the MQTT
// session when the report was made (never below Boot). Boot is zero from
// agents before it: their reports are identified by (Session, Seq).
type Telemetry struct {
	V       int       `json:"v"`
	Device  string    `json:"device"`
	Session uint64    `json:"session"`
	Boot    uint64    `json:"boot,omitempty"`
	Seq     uint64    `json:"seq"`
	From    int64     `json:"from"` // Unix milliseconds
	To      int64     `json:"to"`
	Model   *ModelRef `json:"model,omitempty"`
	// Predictions made in the interval, and per class label.
	Predictions uint64            `json:"predictions"`
	Counts      map[string]uint64 `json:"counts,omitempty"`
	// Other counts the classes predicted in the interval that Counts
	// leaves out: a report names at most MaxTelemetryClasses classes, and
	// fewer when their labels would take it past MaxTelemetrySize, so an
	// agent running a model of more classes (a bundle may have 4,096)
	// names the most predicted and sums the rest here. Absent when Counts
	// names every class predicted, and from agents before it.
	Other *OtherCounts `json:"counts_other,omitempty"`
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
	// Confidence: the active model's confidence and unknown windows, if
	// its bundle is calibrated (format 5).
	Confidence *ConfidenceReport `json:"confidence,omitempty"`
}

// OtherCounts are the classes a report's Counts leaves out (Telemetry.Other).
type OtherCounts struct {
	// Classes left out, each predicted at least once in the interval.
	Classes uint64 `json:"classes"`
	// Predictions of those classes.
	Predictions uint64 `json:"predictions"`
}

// MaxTelemetryClasses bounds Counts: the fleet keeps a device's latest
// counts, so a report of a model with more classes names the most
// predicted and sums the rest in Other.
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
	if t.Boot > t.Session || t.Boot > MaxClockBoot {
		return fail("boot", "%d: above the session %d, or above %d", t.Boot, t.Session, uint64(MaxClockBoot))
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
	if t.Confidence != nil {
		if err := t.Confidence.check(t.Predictions); err != nil {
			return fail("confidence", "%v", err)
		}
	}
	if l := t.Last; l != nil && !(l.Confidence >= 0 && l.Confidence <= 1) {
		return fail("last", "confidence %v, want 0..1", l.Confidence)
	}
	var sum uint64
	for c, n := range t.Counts {
		if n > t.Predictions-sum { // sum ≤ Predictions: no wrap, as sum+n could
			return fail("counts", "class %q: counts add up to more than %d predictions", c, t.Predictions)
		}
		sum += n
	}
	if o := t.Other; o != nil {
		switch {
		case o.Classes == 0:
			return fail("counts_other", "no classes: leave it out")
		case o.Predictions < o.Classes:
			return fail("counts_other", "%d predictions of %d classes, want at least one a class", o.Predictions, o.Classes)
		case o.Predictions > t.Predictions-sum:
			return fail("counts_other", "%d predictions and the counts' %d add up to more than the interval's %d", o.Predictions, sum, t.Predictions)
		}
	}
	return &t, nil
}
