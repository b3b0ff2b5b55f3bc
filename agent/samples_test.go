package agent

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/trit-iot/trit/wire"
)

// TestSampleRingBound: offering far more windows than fit keeps the ring
// within its byte bound (of the JSON it is stored and sent as), drops the
// oldest first, and survives a store/restore round trip.
func TestSampleRingBound(t *testing.T) {
	r := benchRunning(&testing.B{}, 1, 64)
	ring := newSampleRing(4096, 10, 0.1)
	at := time.UnixMilli(1_750_000_000_000)
	for i := range 5000 {
		x := []float32{float32(i), -1.2345678e-5, 0.33333334}
		margin := 0.5 // kept only every 10th window
		if i%3 == 0 {
			margin = 0.01 // low margin: always kept
		}
		ring.offer(r, at.Add(time.Duration(i)*time.Millisecond), x, "normal", margin, "", false)
	}
	set := ring.set()
	data, _ := json.Marshal(set)
	if len(data) > 4096 {
		t.Fatalf("ring encodes to %d bytes, bound 4096", len(data))
	}
	if set.Dropped == 0 || len(set.Samples) == 0 {
		t.Fatalf("%d kept, %d dropped: the bound was never reached", len(set.Samples), set.Dropped)
	}
	if last := set.Samples[len(set.Samples)-1]; last.X[0] != 4999 { // seen 5000: kept as the 10th
		t.Errorf("newest kept window %v, want 4999", last.X[0])
	}
	for i := 1; i < len(set.Samples); i++ {
		if set.Samples[i].Time <= set.Samples[i-1].Time {
			t.Fatal("samples not oldest first")
		}
	}
	if set.Samples[0].X[0] < 4000 {
		t.Errorf("oldest kept window is %v: the oldest were not dropped first", set.Samples[0].X[0])
	}
	reasons := map[string]int{}
	for _, s := range set.Samples {
		reasons[s.Reason]++
	}
	if reasons[wire.SampleLowMargin] == 0 || reasons[wire.SampleRate] == 0 {
		t.Errorf("reasons %v: want low-margin and sampled windows", reasons)
	}
	stored, ok := ring.encodeIfDirty()
	if !ok {
		t.Fatal("ring not dirty after offers")
	}
	if _, again := ring.encodeIfDirty(); again {
		t.Error("ring dirty twice without an offer")
	}
	back := newSampleRing(4096, 10, 0.1)
	if !back.restore(stored) || len(back.set().Samples) != len(set.Samples) {
		t.Fatalf("restore: %d samples, want %d", len(back.set().Samples), len(set.Samples))
	}
	if back.restore([]byte("{not json")) {
		t.Error("a damaged record was restored")
	}
}

// TestSamplesRequest: the fleet's signed samples request is answered on
// the responses topic with the kept windows under the model's feature
// names; an unsigned one gets no answer.
func TestSamplesRequest(t *testing.T) {
	f, k, cfg, v1 := withRelease1(t)
	cfg.Models.SampleEvery = 1 // keep every window
	boot := f.lastBoot()
	startAgent(t, cfg, nil)
	// Windows to keep: predictions by this process (not telemetry the
	// previous one left queued).
	f.waitPredictions("by the restarted agent", 3, func(tm *wire.Telemetry) bool { return tm.Boot > boot })
	send := func(id string, signer []byte) {
		now := time.Now().Unix()
		r := &wire.Request{Fleet: testFleet, Device: testDevice, ID: id, Kind: wire.RequestSamples, IssuedAt: now - 1, ExpiresAt: now + 60}
		if err := r.Sign(signer); err != nil {
			t.Fatal(err)
		}
		b, _ := r.Marshal()
		f.publish(f.topics.Requests(testDevice), b, false)
	}
	send("forged", k.other)
	send("q1", k.command)
	var resp *wire.Response
	f.waitFor("the samples response", 10*time.Second, func() bool {
		for _, r := range f.responses {
			if r.ID == "q1" {
				resp = r
				return true
			}
		}
		return false
	})
	s := resp.Samples
	if resp.Error != "" || s == nil || len(s.Samples) == 0 || len(s.Features) != 3 || s.Features[0] != "x1" {
		t.Fatalf("response %+v", resp)
	}
	if s.Model == nil || s.Model.Bundle != v1 {
		t.Errorf("response names model %+v, want v1", s.Model)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range f.responses {
		if r.ID == "forged" {
			t.Errorf("a request signed by an untrusted key was answered")
		}
	}
}

// TestSampleRingPrefersUnknown: windows a calibrated model reported
// unknown are kept with their reason, and past the bound the other
// windows go first, so the unknown ones outlive far newer low-margin ones.
func TestSampleRingPrefersUnknown(t *testing.T) {
	r := benchRunning(&testing.B{}, 1, 64)
	ring := newSampleRing(4096, 0, 0.1)
	at := time.UnixMilli(1_750_000_000_000)
	for i := range 3000 {
		x := []float32{float32(i), 0.5, 0.25}
		unknown := i < 20 // the first 20 windows are unknown, then only low-margin ones
		ring.offer(r, at.Add(time.Duration(i)*time.Millisecond), x, "normal", 0.01, "", unknown)
	}
	set := ring.set()
	reasons := map[string]int{}
	for _, s := range set.Samples {
		reasons[s.Reason]++
		if s.Reason == wire.SampleUnknown && s.X[0] >= 20 {
			t.Errorf("window %v kept as unknown", s.X[0])
		}
	}
	if reasons[wire.SampleUnknown] != 20 || reasons[wire.SampleLowMargin] == 0 || set.Dropped == 0 {
		t.Errorf("reasons %v, %d dropped: want the 20 unknown windows kept beside newer low-margin ones", reasons, set.Dropped)
	}
	if data, _ := json.Marshal(set); len(data) > 4096 {
		t.Errorf("ring encodes to %d bytes, bound 4096", len(data))
	}
	// A ring of unknown windows alone drops its oldest.
	only := newSampleRing(2048, 0, 0.1)
	for i := range 500 {
		only.offer(r, at.Add(time.Duration(i)*time.Millisecond), []float32{float32(i), 0, 0}, "normal", 0.9, "", true)
	}
	if s := only.set().Samples; len(s) == 0 || s[len(s)-1].X[0] != 499 || s[0].X[0] < 400 {
		t.Errorf("unknown-only ring kept %d windows from %v", len(s), s[0].X[0])
	}
}
