package api

import (
	"fmt"
	"time"
)

// FieldWindow is a window a device kept for labelling (wire.Sample), as
// the fleet stores it once pulled, with its label once given.
type FieldWindow struct {
	ID        string    `json:"id"` // "<device>/<Unix ms of the reading>", unique
	Device    string    `json:"device"`
	Time      time.Time `json:"time"` // of the reading
	Model     string    `json:"model"`
	Release   uint64    `json:"release"`
	Bundle    string    `json:"bundle,omitempty"` // the model's bundle (SHA-256), when the device said
	Features  []string  `json:"features"`
	X         []float32 `json:"x"`
	Predicted string    `json:"predicted"`
	Margin    float64   `json:"margin"` // normalised, 0 … 1
	Candidate string    `json:"candidate,omitempty"`
	Reason    string    `json:"reason"` // why the device kept it (wire.Sample.Reason)
	Stored    time.Time `json:"stored"` // when the fleet stored it
	// The label, once given: the class the window really was, who gave
	// it (an operator's name, or "gateway:<device>/<source>" for a
	// gateway's label source), how (LabelCLI, LabelConsole, LabelAPI,
	// LabelGateway) and when.
	Label      string    `json:"label,omitempty"`
	LabelledBy string    `json:"labelled_by,omitempty"`
	Via        string    `json:"via,omitempty"`
	LabelledAt time.Time `json:"labelled_at,omitzero"`
}

// How a label came in (FieldWindow.Via, LabelRequest.Via).
const (
	LabelCLI     = "cli"     // tritctl samples label
	LabelConsole = "console" // the web console's labelling page
	LabelAPI     = "api"     // POST /v1/labels by another client
	LabelGateway = "gateway" // a gateway's label source
)

// LabelRequest labels stored windows, all or none (POST /v1/labels).
type LabelRequest struct {
	Labels []Label `json:"labels"`
	Via    string  `json:"via,omitempty"` // LabelCLI, LabelConsole or LabelAPI (default)
}

// Label is one window's label.
type Label struct {
	Window string `json:"window"` // FieldWindow.ID
	Label  string `json:"label"`
}

// LabelResult is what POST /v1/labels did.
type LabelResult struct {
	Labelled int `json:"labelled"`
}

// WindowQuery selects stored windows (GET /v1/windows).
type WindowQuery struct {
	Model    string    // "": every model
	Device   string    // "": every device
	Labelled *bool     // nil: both
	Since    time.Time // readings at or after; zero: all
	Limit    int       // the newest Limit; 0: the fleet's bound
}

// WindowList is GET /v1/windows's answer: the windows, oldest first.
type WindowList struct {
	Windows []FieldWindow `json:"windows"`
	// Total counts the windows that matched before Limit cut them.
	Total int `json:"total"`
	// Damaged names the stored windows that do not decode, skipped
	// whatever the query (what they held is unknown).
	Damaged []Damaged `json:"damaged,omitempty"`
}

// WindowID names the window of device read at ms Unix milliseconds (0 …
// 9,999,999,999,999): the device ID, "/", and ms as 13 digits, so IDs sort
// by device and then time.
func WindowID(device string, ms int64) string { return fmt.Sprintf("%s/%013d", device, ms) }
