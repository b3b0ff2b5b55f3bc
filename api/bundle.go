package api

import "time"

// BundleInfo is the registry's record of one bundle.
type BundleInfo struct {
	Hash string `json:"hash"` // SHA-256 of the signed bytes, lowercase hex
	// Damaged, in a list, marks a record that does not decode (Damaged):
	// why; no other field is set.
	Damaged    string    `json:"damaged,omitempty"`
	ModelID    string    `json:"model_id"`
	Release    uint64    `json:"release"`
	Size       int       `json:"size"`
	KeyID      string    `json:"key_id"` // hex of the signing key's ID
	Classes    []string  `json:"classes"`
	Features   []string  `json:"features"`
	Hardware   string    `json:"hardware,omitempty"`
	MinAgent   string    `json:"min_agent_version"`
	P          int       `json:"p"`
	CreatedAt  time.Time `json:"created_at"`
	ExpiresAt  time.Time `json:"expires_at,omitzero"`
	AddedAt    time.Time `json:"added_at"`
	Published  bool      `json:"published"` // sent retained to its bundle topic at least once (again for every rollout and plan that needs it)
	TrainedBy  string    `json:"trained_by,omitempty"`
	TrainNotes string    `json:"train_notes,omitempty"`
	// TrainCounts are the training rows per class, from the bundle's info
	// (train.class_counts); nil when it does not say.
	TrainCounts map[string]uint64 `json:"train_counts,omitempty"`
	// Calibrated: the model has a calibration (bundle format 5): its
	// devices report its confidence and unknown windows.
	Calibrated bool `json:"calibrated,omitempty"`
}

// BundleEntry is one bundle as GET /v1/bundles lists it: the registry's
// record and how many devices report running it as their active model.
type BundleEntry struct {
	BundleInfo
	Devices int `json:"devices"`
}
