package inventory

// Alerts are the two thresholds at which a device's record raises an
// alert (fleet.toml [alerts]), and the one place that decides both: the
// drift alert (Device.Drifting) and the unknown alert (Device.Uncertain).
// The intake evaluates them after each telemetry report it applies
// (fleet's batch.applyTelemetry); the console and the metrics only read the
// flags, so a threshold means the same everywhere.
//
// Invariants:
//   - A threshold of 0 never raises its alert (and clears it).
//   - Drifting follows the newest report only: a late report leaves it as
//     it was, as it leaves the record's drift score.
//   - Uncertain follows the record's latest interval (its confidence
//     report) after every report applied.
//   - An alert is raised (reported, counted, logged) only when its flag
//     goes from false to true, not while it stays true.
type Alerts struct {
	Drift   float64 // drift score at or above which a device is drifting
	Unknown float64 // share of an interval's windows reported unknown at or above which it is uncertain
}

// Evaluate sets d's alert flags after a telemetry report was applied to
// it (newest: the report was the newest applied so far) and reports which
// alerts the report raised.
func (a Alerts) Evaluate(d *Device, newest bool) (drift, unknown bool) {
	wasDrifting, wasUncertain := d.Drifting, d.Uncertain
	if newest {
		d.Drifting = a.Drift > 0 && d.Drift != nil && d.Drift.Score >= a.Drift
	}
	u, ok := d.UnknownRate()
	d.Uncertain = a.Unknown > 0 && ok && u >= a.Unknown
	return d.Drifting && !wasDrifting, d.Uncertain && !wasUncertain
}
