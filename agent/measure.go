package agent

import (
	"math"
	"math/bits"
	"strconv"
	"sync"

	"github.com/trit-iot/trit/inference"
	"github.com/trit-iot/trit/wire"
)

// scoring holds what the inference loop needs to measure one model's
// predictions besides the class: score and embedding buffers (used only by
// the loop goroutine), the margin's normaliser and the drift meter.
type scoring struct {
	scores []float32
	z      []uint64
	// norm is 2·max_c α_c·√nnz_c: twice the standard deviation of a
	// class score over random embedding bits, so margins compare across
	// models of any size and scale.
	norm  float32
	drift *driftMeter // nil: the bundle has no fingerprint
}

func newScoring(m *inference.Model, driftWindows int) scoring {
	spec := m.Spec()
	var norm float32
	for c := range spec.NonZero {
		nnz := 0
		for _, w := range spec.NonZero[c] {
			nnz += bits.OnesCount64(w)
		}
		norm = max(norm, spec.Alpha[c]*float32(math.Sqrt(float64(nnz))))
	}
	s := scoring{scores: make([]float32, max(len(m.Classes()), 2)), z: make([]uint64, (len(spec.Kept)+63)/64), norm: 2 * norm}
	if fp := spec.Fingerprint; fp != nil && len(fp.Columns) > 0 {
		s.drift = newDriftMeter(spec, driftWindows)
	}
	return s
}

// margin is the prediction's normalised margin: (best − second best
// class score) / norm, capped at 1; for two classes |2s|/norm. 1 means
// the gap is at least one standard deviation of a random input's score.
func (s *scoring) margin(classes int) float64 {
	if s.norm <= 0 {
		return 0
	}
	best, second := float32(math.Inf(-1)), float32(math.Inf(-1))
	for _, v := range s.scores[:max(classes, 2)] {
		switch {
		case v > best:
			best, second = v, best
		case v > second:
			second = v
		}
	}
	return min(float64((best-second)/s.norm), 1)
}

// driftMeter keeps running firing rates of the fingerprinted bits of the
// windows a model scored, with bounded memory: counts are halved whenever
// 2·half windows were added, so the rates are over the last ~half…2·half
// windows, recent ones weighing most.
type driftMeter struct {
	mu     sync.Mutex
	fp     *inference.Fingerprint
	names  []string // per fingerprint column: the feature a threshold bit tests, or ""
	counts []float64
	n      float64
	half   float64
	// report scratch
	ucounts []uint32
	per     []float64
}

func newDriftMeter(spec *inference.ModelSpec, half int) *driftMeter {
	fp := spec.Fingerprint
	d := &driftMeter{fp: fp, counts: make([]float64, len(fp.Columns)), half: float64(half),
		ucounts: make([]uint32, len(fp.Columns)), per: make([]float64, len(fp.Columns)), names: make([]string, len(fp.Columns))}
	// Embedding column e < NT is a threshold bit of feature f where the
	// thresholds of features before f end below e.
	for i, c := range fp.Columns {
		e := int(spec.Kept[c])
		for f, th := range spec.Thresholds {
			if e < len(th) {
				if f < len(spec.Features) {
					d.names[i] = spec.Features[f]
				} else {
					d.names[i] = "feature " + strconv.Itoa(f+1)
				}
				break
			}
			e -= len(th)
		}
	}
	return d
}

// add counts one window's kept embedding bits z.
func (d *driftMeter) add(z []uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for i, c := range d.fp.Columns {
		d.counts[i] += float64(z[c>>6] >> (c & 63) & 1)
	}
	d.n++
	if d.n >= 2*d.half {
		for i := range d.counts {
			d.counts[i] /= 2
		}
		d.n /= 2
	}
}

// report returns the drift score and the most drifted bits (nil before
// any window).
func (d *driftMeter) report() *wire.DriftReport {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.n < 1 {
		return nil
	}
	n := math.Round(d.n)
	for i, c := range d.counts {
		d.ucounts[i] = uint32(min(math.Round(c), n))
	}
	score := d.fp.Drift(d.per, d.ucounts, int(n))
	r := &wire.DriftReport{Score: min(max(score, 0), 1), Windows: uint64(n)}
	for _, i := range inference.MostDrifted(d.per, wire.MaxDriftBits) {
		if d.per[i] <= 0 {
			break
		}
		r.Top = append(r.Top, wire.DriftBit{Column: d.fp.Columns[i], Feature: d.names[i], Train: float64(d.fp.Rates[i]) / 255,
			Now: float64(d.ucounts[i]) / n, JS: min(d.per[i], 1)})
	}
	return r
}

// shadowRun is a candidate model scored beside the active one. Its
// counters cover every window since the shadow started (or since the
// active model changed under it).
type shadowRun struct {
	r       *running
	rollout string
	seq     uint64
	bundle  string
	lowMin  float64 // models.low_margin
	// alignedTo is the active model whose windows the candidate's binding
	// follows (the loop goroutine only): see loop.window.
	alignedTo *running

	mu                sync.Mutex
	active            *running // the active model the counts compare with
	windows, agree    uint64
	actLow, candLow   uint64
	actUnk, candUnk   uint64
	actOnly, candOnly uint64 // windows only one of the two reported unknown
	actConf           uint64 // confidences ×255 of the windows each model answered
	candConf          uint64
	actCal            bool
	actCls, candCls   []string
	conf              [][]uint64 // nil when a model has more than wire.MaxShadowClasses classes
}

// record counts one window both models classified: classes ac and cc,
// normalised margins am and cm, whether each reported it unknown, and
// each one's confidence (×255; 0 for an uncalibrated model).
func (s *shadowRun) record(act *running, ac int, am float64, au bool, aconf uint8, cc int, cm float64, cu bool, cconf uint8) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.active != act {
		// A new active model: what was counted compared another one.
		s.active, s.windows, s.agree, s.actLow, s.candLow = act, 0, 0, 0, 0
		s.actUnk, s.candUnk, s.actCal = 0, 0, act.calibrated
		s.actOnly, s.candOnly = 0, 0
		s.actConf, s.candConf = 0, 0
		s.actCls, s.candCls, s.conf = act.model.Classes(), s.r.model.Classes(), nil
		if len(s.actCls) <= wire.MaxShadowClasses && len(s.candCls) <= wire.MaxShadowClasses {
			s.conf = make([][]uint64, len(s.actCls))
			for i := range s.conf {
				s.conf[i] = make([]uint64, len(s.candCls))
			}
		}
	}
	s.windows++
	if s.actCls[ac] == s.candCls[cc] {
		s.agree++
	}
	if am < s.lowMin {
		s.actLow++
	}
	if cm < s.lowMin {
		s.candLow++
	}
	if au {
		s.actUnk++
	} else {
		s.actConf += uint64(aconf)
	}
	if cu {
		s.candUnk++
	} else {
		s.candConf += uint64(cconf)
	}
	switch {
	case au && !cu:
		s.actOnly++
	case cu && !au:
		s.candOnly++
	}
	if s.conf != nil {
		s.conf[ac][cc]++
	}
}

// report returns the shadow report for telemetry.
func (s *shadowRun) report() *wire.ShadowReport {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := &wire.ShadowReport{Rollout: s.rollout, Seq: s.seq, Bundle: s.bundle, Windows: s.windows, Agree: s.agree,
		ActiveLowMargin: s.actLow, CandidateLowMargin: s.candLow, LowMargin: s.lowMin,
		ActiveUnknown: s.actUnk, CandidateUnknown: s.candUnk, ActiveCalibrated: s.actCal, CandidateCalibrated: s.r.calibrated,
		ActiveConfidence: s.actConf, CandidateConfidence: s.candConf, ConfidenceReported: true,
		ActiveOnlyUnknown: s.actOnly, CandidateOnlyUnknown: s.candOnly, UnknownPaired: true}
	if s.conf != nil {
		r.ActiveClasses, r.CandidateClasses = s.actCls, s.candCls
		r.Confusion = make([][]uint64, len(s.conf))
		for i, row := range s.conf {
			r.Confusion[i] = append([]uint64(nil), row...)
		}
	}
	return r
}
