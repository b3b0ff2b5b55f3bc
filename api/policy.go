package api

import "time"

// PolicyState is a retraining policy's state (GET /v1/policies): where
// its loop is and why it did or did not act (docs/FLEET.md "Closing the
// loop").
type PolicyState struct {
	Model string `json:"model"`
	Rule  string `json:"rule,omitempty"` // the policy in words (from fleet.toml)
	// Stage is "watching", "training", "challenger ready: sign offline"
	// or "shadowing, waiting for approval".
	Stage   string    `json:"stage"`
	Why     string    `json:"why,omitempty"` // the last decision, in words
	Since   time.Time `json:"since"`         // labels after this count as new
	Changed time.Time `json:"changed"`       // the stage's start
	Checked time.Time `json:"checked,omitzero"`
	// The figures of the last check: devices of the group, their mean
	// drift score and unknown share, the windows labelled since Since and
	// the model's accuracy on them (percent; nil without new labels).
	Devices   int      `json:"devices"`
	Drift     float64  `json:"drift"`
	Unknown   float64  `json:"unknown"`
	NewLabels int      `json:"new_labels"`
	Accuracy  *float64 `json:"accuracy,omitempty"`
	// The loop's current round: when it was triggered, its retraining job,
	// the challenger's unsigned bundle and release, and the rollout that
	// shadows its signed release.
	Trigger    time.Time `json:"trigger,omitzero"`
	Job        string    `json:"job,omitempty"`
	Challenger string    `json:"challenger,omitempty"`
	Release    uint64    `json:"release,omitempty"`
	Rollout    string    `json:"rollout,omitempty"`
}
