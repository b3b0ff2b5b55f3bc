package agent

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"math"
	"sync/atomic"
	"time"

	"github.com/trit-iot/trit/inference"
	"github.com/trit-iot/trit/wire"
)

// running is a model as the inference loop uses it.
type running struct {
	model *inference.Model
	// bind is used by the loop only; it rebinds (names, d) when the input
	// was replaced by a configuration reload.
	bind  *binding
	names []string
	d     int
	ref   wire.ModelRef
	// Cycles completed and failed with this model, for the health check.
	ok, failed atomic.Uint64
	// expires is the bundle's expiry (zero: never); expiredLogged is set
	// once the agent said the running model expired.
	expires       time.Time
	expiredLogged atomic.Bool
	// sc measures predictions (margin, drift); the loop goroutine only.
	sc scoring
	// th are the unknown thresholds (thresholdsFor); calibrated says the
	// model reports confidence and unknown windows.
	th         inference.Thresholds
	calibrated bool
}

// loop is the inference loop: read sensors, extract features, predict,
// record statistics. The model is swapped atomically by the installer.
type loop struct {
	in    *atomic.Pointer[input] // replaced by a configuration reload
	stats *stats
	log   *slog.Logger
	cur   atomic.Pointer[running]
	// shadow is the candidate scored beside cur, if any; it never changes
	// an output.
	shadow atomic.Pointer[shadowRun]
	// progress is the Unix nanosecond time of the last finished cycle,
	// successful or not; the systemd watchdog is fed only while it moves.
	progress atomic.Int64
	cycles   atomic.Uint64
	// samples keeps interesting windows for retraining; nil: none.
	samples *sampleRing
	// history keeps every recent window for dry runs; nil: none.
	history *sampleRing
	// labels keeps the windows the label source labelled until the fleet
	// takes them; nil: no label source.
	labels *labelRing
	// nanLogged: a missing feature value was logged for the current model
	// (the loop goroutine only).
	nanLogged bool
}

func (l *loop) run(ctx context.Context) error {
	lastErr := ""
	for ctx.Err() == nil {
		in := l.in.Load()
		values, err := in.read(ctx)
		// A window is stamped with the agent's clock when its last reading
		// arrived, not with the source's time: a recording's, or one that
		// fell behind the clock, would make "last prediction" lag the
		// telemetry that reports it.
		at := time.Now()
		l.progress.Store(at.UnixNano())
		r := l.cur.Load()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if l.in.Load() != in {
				continue // closed by a reload: read the new sensors
			}
			if errors.Is(err, io.EOF) {
				l.log.Warn("sensor source ended; inference stopped (set loop = true on a replay to repeat it)", "err", err)
				<-ctx.Done()
				return nil
			}
			l.stats.fail()
			if r != nil {
				r.failed.Add(1)
			}
			if msg := err.Error(); msg != lastErr {
				l.log.Warn("sensor read failed", "err", err)
				lastErr = msg
			}
			continue
		}
		lastErr = ""
		if r == nil {
			continue // no model: keep sensors read so their health is known
		}
		l.window(in, r, values, at)
	}
	return nil
}

// window feeds one reading of input in to the active model r (and the
// shadow candidate, if any) and classifies the window it completes.
func (l *loop) window(in *input, r *running, values []float64, at time.Time) {
	if r.bind.in != in {
		// A reload replaced the sensors (it checked that the model binds
		// to them).
		b, err := in.bind(r.names, r.d)
		if err != nil {
			l.stats.fail()
			r.failed.Add(1)
			return
		}
		r.bind = b
	}
	// The candidate's binding sees the same readings as the active one's,
	// from a window boundary of the active model on, so with a feature
	// pipeline both complete their windows on the same readings.
	sh := l.shadow.Load()
	if sh != nil && sh.r.bind.in != in {
		if b, err := in.bind(sh.r.names, sh.r.d); err == nil {
			sh.r.bind, sh.alignedTo = b, nil // aligned again from the next window boundary
		} else {
			sh = nil // the candidate does not bind to the new sensors: not scored
		}
	}
	var svec []float32
	if sh != nil && sh.alignedTo == r {
		v, ready, err := sh.r.bind.push(values)
		if err == nil && ready && firstNonFinite(v) < 0 {
			svec = v
		}
	}
	vec, ready, err := r.bind.push(values)
	if sh != nil && sh.alignedTo != r && ready {
		sh.r.bind.reset()
		sh.alignedTo = r // from the next reading on
	}
	if err != nil {
		l.stats.fail()
		r.failed.Add(1)
		return
	}
	if !ready {
		return
	}
	if i := firstNonFinite(vec); i >= 0 {
		// A missing input (a sensor down behind a merge, a feature over
		// such a channel) must not be classified as if it were data: the
		// cycle counts as failed, and a new model's health check fails
		// on it.
		l.stats.fail()
		r.failed.Add(1)
		if !l.nanLogged {
			l.log.Warn("feature vector has a missing value; not classified (logged once per model until a good cycle)",
				"feature", i, "model", r.ref.ID, "release", r.ref.Release)
			l.nanLogged = true
		}
		return
	}
	l.nanLogged = false
	t0 := time.Now()
	o, err := r.model.PredictOutcome(r.sc.scores, r.sc.z, vec, r.th)
	d := time.Since(t0)
	if err != nil {
		l.stats.fail()
		r.failed.Add(1)
		return
	}
	class := o.Class
	if r.calibrated {
		l.stats.recordOutcome(r, r.model.Classes()[class], at, d, &o, r.th)
	} else {
		l.stats.record(r, r.model.Classes()[class], at, d)
	}
	r.ok.Add(1)
	l.cycles.Add(1)
	if r.sc.drift != nil {
		r.sc.drift.add(r.sc.z)
	}
	cand := ""
	if svec != nil {
		cand = l.scoreShadow(sh, r, class, o.Unknown, o.Confidence, svec)
	}
	if l.history != nil {
		l.history.offer(r, at, vec, r.model.Classes()[class], 1, "", false)
	}
	if l.samples != nil {
		l.samples.offer(r, at, vec, r.model.Classes()[class], r.sc.margin(len(r.model.Classes())), cand, o.Unknown)
	}
	if l.labels != nil {
		if label := l.labels.label(in, values); label != "" {
			l.labels.offer(r, at, vec, r.model.Classes()[class], r.sc.margin(len(r.model.Classes())), label)
		}
	}
}

// scoreShadow classifies the candidate's window, counts it against the
// active model's prediction ac (unknown: au; confidence aconf, ×255) and
// returns the candidate's class label.
func (l *loop) scoreShadow(sh *shadowRun, r *running, ac int, au bool, aconf uint8, svec []float32) string {
	c := sh.r
	co, err := c.model.PredictOutcome(c.sc.scores, nil, svec, c.th)
	if err != nil {
		return ""
	}
	cc := co.Class
	sh.record(r, ac, r.sc.margin(len(r.model.Classes())), au, aconf, cc, c.sc.margin(len(c.model.Classes())), co.Unknown, co.Confidence)
	return c.model.Classes()[cc]
}

// swap installs r (nil: no model) and returns the previous one.
func (l *loop) swap(r *running) *running { return l.cur.Swap(r) }

// firstNonFinite returns the index of the first NaN or infinite value in
// v, or -1.
func firstNonFinite(v []float32) int {
	for i, x := range v {
		if x != x || x > math.MaxFloat32 || x < -math.MaxFloat32 {
			return i
		}
	}
	return -1
}
