package wire

import (
	"errors"
	"strings"
	"testing"
)

func TestConfidenceReportDecode(t *testing.T) {
	good := func() *Telemetry {
		return &Telemetry{Device: "d", Session: 1, Seq: 1, Predictions: 10,
			Last:       &Prediction{Class: "a", Time: 5, Confidence: 0.4, Unknown: true},
			Confidence: &ConfidenceReport{Unknown: 3, LowConfidence: 2, Novel: 1, Histogram: []uint64{0, 0, 0, 2, 1, 0, 0, 2, 3, 2}, Mean: 0.71, MinConfidence: 0.45, MaxNovelty: 4000}}
	}
	b, _ := good().Marshal()
	got, err := DecodeTelemetry(b)
	if err != nil {
		t.Fatal(err)
	}
	if c := got.Confidence; c.Unknown != 3 || c.Histogram[8] != 3 || c.MaxNovelty != 4000 || !got.Last.Unknown {
		t.Errorf("decoded %+v", got)
	}
	// Without a calibration nothing new is sent: the JSON is what earlier
	// agents sent, which earlier fleets decode strictly.
	plain := good()
	plain.Confidence, plain.Last = nil, &Prediction{Class: "a", Time: 5}
	b, _ = plain.Marshal()
	if s := string(b); strings.Contains(s, "confidence") || strings.Contains(s, "unknown") {
		t.Errorf("an uncalibrated report carries new fields: %s", s)
	}
	for name, mut := range map[string]func(*Telemetry){
		"short histogram":        func(t *Telemetry) { t.Confidence.Histogram = t.Confidence.Histogram[:9] },
		"histogram above total":  func(t *Telemetry) { t.Confidence.Histogram[0] = 5 },
		"unknown above total":    func(t *Telemetry) { t.Confidence.Unknown = 11 },
		"novel above unknown":    func(t *Telemetry) { t.Confidence.Novel = 4 },
		"low conf above unknown": func(t *Telemetry) { t.Confidence.LowConfidence = 4 },
		"mean above 1":           func(t *Telemetry) { t.Confidence.Mean = 1.5 },
		"threshold below 0":      func(t *Telemetry) { t.Confidence.MinConfidence = -0.1 },
		"last confidence 2":      func(t *Telemetry) { t.Last.Confidence = 2 },
	} {
		tm := good()
		mut(tm)
		b, _ := tm.Marshal()
		if _, err := DecodeTelemetry(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v, want ErrMalformed", name, err)
		}
	}
}
