package api

// HealthPoint is one period (a minute or an hour, UTC) of a device's model
// health: what its telemetry reported in that period, summed.
type HealthPoint struct {
	Time        int64             `json:"t"` // Unix seconds of the period's start
	Predictions uint64            `json:"n"`
	Counts      map[string]uint64 `json:"counts,omitempty"` // per class; at most MaxHealthClasses, the rest under HealthOther
	// Windows had a calibrated confidence (bundle format 5); Unknown of
	// them were reported unknown; ConfidenceSum is their confidences'
	// sum (0 … Windows).
	Windows       uint64  `json:"windows,omitempty"`
	Unknown       uint64  `json:"unknown,omitempty"`
	ConfidenceSum float64 `json:"confidence_sum,omitempty"`
	// Answered windows (not reported unknown, from reports that say their
	// confidence: wire.ConfidenceReport.Answered) and the sum of their
	// confidences: the confidence of what the model did answer.
	Answered    uint64  `json:"answered,omitempty"`
	AnsweredSum float64 `json:"answered_sum,omitempty"`
	// Drift is the highest drift score reported in the period; Agreement
	// the latest shadow report's agreement (nil: no shadow); LatencyP50
	// the highest median inference latency, microseconds.
	Drift      float64  `json:"drift,omitempty"`
	Agreement  *float64 `json:"agreement,omitempty"`
	LatencyP50 float64  `json:"latency_p50_us,omitempty"`
}

// MaxHealthClasses bounds HealthPoint.Counts; further classes are summed
// under HealthOther.
const MaxHealthClasses = 16

// HealthOther is the Counts key of the classes past MaxHealthClasses.
const HealthOther = "(other)"

// UnknownRate is Unknown/Windows, and whether there were such windows.
func (p *HealthPoint) UnknownRate() (float64, bool) {
	if p.Windows == 0 {
		return 0, false
	}
	return float64(p.Unknown) / float64(p.Windows), true
}

// AnsweredConfidence is the mean confidence of the answered windows,
// and whether there were any: a period whose every window was unknown
// has none.
func (p *HealthPoint) AnsweredConfidence() (float64, bool) {
	if p.Answered == 0 {
		return 0, false
	}
	return p.AnsweredSum / float64(p.Answered), true
}

// MeanConfidence is ConfidenceSum/Windows, and whether there were windows.
func (p *HealthPoint) MeanConfidence() (float64, bool) {
	if p.Windows == 0 {
		return 0, false
	}
	return p.ConfidenceSum / float64(p.Windows), true
}

// DeviceHealth is a device's model health over time: GET
// /v1/devices/{id}/health. Minutes are the last 24 hours' minutes with a
// report, Hours the last 31 days' hours, oldest first.
type DeviceHealth struct {
	Device  string        `json:"device"`
	Minutes []HealthPoint `json:"minutes"`
	Hours   []HealthPoint `json:"hours"`
}

// GroupHealth is the model health over time of the devices a label
// selector matches, their points summed period by period (drift and
// latency: the highest; agreement: the mean over the devices with a
// shadow report in the period): GET
// /v1/health?selector=site=north. MaxGroupHealthDevices bounds the
// devices read.
type GroupHealth struct {
	Selector map[string]string `json:"selector"`
	Devices  []string          `json:"devices"`
	Minutes  []HealthPoint     `json:"minutes"`
	Hours    []HealthPoint     `json:"hours"`
}

// MaxGroupHealthDevices bounds the devices of a GroupHealth: each costs
// 55 document reads.
const MaxGroupHealthDevices = 1000

// AddPoint adds q's figures to p (same period): counts, windows and
// sums add up, drift and latency keep the highest, agreement is dropped.
func (p *HealthPoint) AddPoint(q *HealthPoint) {
	p.Predictions += q.Predictions
	for k, n := range q.Counts {
		if p.Counts == nil {
			p.Counts = map[string]uint64{}
		}
		if _, ok := p.Counts[k]; !ok && len(p.Counts) >= MaxHealthClasses {
			k = HealthOther
		}
		p.Counts[k] += n
	}
	p.Windows += q.Windows
	p.Unknown += q.Unknown
	p.ConfidenceSum += q.ConfidenceSum
	p.Answered += q.Answered
	p.AnsweredSum += q.AnsweredSum
	p.Drift = max(p.Drift, q.Drift)
	p.LatencyP50 = max(p.LatencyP50, q.LatencyP50)
	p.Agreement = nil
}
