package fleet

import (
	"time"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet/rollout"
)

// The rollout engine is package fleet/rollout: a plain value (rollout,
// shadow, confidence gate, approval, abort criterion) that imports only
// api and wire. The service persists it, steps it and sends what it asks;
// these names keep the service's callers (the HTTP API, the console, the
// tests) as they were while they move to the engine's own names.
type (
	Rollout       = rollout.Rollout
	Notification  = rollout.Notification
	Report        = rollout.Report
	ShadowSummary = rollout.ShadowSummary
	AbortStatus   = rollout.AbortStatus
)

// DefaultTimeout is the per-device timeout when a rollout gives none.
const DefaultTimeout = rollout.DefaultTimeout

// NewRollout checks a rollout definition and returns it running, with
// every device pending (rollout.New).
func NewRollout(id, bundle string, devices []string, pace api.Pace, abort api.AbortPolicy, now time.Time) (*Rollout, error) {
	return rollout.New(id, bundle, devices, pace, abort, now)
}
