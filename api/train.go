package api

import "time"

// TrainRequest asks for one training run. Zero Sigma or C searches the
// default grid on a validation split (as `tritctl train` does).
type TrainRequest struct {
	// Dataset is a path relative to the fleet's training data directory,
	// or "standard:NAME" for a standard dataset stored there (usps, …).
	Dataset     string `json:"dataset"`
	Format      string `json:"format,omitempty"`       // auto (default), csv (or dense), arff, libsvm, idx: as tritctl train --format
	LabelColumn int    `json:"label_column,omitempty"` // CSV: numbered from 1, -1 for the last; 0: named label/class/target/y, else the last
	// LabelColumnName chooses the label column by its header name
	// instead (as tritctl train --label-column NAME); not with LabelColumn.
	LabelColumnName string `json:"label_column_name,omitempty"`
	// Features is a LIBSVM file's number of features (as tritctl train
	// --features); 0: its largest index, if the file holds at least one
	// value in 64 of the dense matrix that makes (training/data).
	Features int     `json:"features,omitempty"`
	Sigma    float64 `json:"sigma,omitempty"`
	C        float64 `json:"c,omitempty"`
	// Budget is the size of the signed bundle to fill, in bytes (default
	// 30 KiB, as `tritctl train --budget`); P fixes the number of random
	// features instead (the paper's experiments).
	Budget   int    `json:"budget,omitempty"`
	P        int    `json:"p,omitempty"`
	ModelID  string `json:"model_id"`
	Release  uint64 `json:"release"`
	Hardware string `json:"hardware,omitempty"`
	MinAgent string `json:"min_agent_version,omitempty"` // default bundle.DefaultMinAgentVersion
	// Retrain makes the job a retraining (docs/FLEET.md "Closing the
	// loop"): Dataset is the model's original training data, the windows
	// labelled for ModelID in the fleet's store are added, newer weighted
	// more, and the challenger is kept only if it beats the active bundle
	// on the newest labelled windows. Active is that bundle's hash (default
	// the model's latest release in the registry); Release defaults to the
	// active release + 1.
	Retrain bool   `json:"retrain,omitempty"`
	Active  string `json:"active,omitempty"`
}

// TrainState is the state of a training job.
type TrainState string

// Training job states.
const (
	TrainQueued    TrainState = "queued"    // waiting for the job before it
	TrainRunning   TrainState = "running"   // training
	TrainSucceeded TrainState = "succeeded" // Bundle holds the result
	TrainFailed    TrainState = "failed"    // Error says why
	TrainCancelled TrainState = "cancelled" // by the operator
)

// Done reports whether a job in state s has finished.
func (s TrainState) Done() bool {
	return s == TrainSucceeded || s == TrainFailed || s == TrainCancelled
}

// TrainJob is a training run and its outcome.
type TrainJob struct {
	ID string `json:"id"`
	// Damaged, in a list, marks a job record that does not decode
	// (Damaged): why; no other field is set.
	Damaged  string       `json:"damaged,omitempty"`
	Request  TrainRequest `json:"request"`
	State    TrainState   `json:"state"`
	Error    string       `json:"error,omitempty"`
	Started  time.Time    `json:"started"` // when it was asked for
	Finished time.Time    `json:"finished,omitzero"`
	// On success: the unsigned bundle (GET /v1/train/{id}/bundle) and the
	// figures of `tritctl train`.
	Bundle       string       `json:"bundle,omitempty"` // SHA-256 of the unsigned bundle
	Bytes        int          `json:"bytes,omitempty"`
	Structure    *Structure   `json:"structure,omitempty"` // thresholds, projection, p, weights
	Sigma        float64      `json:"sigma,omitempty"`
	C            float64      `json:"c,omitempty"`
	Validation   string       `json:"validation,omitempty"` // how candidates were validated
	Accuracy     float64      `json:"accuracy,omitempty"`   // percent, on AccuracyOn
	Balanced     float64      `json:"balanced_accuracy,omitempty"`
	PerClass     []ClassScore `json:"per_class,omitempty"`
	AccuracyOn   string       `json:"accuracy_on,omitempty"` // "test" (standard sets) or "training"
	NonZero      int          `json:"nonzero,omitempty"`
	TrainSeconds float64      `json:"train_seconds,omitempty"`
	// Retrain is a retraining's comparison; with Better false the job
	// succeeded without a bundle.
	Retrain *RetrainResult `json:"retrain,omitempty"`
}

// RetrainResult is how a retraining's challenger did against the active
// model on the newest labelled windows (the JSON of training/retrain's
// Outcome, which the fleet converts).
type RetrainResult struct {
	Active        string        `json:"active"` // the active bundle's hash
	ActiveRelease uint64        `json:"active_release"`
	Windows       int           `json:"labelled_windows"`
	Skipped       int           `json:"skipped_windows,omitempty"` // labelled, but of other features
	Newest        int           `json:"newest_windows"`
	OriginalRows  int           `json:"original_rows"`
	TrainedRows   int           `json:"trained_rows"`
	MaxCopies     int           `json:"max_copies"`
	ActiveScores  RetrainScores `json:"active_scores"`
	Challenger    RetrainScores `json:"challenger_scores"`
	Better        bool          `json:"better"`
	Why           string        `json:"why"`
	Refitted      bool          `json:"refitted,omitempty"`
	RefitError    string        `json:"refit_error,omitempty"` // why the refit failed; the scored fit is the challenger
}

// RetrainScores are a model's figures on the newest labelled windows (the
// JSON of retrain.Scores, kept in step by a conversion).
type RetrainScores struct {
	Windows    int     `json:"windows"`
	Accuracy   float64 `json:"accuracy"`
	Balanced   float64 `json:"balanced_accuracy"`
	ECE        float64 `json:"ece"`
	Unknown    float64 `json:"unknown"`
	Calibrated bool    `json:"calibrated"`
}

// Structure is the embedding and weights a training job chose: the JSON of
// training.Structure, defined here so that the API's clients need nothing
// of training. The fleet converts one to the other, so the compiler keeps
// the two field for field the same.
type Structure struct {
	Thresholds      int  `json:"thresholds"`                 // per feature, at most
	Projection      int  `json:"projection"`                 // principal directions; 0 = the raw scaled input
	P               int  `json:"p"`                          // random features
	Binary          bool `json:"binary"`                     // weights in {−1, +1} rather than {−1, 0, +1}
	ThresholdWeight int  `json:"threshold_weight,omitempty"` // ρ, the threshold bits' weight; 0 means 1
	Trees           int  `json:"trees,omitempty"`            // boosted oblivious trees; 0 = none
	Depth           int  `json:"depth,omitempty"`            // their depth
	Planes          int  `json:"planes,omitempty"`           // columns per tree leaf; 0 means 1
}

// ClassScore is one class's figures on the evaluation rows (the JSON of
// training.ClassScore, kept in step the same way).
type ClassScore struct {
	Class     string  `json:"class"`
	Rows      int     `json:"rows"`      // rows of this class
	Recall    float64 `json:"recall"`    // percent of its rows predicted as it
	Precision float64 `json:"precision"` // percent of the rows predicted as it that are it; 0 if none were
}
