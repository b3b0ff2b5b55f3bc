package agent

import (
	"encoding/json"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/trit-iot/trit/wire"
)

// sampleRing keeps interesting windows for retraining — windows a
// calibrated model reported unknown, low-margin predictions,
// disagreements with the shadow candidate, and one window in every
// `every` — byte-bounded: past maxBytes (of their JSON form, as estimated
// by sampleSize) the oldest are dropped, unknown windows last (they are
// the ones most worth labelling: the oldest window of another reason goes
// first, and an unknown one only when the ring holds nothing else). The agent stores it in
// its database every telemetry interval (store.StatSamples) and sends it
// to the fleet on request (wire.RequestSamples).
type sampleRing struct {
	maxBytes int
	every    uint64
	lowMin   float64

	mu       sync.Mutex
	src      *running // the model whose features the samples hold
	features []string
	items    []wire.Sample
	sizes    []int
	bytes    int
	dropped  uint64
	seen     uint64
	dirty    bool
}

func newSampleRing(maxBytes, every int, lowMin float64) *sampleRing {
	return &sampleRing{maxBytes: maxBytes, every: uint64(max(every, 0)), lowMin: lowMin}
}

// sampleSize bounds the JSON size of s: every float32 takes at most 16
// bytes with its comma, the fixed fields at most 96.
func sampleSize(s *wire.Sample) int {
	return 96 + len(s.Class) + len(s.Candidate) + len(s.Reason) + 16*len(s.X)
}

// featureNames are r's input feature names (x1 … for a bundle naming none).
func featureNames(r *running) []string {
	if f := r.model.Spec().Features; len(f) > 0 {
		return f
	}
	out := make([]string, r.model.NumFeatures())
	for i := range out {
		out[i] = "x" + strconv.Itoa(i+1)
	}
	return out
}

// offer considers one classified window x of model r: class and margin
// are r's, cand the shadow candidate's class ("" without one), unknown
// whether r reported it unknown.
func (s *sampleRing) offer(r *running, at time.Time, x []float32, class string, margin float64, cand string, unknown bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen++
	reason := ""
	switch {
	case unknown:
		reason = wire.SampleUnknown
	case cand != "" && cand != class:
		reason = wire.SampleDisagreement
	case margin < s.lowMin:
		reason = wire.SampleLowMargin
	case s.every > 0 && s.seen%s.every == 0:
		reason = wire.SampleRate
	default:
		return
	}
	if r != s.src {
		if names := featureNames(r); !slices.Equal(names, s.features) {
			// Another model's inputs: the kept windows no longer fit.
			s.features, s.items, s.sizes, s.bytes = names, nil, nil, 0
		}
		s.src = r
	}
	smp := wire.Sample{Time: at.UnixMilli(), X: slices.Clone(x), Class: class, Margin: min(max(margin, 0), 1), Candidate: cand, Reason: reason}
	n := sampleSize(&smp)
	if n > s.maxBytes {
		return
	}
	s.items, s.sizes = append(s.items, smp), append(s.sizes, n)
	s.bytes += n
	for s.bytes > s.maxBytes {
		// The oldest window kept for another reason than unknown, else
		// the oldest.
		k := slices.IndexFunc(s.items, func(it wire.Sample) bool { return it.Reason != wire.SampleUnknown })
		if k < 0 {
			k = 0
		}
		s.bytes -= s.sizes[k]
		s.dropped++
		s.items, s.sizes = slices.Delete(s.items, k, k+1), slices.Delete(s.sizes, k, k+1)
	}
	s.dirty = true
}

// set returns a copy of the ring as a SampleSet.
func (s *sampleRing) set() *wire.SampleSet {
	s.mu.Lock()
	defer s.mu.Unlock()
	return &wire.SampleSet{Features: slices.Clone(s.features), Samples: slices.Clone(s.items), Dropped: s.dropped, MaxBytes: s.maxBytes}
}

// encodeIfDirty returns the ring's JSON if it changed since the last call.
func (s *sampleRing) encodeIfDirty() ([]byte, bool) {
	s.mu.Lock()
	if !s.dirty {
		s.mu.Unlock()
		return nil, false
	}
	s.dirty = false
	s.mu.Unlock()
	data, err := json.Marshal(s.set())
	return data, err == nil
}

// restore loads a ring stored by encodeIfDirty; a record that does not
// decode or fit is ignored (the ring starts empty).
func (s *sampleRing) restore(data []byte) bool {
	var set wire.SampleSet
	if err := json.Unmarshal(data, &set); err != nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.features, s.dropped = set.Features, set.Dropped
	for _, smp := range set.Samples {
		if len(smp.X) != len(set.Features) {
			continue
		}
		n := sampleSize(&smp)
		if s.bytes+n > s.maxBytes {
			break
		}
		s.items, s.sizes = append(s.items, smp), append(s.sizes, n)
		s.bytes += n
	}
	return true
}
