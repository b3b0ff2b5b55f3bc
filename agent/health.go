package agent

import (
	"fmt"
	"time"

	"github.com/trit-iot/trit/sensors"
)

// healthCheckEvery is how often the agent looks at its sensors' health
// between telemetry reports, so that a failed or slow sensor shows in the
// retained state within seconds whatever telemetry.interval is.
const healthCheckEvery = time.Second

// sensorWatch is the sensors' health as the agent last saw it (the
// telemetry goroutine only).
type sensorWatch struct {
	summary string // e.g. "[accel=ok env=failed]"; "" before the first check
	states  map[string]sensors.State
}

// checkSensors compares the sensors' health with what w saw last, logs
// what changed (a sensor falling short of its rate once, and once more when
// it keeps it again) and reports whether the state must be republished:
// on the first check and on any change.
func (a *Agent) checkSensors(w *sensorWatch) bool {
	hs := a.in.Load().health()
	parts := make([]string, len(hs))
	for i, h := range hs {
		parts[i] = h.Sensor + "=" + string(h.State)
	}
	summary := fmt.Sprint(parts)
	if summary == w.summary {
		return false
	}
	if w.summary != "" {
		a.log.Info("sensor health changed", "sensors", summary)
	}
	states := make(map[string]sensors.State, len(hs))
	for _, h := range hs {
		states[h.Sensor] = h.State
		was := w.states[h.Sensor]
		switch {
		case h.State == sensors.StateSlow && was != sensors.StateSlow:
			a.log.Warn("sensor cannot keep its configured rate: its feature windows span more time than the model expects; the state reports it degraded",
				"sensor", h.Sensor, "rate", sensors.FormatRate(h.Rate), "configured", sensors.FormatRate(h.ConfiguredRate))
		case was == sensors.StateSlow && h.State == sensors.StateOK:
			a.log.Info("sensor keeps its configured rate again", "sensor", h.Sensor, "rate", sensors.FormatRate(h.Rate))
		}
	}
	w.summary, w.states = summary, states
	return true
}
