package wire

import (
	"crypto/ed25519"
	"testing"
)

// The decoders must never panic, and whatever they accept must re-encode to
// something they accept again.

func FuzzDecodeCommand(f *testing.F) {
	priv := key(1)
	c := &Command{Fleet: "f", Device: "d", Bundle: hashA, Rollout: "r", Seq: 1, IssuedAt: 1, ExpiresAt: 2}
	if err := c.Sign(priv); err != nil {
		f.Fatal(err)
	}
	good, _ := c.Marshal()
	f.Add(good)
	f.Add([]byte(`{"v":1}`))
	f.Add([]byte(`null`))
	keys, _ := NewKeySet(priv.Public().(ed25519.PublicKey))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := DecodeCommand(data)
		if err != nil {
			return
		}
		again, err := c.Marshal()
		if err != nil {
			t.Fatalf("accepted command does not marshal: %v", err)
		}
		if _, err := DecodeCommand(again); err != nil {
			t.Fatalf("re-encoded command refused: %v", err)
		}
		VerifyCommand(data, keys, Target{Fleet: c.Fleet, Device: c.Device}, now)
	})
}

func FuzzVerifyRequest(f *testing.F) {
	priv := key(1)
	for _, r := range []*Request{
		{Fleet: "f", Device: "d", ID: "q", Kind: RequestSamples, IssuedAt: 1, ExpiresAt: 2},
		{Fleet: "f", Device: "d", ID: "q", Kind: RequestPlan, Bundle: hashA, IssuedAt: 1, ExpiresAt: 2},
	} {
		if err := r.Sign(priv); err != nil {
			f.Fatal(err)
		}
		good, _ := r.Marshal()
		f.Add(good)
	}
	keys, _ := NewKeySet(priv.Public().(ed25519.PublicKey))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := VerifyRequest(data, keys, Target{Fleet: "f", Device: "d"}, now.AddDate(-60, 0, 0))
		if err != nil {
			return
		}
		again, err := r.Marshal()
		if err != nil {
			t.Fatalf("accepted request does not marshal: %v", err)
		}
		if _, err := VerifyRequest(again, keys, Target{Fleet: "f", Device: "d"}, now.AddDate(-60, 0, 0)); err != nil {
			t.Fatalf("re-encoded request refused: %v", err)
		}
	})
}

func FuzzDecodePayloads(f *testing.F) {
	st := &State{Device: "d", Session: 1, Online: true, Model: &ModelRef{ID: "m", Bundle: hashA}}
	b, _ := st.Marshal()
	f.Add(b)
	st = &State{Device: "d", Session: 2, Online: true, Health: "degraded", Sensors: []SensorHealth{
		{Sensor: "accel", State: SensorSlow, Since: 1, LastError: "reads 1.8 kHz of the configured 20 kHz"},
		{Sensor: "env", State: SensorFailed, Since: 1, LastError: "device did not respond", Failures: 3}}}
	b, _ = st.Marshal()
	f.Add(b)
	ev := &Event{Device: "d", Rollout: "r", Seq: 1, State: JobQueued}
	b, _ = ev.Marshal()
	f.Add(b)
	b, _ = (&Ack{Device: "d", IDs: []string{"r/1/QUEUED"}}).Marshal()
	f.Add(b)
	b, _ = (&Telemetry{Device: "d", Session: 1, Seq: 1, Predictions: 1, Counts: map[string]uint64{"a": 1}}).Marshal()
	f.Add(b)
	b, _ = (&Telemetry{Device: "d", Session: 1, Seq: 1, Predictions: 9, Counts: map[string]uint64{"a": 5}, Other: &OtherCounts{Classes: 2, Predictions: 4}}).Marshal()
	f.Add(b)
	b, _ = (&Telemetry{Device: "d", Session: 1, Seq: 1, Predictions: 2,
		Shadow: &ShadowReport{Rollout: "r", Seq: 1, Bundle: hashA, Windows: 2, Agree: 1, ActiveClasses: []string{"a", "b"},
			CandidateClasses: []string{"a", "b"}, Confusion: [][]uint64{{1, 1}, {0, 0}}, LowMargin: 0.1},
		Drift: &DriftReport{Score: 0.2, Windows: 2, Top: []DriftBit{{Column: 3, Train: 0.5, Now: 0.9, JS: 0.2}}}}).Marshal()
	f.Add(b)
	b, _ = (&Telemetry{Device: "d", Session: 1, Seq: 1, Predictions: 4, Last: &Prediction{Class: "a", Time: 1, Confidence: 0.3, Unknown: true},
		Confidence: &ConfidenceReport{Unknown: 1, Novel: 1, Histogram: []uint64{0, 0, 1, 0, 0, 0, 0, 1, 2, 0}, Mean: 0.6}}).Marshal()
	f.Add(b)
	b, _ = (&Response{Device: "d", ID: "q1", Kind: RequestSamples, Samples: &SampleSet{Features: []string{"a"},
		Samples: []Sample{{Time: 1, X: []float32{0.5}, Class: "x", Margin: 0.01, Reason: SampleLowMargin}}, MaxBytes: 100}}).Marshal()
	f.Add(b)
	b, _ = (&Response{Device: "d", ID: "q2", Kind: RequestLabels, Labels: &LabelSet{Source: "door", Models: []ModelRef{{ID: "m", Release: 2, Bundle: hashA}},
		Features: []string{"a", "b"}, Windows: []LabelledWindow{{Time: 1750000000000, X: []float32{0.5, 1}, Class: "x", Margin: 0.2, Label: "y"}}}}).Marshal()
	f.Add(b)
	st = &State{Device: "d", Session: 3, Online: true, LabelSource: "door"}
	b, _ = st.Marshal()
	f.Add(b)
	// Within their byte cap, above it once re-encoded ('<' and bytes that
	// are not UTF-8 grow): refused (TestDecodedPayloadsReencodeWithinTheirCap).
	for _, c := range reencodeCases() {
		f.Add([]byte(c.payload))
	}
	f.Fuzz(checkRoundTrip)
}

func FuzzParseTopic(f *testing.F) {
	tp, _ := NewTopics("f")
	f.Add(tp.Bundle(hashA))
	f.Add(tp.State("d"))
	f.Add("trit/v1/f/devices/d/x")
	f.Fuzz(func(t *testing.T, name string) {
		p, err := ParseTopic(name)
		if err != nil {
			return
		}
		tp, err := NewTopics(p.Fleet)
		if err != nil {
			t.Fatalf("parsed fleet %q refused: %v", p.Fleet, err)
		}
		var back string
		if p.Kind == KindBundle {
			back = tp.Bundle(p.Hash)
		} else {
			back = tp.Fleet()
			back = "trit/v1/" + back + "/devices/" + p.Device + "/" + string(p.Kind)
		}
		if back != name {
			t.Fatalf("%q parsed to %+v, which builds %q", name, p, back)
		}
	})
}
