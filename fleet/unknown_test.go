package fleet

import (
	"testing"

	"github.com/trit-iot/trit/fleet/inventory"
	"github.com/trit-iot/trit/wire"
)

// TestServiceUnknownAlert: a device whose unknown rate reaches the
// threshold is marked uncertain (once, counted); back below, or a report
// without a calibration, clears it.
func TestServiceUnknownAlert(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.UnknownAlert = 0.1 })
	for i, c := range []struct {
		unknown uint64 // of 100 windows; 200: no confidence report
		want    bool
	}{{2, false}, {30, true}, {10, true}, {3, false}, {50, true}, {200, false}} {
		tm := &wire.Telemetry{Device: "gw-1", Session: 1, Seq: uint64(i + 1), From: 1, To: 2, Predictions: 100}
		if c.unknown <= 100 {
			tm.Confidence = &wire.ConfidenceReport{Unknown: c.unknown, Novel: c.unknown, Histogram: []uint64{0, 0, 0, 0, 0, 0, 0, 0, 50, 50}, Mean: 0.9}
		}
		f.telemetry(t, tm)
		d, _ := inventory.DeviceByID(f.db, "gw-1")
		if d.Uncertain != c.want {
			t.Errorf("%d unknown of 100: uncertain %v, want %v", c.unknown, d.Uncertain, c.want)
		}
	}
	if n := f.svc.metrics.unknownAlerts.Load(); n != 2 {
		t.Errorf("%d unknown alerts, want 2 (two crossings)", n)
	}
}
