package wire

import (
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
)

func TestShadowCommand(t *testing.T) {
	priv := key(1)
	keys, err := NewKeySet(priv.Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	c := &Command{Fleet: "plant-a", Device: "gw-001", Bundle: hashA, Rollout: "r1", Seq: 3,
		IssuedAt: now.Unix() - 10, ExpiresAt: now.Unix() + 3600, Mode: ModeShadow}
	if err := c.Sign(priv); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(string(c.Canonical()), "mode=shadow\n") {
		t.Errorf("canonical text does not end with the mode: %q", c.Canonical())
	}
	data, _ := c.Marshal()
	got, err := VerifyCommand(data, keys, Target{Fleet: "plant-a", Device: "gw-001"}, now)
	if err != nil || got.Mode != ModeShadow {
		t.Fatalf("verify: %+v, %v", got, err)
	}
	// Dropping the mode turns a shadow into an install: the signature
	// must not allow it.
	m := *c
	m.Mode = ""
	data, _ = json.Marshal(&m)
	if _, err := VerifyCommand(data, keys, Target{Fleet: "plant-a", Device: "gw-001"}, now); !errors.Is(err, ErrSignature) {
		t.Errorf("mode removed: %v, want ErrSignature", err)
	}
	for _, bad := range []Command{{Mode: "promote"}, {Mode: ModeShadow, Rollback: true}} {
		b := *c
		b.Mode, b.Rollback = bad.Mode, bad.Rollback
		if err := b.Validate(); !errors.Is(err, ErrMalformed) {
			t.Errorf("mode %q rollback %v: %v, want ErrMalformed", b.Mode, b.Rollback, err)
		}
	}
}

func TestShadowReportDecode(t *testing.T) {
	good := func() *Telemetry {
		return &Telemetry{Device: "d", Session: 1, Seq: 1, Predictions: 10,
			Shadow: &ShadowReport{Rollout: "r", Seq: 2, Bundle: hashA, Windows: 10, Agree: 7, ActiveClasses: []string{"a", "b"},
				CandidateClasses: []string{"a", "b"}, Confusion: [][]uint64{{5, 3}, {0, 2}}, CandidateLowMargin: 1, LowMargin: 0.1}}
	}
	b, _ := good().Marshal()
	got, err := DecodeTelemetry(b)
	if err != nil {
		t.Fatal(err)
	}
	if a := got.Shadow.Agreement(); a != 0.7 {
		t.Errorf("agreement %v, want 0.7", a)
	}
	act, cand := got.Shadow.Histograms()
	if act["a"] != 8 || act["b"] != 2 || cand["a"] != 5 || cand["b"] != 5 {
		t.Errorf("histograms %v %v", act, cand)
	}
	bad := map[string]func(*ShadowReport){
		"agree above windows":  func(r *ShadowReport) { r.Agree = 11 },
		"confusion too large":  func(r *ShadowReport) { r.Confusion[1][1] = 9 },
		"ragged confusion":     func(r *ShadowReport) { r.Confusion[1] = []uint64{1} },
		"rows without classes": func(r *ShadowReport) { r.ActiveClasses = r.ActiveClasses[:1] },
		"bad bundle":           func(r *ShadowReport) { r.Bundle = "x" },
		"low margin above 1":   func(r *ShadowReport) { r.LowMargin = 2 },
		// Paired unknown counts: of 3 and 5 unknown windows, 1 and 3 only
		// one model's leave 2 both models', the same windows.
		"paired counts that do not pair": func(r *ShadowReport) {
			r.ActiveUnknown, r.CandidateUnknown, r.ActiveOnlyUnknown, r.CandidateOnlyUnknown, r.UnknownPaired = 3, 5, 1, 2, true
		},
		"only-unknown above unknown": func(r *ShadowReport) {
			r.ActiveUnknown, r.CandidateUnknown, r.ActiveOnlyUnknown, r.CandidateOnlyUnknown, r.UnknownPaired = 3, 5, 4, 6, true
		},
		"paired counts without the flag": func(r *ShadowReport) {
			r.ActiveUnknown, r.CandidateUnknown, r.ActiveOnlyUnknown, r.CandidateOnlyUnknown = 3, 5, 1, 3
		},
	}
	paired := good()
	paired.Shadow.ActiveUnknown, paired.Shadow.CandidateUnknown, paired.Shadow.ActiveOnlyUnknown, paired.Shadow.CandidateOnlyUnknown, paired.Shadow.UnknownPaired = 3, 5, 1, 3, true
	if b, _ := paired.Marshal(); func() error { _, err := DecodeTelemetry(b); return err }() != nil {
		t.Errorf("paired counts refused: %s", b)
	}
	for name, mut := range bad {
		tm := good()
		mut(tm.Shadow)
		b, _ := tm.Marshal()
		if _, err := DecodeTelemetry(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v, want ErrMalformed", name, err)
		}
	}
	tm := good()
	tm.Shadow = nil
	tm.Drift = &DriftReport{Score: 1.5}
	b, _ = tm.Marshal()
	if _, err := DecodeTelemetry(b); !errors.Is(err, ErrMalformed) {
		t.Errorf("drift score 1.5: %v, want ErrMalformed", err)
	}
}

func TestJensenShannon(t *testing.T) {
	if js := JensenShannon(map[string]uint64{"a": 3, "b": 1}, map[string]uint64{"a": 6, "b": 2}); math.Abs(js) > 1e-12 {
		t.Errorf("same distribution: %v, want 0", js)
	}
	if js := JensenShannon(map[string]uint64{"a": 3}, map[string]uint64{"b": 4}); math.Abs(js-1) > 1e-12 {
		t.Errorf("disjoint: %v, want 1", js)
	}
	// P = (1/2, 1/2), Q = (1, 0): M = (3/4, 1/4); H(M) − (1 + 0)/2.
	want := -(0.75*math.Log2(0.75) + 0.25*math.Log2(0.25)) - 0.5
	if js := JensenShannon(map[string]uint64{"a": 1, "b": 1}, map[string]uint64{"a": 2}); math.Abs(js-want) > 1e-12 {
		t.Errorf("half/half vs all a: %v, want %v", js, want)
	}
}
