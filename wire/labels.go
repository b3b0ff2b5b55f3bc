package wire

import (
	"fmt"
	"math"
	"strings"
	"unicode"
	"unicode/utf8"
)

// LabelSet is what a device's label source labelled (docs/PROTOCOL.md
// "Requests and responses", docs/FLEET.md "Closing the loop"): the windows
// the device classified, each with the class the source reported for its
// time, oldest first, sent in answer to a RequestLabels.
type LabelSet struct {
	Source string `json:"source"` // the label source's name (agent's label_source.name)
	// Models are the models that classified the windows (LabelledWindow.Model
	// indexes them); Features the names of every window's X.
	Models   []ModelRef       `json:"models"`
	Features []string         `json:"features"`
	Windows  []LabelledWindow `json:"windows"`
	// Dropped counts labelled windows the device evicted, to keep within
	// its bound, before the fleet took them.
	Dropped uint64 `json:"dropped,omitempty"`
	// More says the device holds later windows than fit in this answer:
	// the fleet asks again at once.
	More bool `json:"more,omitempty"`
}

// LabelledWindow is one classified window and its label.
type LabelledWindow struct {
	Time   int64     `json:"time"`  // Unix milliseconds of the reading
	X      []float32 `json:"x"`     // the feature vector classified
	Model  int       `json:"model"` // index into LabelSet.Models
	Class  string    `json:"class"` // what the model predicted
	Margin float64   `json:"margin"`
	Label  string    `json:"label"` // what the label source said it was
}

// Bounds of a LabelSet.
const (
	MaxLabelModels = 8
	MaxLabelLen    = 256
)

// CheckLabel accepts a class label from a label source: 1 … MaxLabelLen
// bytes of text without control characters.
func CheckLabel(s string) error {
	if s == "" || len(s) > MaxLabelLen || !utf8.ValidString(s) || strings.ContainsFunc(s, unicode.IsControl) {
		return fmt.Errorf("label %q: want 1 … %d bytes of text without control characters", clipText(s), MaxLabelLen)
	}
	return nil
}

func clipText(s string) string {
	if len(s) > 32 {
		return s[:32] + "…"
	}
	return s
}

// check validates a decoded label set.
func (l *LabelSet) check() error {
	if err := checkName(l.Source, MaxIDLen); err != nil {
		return fmt.Errorf("source: %v", err)
	}
	if len(l.Models) == 0 || len(l.Models) > MaxLabelModels {
		return fmt.Errorf("%d models, want 1 … %d", len(l.Models), MaxLabelModels)
	}
	for i := range l.Models {
		if err := l.Models[i].check(); err != nil {
			return fmt.Errorf("model %d: %v", i, err)
		}
	}
	if len(l.Features) == 0 || len(l.Features) > 4096 || len(l.Windows) > MaxSamples {
		return fmt.Errorf("%d features, %d windows: want 1 … 4096 features, at most %d windows", len(l.Features), len(l.Windows), MaxSamples)
	}
	for i, f := range l.Features {
		if f == "" || len(f) > 128 || strings.ContainsAny(f, ",\"\r\n") {
			return fmt.Errorf("feature %d: %q: want 1 … 128 bytes without comma, quote or newline", i, f)
		}
	}
	for i, w := range l.Windows {
		switch {
		case len(w.X) != len(l.Features):
			return fmt.Errorf("window %d has %d values for %d features", i, len(w.X), len(l.Features))
		case w.Model < 0 || w.Model >= len(l.Models):
			return fmt.Errorf("window %d: model %d of %d", i, w.Model, len(l.Models))
		case w.Time < 0 || w.Time > 9_999_999_999_999:
			return fmt.Errorf("window %d: time %d: want Unix milliseconds up to 9999999999999", i, w.Time)
		case !(w.Margin >= 0 && w.Margin <= 1) || math.IsNaN(w.Margin):
			return fmt.Errorf("window %d: margin %v, want 0 … 1", i, w.Margin)
		case len(w.Class) > MaxLabelLen:
			return fmt.Errorf("window %d: class too long", i)
		}
		if err := CheckLabel(w.Label); err != nil {
			return fmt.Errorf("window %d: %v", i, err)
		}
		for _, x := range w.X {
			if x != x || x > math.MaxFloat32 || x < -math.MaxFloat32 {
				return fmt.Errorf("window %d: a value that is not a finite number", i)
			}
		}
	}
	return nil
}
