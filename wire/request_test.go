package wire

import (
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestRequestVerify(t *testing.T) {
	priv := key(1)
	keys, err := NewKeySet(priv.Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	r := &Request{Fleet: "plant-a", Device: "gw-001", ID: "samples-1", Kind: RequestSamples, IssuedAt: now.Unix() - 1, ExpiresAt: now.Unix() + 60}
	if err := r.Sign(priv); err != nil {
		t.Fatal(err)
	}
	data, _ := r.Marshal()
	target := Target{Fleet: "plant-a", Device: "gw-001"}
	if got, err := VerifyRequest(data, keys, target, now); err != nil || got.ID != "samples-1" {
		t.Fatalf("verify: %+v %v", got, err)
	}
	m := *r
	m.ID = "samples-2"
	data2, _ := json.Marshal(&m)
	if _, err := VerifyRequest(data2, keys, target, now); !errors.Is(err, ErrSignature) {
		t.Errorf("changed id: %v, want ErrSignature", err)
	}
	if _, err := VerifyRequest(data, keys, Target{Fleet: "plant-a", Device: "gw-002"}, now); !errors.Is(err, ErrWrongTarget) {
		t.Errorf("other device: %v", err)
	}
	if _, err := VerifyRequest(data, keys, target, now.Add(2*60e9)); !errors.Is(err, ErrExpired) {
		t.Errorf("expired: %v", err)
	}
	other := *r
	if err := other.Sign(key(2)); err != nil {
		t.Fatal(err)
	}
	data3, _ := other.Marshal()
	if _, err := VerifyRequest(data3, keys, target, now); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("untrusted key: %v", err)
	}
}

func TestDecodeResponse(t *testing.T) {
	good := func() *Response {
		return &Response{Device: "d", ID: "q", Kind: RequestSamples, Samples: &SampleSet{Features: []string{"a", "b"},
			Samples: []Sample{{Time: 1, X: []float32{1, 2}, Class: "x", Margin: 0.05, Reason: SampleLowMargin}}}}
	}
	b, _ := good().Marshal()
	if _, err := DecodeResponse(b); err != nil {
		t.Fatal(err)
	}
	for name, mut := range map[string]func(*Response){
		"short row":     func(r *Response) { r.Samples.Samples[0].X = []float32{1} },
		"bad reason":    func(r *Response) { r.Samples.Samples[0].Reason = "why-not" },
		"margin":        func(r *Response) { r.Samples.Samples[0].Margin = 2 },
		"comma feature": func(r *Response) { r.Samples.Features[0] = "a,b" },
		"kind":          func(r *Response) { r.Kind = "reboot" },
	} {
		r := good()
		mut(r)
		b, _ := r.Marshal()
		if _, err := DecodeResponse(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v, want ErrMalformed", name, err)
		}
	}
}

func TestPlanRequest(t *testing.T) {
	r := &Request{V: ProtocolVersion, Fleet: "f", Device: "d", ID: "p1", Kind: RequestPlan, IssuedAt: 1, ExpiresAt: 2}
	if err := r.Validate(); !errors.Is(err, ErrMalformed) {
		t.Errorf("plan without a bundle: %v", err)
	}
	r.Bundle = hashA
	if err := r.Validate(); err != nil {
		t.Errorf("plan: %v", err)
	}
	if !strings.Contains(string(r.Canonical()), "bundle="+hashA+"\n") {
		t.Errorf("the bundle is not signed: %q", r.Canonical())
	}
	resp := &Response{Device: "d", ID: "p1", Kind: RequestPlan, Plan: &Plan{Bundle: hashA, Windows: 10, Changed: 3, Transitions: map[string]uint64{"a→b": 3}}}
	b, _ := resp.Marshal()
	if _, err := DecodeResponse(b); err != nil {
		t.Fatal(err)
	}
	resp.Plan.Changed = 11
	b, _ = resp.Marshal()
	if _, err := DecodeResponse(b); !errors.Is(err, ErrMalformed) {
		t.Errorf("changed above windows: %v", err)
	}
}

// TestLabelsRequestAndResponse: a labels request signs its After (a
// request whose After was changed does not verify), other kinds refuse an
// After, and a labels response is checked window by window.
func TestLabelsRequestAndResponse(t *testing.T) {
	priv := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
	keys, err := NewKeySet(priv.Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_750_000_000, 0)
	r := &Request{Fleet: "f", Device: "d", ID: "q", Kind: RequestLabels, After: 1_749_999_999_000, IssuedAt: now.Unix(), ExpiresAt: now.Unix() + 60}
	if err := r.Sign(priv); err != nil {
		t.Fatal(err)
	}
	raw, _ := r.Marshal()
	got, err := VerifyRequest(raw, keys, Target{Fleet: "f", Device: "d"}, now)
	if err != nil || got.After != r.After {
		t.Fatalf("verify: %+v, %v", got, err)
	}
	forged := strings.Replace(string(raw), `"after":1749999999000`, `"after":1750000099000`, 1)
	if _, err := VerifyRequest([]byte(forged), keys, Target{Fleet: "f", Device: "d"}, now); !errors.Is(err, ErrSignature) {
		t.Fatalf("a changed after verified: %v", err)
	}
	bad := &Request{Fleet: "f", Device: "d", ID: "q", Kind: RequestSamples, After: 5, IssuedAt: now.Unix(), ExpiresAt: now.Unix() + 60}
	if err := bad.Sign(priv); err == nil {
		t.Fatal("a samples request with an after signed")
	}
	good := LabelSet{Source: "door", Models: []ModelRef{{ID: "m", Release: 1, Bundle: strings.Repeat("a", 64)}}, Features: []string{"a"},
		Windows: []LabelledWindow{{Time: 1, X: []float32{1}, Class: "n", Margin: 0.5, Label: "fault"}}}
	for name, edit := range map[string]func(l *LabelSet){
		"model index": func(l *LabelSet) { l.Windows[0].Model = 1 },
		"empty label": func(l *LabelSet) { l.Windows[0].Label = "" },
		"values":      func(l *LabelSet) { l.Windows[0].X = nil },
		"margin":      func(l *LabelSet) { l.Windows[0].Margin = 2 },
		"time":        func(l *LabelSet) { l.Windows[0].Time = -1 },
		"no models":   func(l *LabelSet) { l.Models = nil },
		"source":      func(l *LabelSet) { l.Source = "" },
	} {
		l := good
		l.Windows = []LabelledWindow{good.Windows[0]}
		l.Models = append([]ModelRef(nil), good.Models...)
		edit(&l)
		b, _ := (&Response{Device: "d", ID: "q", Kind: RequestLabels, Labels: &l}).Marshal()
		if _, err := DecodeResponse(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v, want ErrMalformed", name, err)
		}
	}
	b, _ := (&Response{Device: "d", ID: "q", Kind: RequestLabels, Labels: &good}).Marshal()
	if _, err := DecodeResponse(b); err != nil {
		t.Fatal(err)
	}
}
