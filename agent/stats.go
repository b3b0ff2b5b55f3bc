package agent

import (
	"slices"
	"sync"
	"time"

	"github.com/trit-iot/trit/inference"
	"github.com/trit-iot/trit/wire"
)

// maxLatencySamples bounds the latencies kept per telemetry interval; past
// it, samples are kept by reservoir sampling, so percentiles stay unbiased
// and memory constant.
const maxLatencySamples = 2048

// maxCutIntervals bounds the intervals a model change cut short that wait
// for the next telemetry tick; past it the oldest is forgotten (eight model
// changes in one interval: an install, its rollback and more).
const maxCutIntervals = 8

// stats accumulates one telemetry interval. It is safe for concurrent use.
//
// A report names one model, so an interval holds the predictions of one
// model: the first prediction by another model than the interval's ends
// the interval there (an install or a rollback swapped them), and the
// figures so far wait in cut, with their model, for the next tick.
type stats struct {
	mu     sync.Mutex
	from   time.Time
	n      uint64
	errs   uint64
	counts map[string]uint64
	lat    []float64 // microseconds
	seen   uint64    // latencies offered this interval
	rng    uint64
	last   *wire.Prediction
	conf   confidenceStats // calibrated models' windows (confidence.go)
	model  *running        // the model whose predictions this interval holds; nil: none yet
	cut    []wire.Telemetry
}

func newStats(now time.Time) *stats {
	return &stats{from: now, counts: map[string]uint64{}, lat: make([]float64, 0, maxLatencySamples), rng: 0x9e3779b97f4a7c15}
}

// record counts a prediction of class by model r, made at at in d.
func (s *stats) record(r *running, class string, at time.Time, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.model != r && s.n > 0 {
		t := wire.Telemetry{}
		s.fill(at, &t)
		ref := s.model.ref
		t.Model = &ref
		if len(s.cut) == maxCutIntervals {
			s.cut = s.cut[1:]
		}
		s.cut = append(s.cut, t)
	}
	s.model = r
	s.n++
	s.counts[class]++
	us := float64(d.Nanoseconds()) / 1e3
	s.seen++
	if len(s.lat) < maxLatencySamples {
		s.lat = append(s.lat, us)
	} else {
		s.rng ^= s.rng << 13
		s.rng ^= s.rng >> 7
		s.rng ^= s.rng << 17
		if j := s.rng % s.seen; j < maxLatencySamples {
			s.lat[j] = us
		}
	}
	if s.last == nil {
		s.last = &wire.Prediction{}
	}
	s.last.Class, s.last.Time = class, at.UnixMilli()
	s.last.Confidence, s.last.Unknown = 0, false
}

// recordOutcome is record for a calibrated model's window: its outcome o
// under thresholds th also counts towards the confidence report.
func (s *stats) recordOutcome(r *running, class string, at time.Time, d time.Duration, o *inference.Outcome, th inference.Thresholds) {
	s.record(r, class, at, d)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.conf.add(o, th)
	s.last.Confidence, s.last.Unknown = float64(o.Confidence)/255, o.Unknown
}

func (s *stats) fail() {
	s.mu.Lock()
	s.errs++
	s.mu.Unlock()
}

// snapshot fills the interval's figures into t and starts a new interval,
// ending it at now(), read under the lock so that no prediction counted in
// t is later than t's end. It returns the intervals a model change cut
// short since the last snapshot, oldest first, each naming its model, and
// the model whose predictions t counts (nil if t counts none).
func (s *stats) snapshot(now func() time.Time, t *wire.Telemetry) (cut []wire.Telemetry, model *running) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cut, s.cut = s.cut, nil
	if s.n > 0 {
		model = s.model
	}
	s.fill(now(), t)
	s.model = nil
	return cut, model
}

// fill fills the interval's figures, up to now, into t and starts a new
// interval. Called with mu held.
func (s *stats) fill(now time.Time, t *wire.Telemetry) {
	t.From, t.To = s.from.UnixMilli(), now.UnixMilli()
	t.Predictions, t.Errors = s.n, s.errs
	if len(s.counts) > 0 {
		t.Counts = s.counts
	}
	if len(s.lat) > 0 {
		slices.Sort(s.lat)
		t.Latency = &wire.Latency{P50: pct(s.lat, 0.50), P90: pct(s.lat, 0.90), P99: pct(s.lat, 0.99), Max: s.lat[len(s.lat)-1]}
	}
	if s.last != nil {
		l := *s.last
		t.Last = &l
	}
	t.Confidence = s.conf.report()
	s.from, s.n, s.errs, s.seen = now, 0, 0, 0
	s.counts = map[string]uint64{}
	s.lat = s.lat[:0]
}

// pct is the nearest-rank percentile of sorted xs.
func pct(xs []float64, p float64) float64 {
	i := int(p*float64(len(xs)) + 0.5)
	return xs[min(max(i-1, 0), len(xs)-1)]
}
