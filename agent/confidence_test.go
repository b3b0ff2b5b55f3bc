package agent

import (
	"testing"
	"time"

	"github.com/trit-iot/trit/inference"
	"github.com/trit-iot/trit/inference/bundle"
	"github.com/trit-iot/trit/wire"
)

func TestThresholdsFor(t *testing.T) {
	cal := &inference.Calibration{Edges: []float32{1}, Confidence: []uint8{100, 200}, MinConfidence: 200, MaxNovelty: 50}
	spec := &inference.ModelSpec{Classes: []string{"a", "b"}, Scaler: inference.Scaler{Lo: []float32{0}, Hi: []float32{1}},
		Thresholds: [][]float32{{0.5}}, Kept: []int32{0}, Sign: [][]uint64{{1}}, NonZero: [][]uint64{{1}}, Alpha: []float32{1},
		Fingerprint: &inference.Fingerprint{Columns: []int32{0}, Rates: []uint8{9}}, Calibration: cal}
	m, err := inference.New(spec)
	if err != nil {
		t.Fatal(err)
	}
	half, zero := 0.5, int64(0)
	for _, c := range []struct {
		mc   ModelsConfig
		want inference.Thresholds
	}{
		{ModelsConfig{}, inference.Thresholds{MinConfidence: 200, MaxNovelty: 50}},
		{ModelsConfig{MinConfidence: &half}, inference.Thresholds{MinConfidence: 128, MaxNovelty: 50}},
		{ModelsConfig{MaxNovelty: &zero}, inference.Thresholds{MinConfidence: 200}},
	} {
		if got := thresholdsFor(m, c.mc); got != c.want {
			t.Errorf("%+v: %+v, want %+v", c.mc, got, c.want)
		}
	}
	plain := *spec
	plain.Calibration = nil
	m2, _ := inference.New(&plain)
	if got := thresholdsFor(m2, ModelsConfig{MinConfidence: &half}); got != (inference.Thresholds{}) {
		t.Errorf("uncalibrated model: %+v, want none", got)
	}
}

func TestConfigUnknownThresholds(t *testing.T) {
	k := newKeys(t)
	for _, bad := range []func(*Config){
		func(c *Config) { v := 1.5; c.Models.MinConfidence = &v },
		func(c *Config) { v := -0.1; c.Models.MinConfidence = &v },
		func(c *Config) { v := int64(-1); c.Models.MaxNovelty = &v },
		func(c *Config) { v := int64(1) << 33; c.Models.MaxNovelty = &v },
	} {
		c := testConfig(t, k, "tcp://fake:1883")
		bad(c)
		if err := c.Validate(); err == nil {
			t.Errorf("config %+v accepted", c.Models)
		}
	}
}

// TestTelemetryReportsUnknown: an agent running a calibrated bundle sends
// the confidence report — every window unknown under the bundle's
// novelty threshold of 1, none with the config's overrides; an
// uncalibrated bundle sends none.
func TestTelemetryReportsUnknown(t *testing.T) {
	cal := &inference.Calibration{Edges: []float32{0.5}, Confidence: []uint8{120, 230}, MinConfidence: 0, MaxNovelty: 1}
	for _, c := range []struct {
		name        string
		cal         *inference.Calibration
		override    bool
		wantReport  bool
		wantUnknown bool
	}{
		{"bundle thresholds", cal, false, true, true},
		{"overridden", cal, true, true, false},
		{"uncalibrated", nil, false, false, false},
		// The overrides do not apply to an uncalibrated model, and the
		// log says so (warnUncalibrated).
		{"uncalibrated, overridden", nil, true, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			k := newKeys(t)
			b := newFakeBroker()
			cfg := testConfig(t, k, "tcp://fake:1883")
			if c.override {
				zero, never := 0.0, int64(0)
				cfg.Models.MinConfidence, cfg.Models.MaxNovelty = &zero, &never
			}
			var rec logRecorder
			startAgent(t, cfg, &Options{Dialer: b, Logger: rec.logger()})
			tp, _ := wire.NewTopics(testFleet)
			data := makeBundle(t, bundleOpts{release: 3, signer: k.release, cal: c.cal})
			if c.cal != nil && data[len(bundle.Magic)] != 5 {
				t.Fatalf("calibrated bundle is format %d", data[len(bundle.Magic)])
			}
			h := hashOf(data)
			b.publish(Message{Topic: tp.Bundle(h), Payload: data, Retained: true})
			for deadline := time.Now().Add(5 * time.Second); len(b.published(wire.KindState)) == 0; {
				if time.Now().After(deadline) {
					t.Fatal("agent never published its state")
				}
				time.Sleep(10 * time.Millisecond)
			}
			cmd := &wire.Command{Fleet: testFleet, Device: testDevice, Bundle: h, Rollout: "r", Seq: 1, IssuedAt: time.Now().Unix() - 1, ExpiresAt: time.Now().Unix() + 600}
			if err := cmd.Sign(k.command); err != nil {
				t.Fatal(err)
			}
			p, _ := cmd.Marshal()
			b.publish(Message{Topic: tp.Desired(testDevice), Payload: p, Retained: true})
			var got *wire.Telemetry
			for deadline := time.Now().Add(10 * time.Second); got == nil && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
				for _, m := range b.published(wire.KindTelemetry) {
					tm, err := wire.DecodeTelemetry(m.Payload)
					if err != nil {
						t.Fatal(err)
					}
					if tm.Model != nil && tm.Model.Release == 3 && tm.Predictions >= 5 {
						got = tm
					}
				}
			}
			if got == nil {
				t.Fatal("no telemetry with predictions of release 3")
			}
			const unapplied = "models.min_confidence and models.max_novelty do not apply to this model: its bundle has no calibration, so it reports no confidence and nothing unknown (train it with a calibration, the default, for unknown windows)"
			want := 0
			if c.cal == nil && c.override {
				want = 1
			}
			if n := len(rec.records(unapplied)); n != want {
				t.Errorf("%d warnings that the thresholds do not apply, want %d", n, want)
			}
			if !c.wantReport {
				if got.Confidence != nil || got.Last.Unknown || got.Last.Confidence != 0 {
					t.Fatalf("uncalibrated model reported confidence %+v, last %+v", got.Confidence, got.Last)
				}
				return
			}
			r := got.Confidence
			if r == nil {
				t.Fatal("no confidence report")
			}
			var hist uint64
			for _, n := range r.Histogram {
				hist += n
			}
			if hist != got.Predictions || r.Mean < 120.0/255-1e-9 || r.Mean > 230.0/255+1e-9 {
				t.Errorf("histogram %v (%d windows) of %d predictions, mean %v", r.Histogram, hist, got.Predictions, r.Mean)
			}
			if c.wantUnknown && (r.Unknown != got.Predictions || r.Novel != r.Unknown || r.MaxNovelty != 1 || !got.Last.Unknown) {
				t.Errorf("report %+v, last %+v: want every window unknown on novelty", r, got.Last)
			}
			if !c.wantUnknown && (r.Unknown != 0 || r.MaxNovelty != 0 || got.Last.Unknown) {
				t.Errorf("report %+v: want no unknown window with the overrides", r)
			}
		})
	}
}

// TestShadowCountsUnknown: the shadow report counts each model's unknown
// windows and says which model is calibrated.
func TestShadowCountsUnknown(t *testing.T) {
	act := benchRunning(&testing.B{}, 1, 64)
	act.calibrated = true
	cand := benchRunning(&testing.B{}, 2, 64)
	cand.calibrated = true
	s := &shadowRun{r: cand, rollout: "r", seq: 1, bundle: "c", lowMin: 0.1}
	for i := range 10 {
		s.record(act, 0, 0.5, i < 1 || i == 9, 200, 0, 0.5, i < 4, 100)
	}
	rep := s.report()
	if rep.Windows != 10 || rep.ActiveUnknown != 2 || rep.CandidateUnknown != 4 || !rep.ActiveCalibrated || !rep.CandidateCalibrated {
		t.Errorf("report %+v", rep)
	}
	// Window 0 both unknown; 9 the active model's alone; 1–3 the candidate's.
	if !rep.UnknownPaired || rep.ActiveOnlyUnknown != 1 || rep.CandidateOnlyUnknown != 3 {
		t.Errorf("paired counts %+v", rep)
	}
	if a, c := rep.UnknownRates(); a != 0.2 || c != 0.4 {
		t.Errorf("unknown rates %v %v", a, c)
	}
	// Confidence over the answered windows only: 8 × 200 and 6 × 100.
	if a, aok, c, cok := rep.MeanConfidences(); !aok || !cok || a != 200.0/255 || c != 100.0/255 || rep.ActiveConfidence != 1600 || rep.CandidateConfidence != 600 {
		t.Errorf("mean confidences %v %v %v %v (%+v)", a, aok, c, cok, rep)
	}
}

// The interval's answered mean leaves the unknown windows out, and a
// model that answers nothing has none (its mean confidence alone would
// show it confident: issue 38's chart plotted 100% for such a model).
func TestAnsweredMean(t *testing.T) {
	var c confidenceStats
	th := inference.Thresholds{MaxNovelty: 10}
	c.add(&inference.Outcome{Confidence: 255, Unknown: true, Novelty: 11}, th)
	c.add(&inference.Outcome{Confidence: 102}, th)
	c.add(&inference.Outcome{Confidence: 153}, th)
	r := c.report()
	if r.AnsweredMean == nil || *r.AnsweredMean != 0.5 || r.Mean != 510.0/255/3 {
		t.Fatalf("report %+v", r)
	}
	if n, m, ok := r.Answered(); !ok || n != 2 || m != 0.5 {
		t.Fatalf("Answered %d %v %v", n, m, ok)
	}
	for range 5 {
		c.add(&inference.Outcome{Confidence: 255, Unknown: true, Novelty: 11}, th)
	}
	r = c.report()
	if r.AnsweredMean != nil || r.Mean != 1 {
		t.Fatalf("all unknown: %+v", r)
	}
	if _, _, ok := r.Answered(); ok {
		t.Fatal("all unknown: an answered confidence")
	}
}
