package inventory

import (
	"testing"

	"github.com/trit-iot/trit/wire"
)

// TestAlertsEvaluate pins both alert decisions in their one owner: the
// drift alert on the newest report's score, the unknown alert on the
// latest interval's unknown rate, each at or above its threshold, never
// at threshold 0, and raised only when its flag goes from false to true.
func TestAlertsEvaluate(t *testing.T) {
	conf := func(unknown uint64) *wire.ConfidenceReport { // of 100 windows
		return &wire.ConfidenceReport{Unknown: unknown, Histogram: []uint64{50, 50}}
	}
	for _, c := range []struct {
		name                   string
		alerts                 Alerts
		drift                  *wire.DriftReport
		confidence             *wire.ConfidenceReport
		newest                 bool
		wasDrifting, wasUncert bool

		drifting, uncertain bool // the flags after
		raisedD, raisedU    bool // the alerts raised
	}{
		{name: "below both", alerts: Alerts{0.5, 0.1}, drift: &wire.DriftReport{Score: 0.49}, confidence: conf(9), newest: true},
		{name: "at both thresholds", alerts: Alerts{0.5, 0.1}, drift: &wire.DriftReport{Score: 0.5}, confidence: conf(10), newest: true,
			drifting: true, uncertain: true, raisedD: true, raisedU: true},
		{name: "staying up raises nothing", alerts: Alerts{0.5, 0.1}, drift: &wire.DriftReport{Score: 0.9}, confidence: conf(50), newest: true,
			wasDrifting: true, wasUncert: true, drifting: true, uncertain: true},
		{name: "back below clears", alerts: Alerts{0.5, 0.1}, drift: &wire.DriftReport{Score: 0.1}, confidence: conf(1), newest: true,
			wasDrifting: true, wasUncert: true},
		{name: "threshold 0: never", alerts: Alerts{}, drift: &wire.DriftReport{Score: 5}, confidence: conf(100), newest: true,
			wasDrifting: true, wasUncert: true},
		{name: "no drift report, no confidence report", alerts: Alerts{0.5, 0.1}, newest: true, wasDrifting: true, wasUncert: true},
		{name: "no windows: no unknown rate", alerts: Alerts{0.5, 0.1}, confidence: &wire.ConfidenceReport{Unknown: 3}, newest: true, wasUncert: true},
		{name: "a late report leaves drifting, not uncertain", alerts: Alerts{0.5, 0.1}, drift: &wire.DriftReport{Score: 0.9}, confidence: conf(50),
			uncertain: true, raisedU: true},
		{name: "a late report keeps drifting", alerts: Alerts{0.5, 0.1}, drift: &wire.DriftReport{Score: 0.1}, wasDrifting: true, drifting: true},
	} {
		d := &Device{}
		d.Drift, d.Confidence, d.Drifting, d.Uncertain = c.drift, c.confidence, c.wasDrifting, c.wasUncert
		raisedD, raisedU := c.alerts.Evaluate(d, c.newest)
		if d.Drifting != c.drifting || d.Uncertain != c.uncertain || raisedD != c.raisedD || raisedU != c.raisedU {
			t.Errorf("%s: drifting %v uncertain %v, raised %v %v; want %v %v, raised %v %v", c.name,
				d.Drifting, d.Uncertain, raisedD, raisedU, c.drifting, c.uncertain, c.raisedD, c.raisedU)
		}
	}
}
