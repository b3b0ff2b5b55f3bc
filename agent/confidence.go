package agent

import (
	"math"

	"github.com/trit-iot/trit/inference"
	"github.com/trit-iot/trit/wire"
)

// thresholdsFor returns the unknown thresholds the agent applies to m: the
// bundle's (inference.Model.Thresholds), each replaced by the config's
// models.min_confidence and models.max_novelty when set. A model without
// a calibration has none: it reports no confidence and nothing unknown.
func thresholdsFor(m *inference.Model, mc ModelsConfig) inference.Thresholds {
	if !m.Calibrated() {
		return inference.Thresholds{}
	}
	th := m.Thresholds()
	if mc.MinConfidence != nil {
		th.MinConfidence = uint8(math.Round(255 * *mc.MinConfidence))
	}
	if mc.MaxNovelty != nil {
		th.MaxNovelty = uint32(*mc.MaxNovelty)
	}
	return th
}

// confidenceStats accumulates a calibrated model's outcomes over one
// telemetry interval (wire.ConfidenceReport).
type confidenceStats struct {
	n, unknown, low, novel uint64
	hist                   [wire.ConfidenceBins]uint64
	sum                    uint64 // confidences ×255
	answered               uint64 // confidences ×255 of the windows not unknown
	th                     inference.Thresholds
}

// add counts one outcome under thresholds th.
func (c *confidenceStats) add(o *inference.Outcome, th inference.Thresholds) {
	c.n++
	c.th = th
	c.sum += uint64(o.Confidence)
	c.hist[min(wire.ConfidenceBins-1, int(o.Confidence)*wire.ConfidenceBins/255)]++
	if !o.Unknown {
		c.answered += uint64(o.Confidence)
	}
	if o.Unknown {
		c.unknown++
		if th.MinConfidence > 0 && o.Confidence < th.MinConfidence {
			c.low++
		}
		if th.MaxNovelty > 0 && o.Novelty > th.MaxNovelty {
			c.novel++
		}
	}
}

// report returns the interval's report (nil when no calibrated window
// was classified) and starts a new interval.
func (c *confidenceStats) report() *wire.ConfidenceReport {
	if c.n == 0 {
		return nil
	}
	r := &wire.ConfidenceReport{Unknown: c.unknown, LowConfidence: c.low, Novel: c.novel, Histogram: c.hist[:],
		Mean: float64(c.sum) / 255 / float64(c.n), MinConfidence: float64(c.th.MinConfidence) / 255, MaxNovelty: c.th.MaxNovelty}
	r.Histogram = append([]uint64(nil), c.hist[:]...)
	if c.n > c.unknown {
		m := float64(c.answered) / 255 / float64(c.n-c.unknown)
		r.AnsweredMean = &m
	}
	*c = confidenceStats{}
	return r
}
