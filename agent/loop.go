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
}

// loop is the inference loop: read sensors, extract features, predict,
// record statistics. The model is swapped atomically by the installer.
type loop struct {
	in    *atomic.Pointer[input] // replaced by a configuration reload
	stats *stats
	log   *slog.Logger
	cur   atomic.Pointer[running]
	// progress is the Unix nanosecond time of the last finished cycle,
	// successful or not; the systemd watchdog is fed only while it moves.
	progress atomic.Int64
	cycles   atomic.Uint64
}

func (l *loop) run(ctx context.Context) error {
	lastErr := ""
	nanLogged := false
	for ctx.Err() == nil {
		in := l.in.Load()
		values, at, err := in.read(ctx)
		l.progress.Store(time.Now().UnixNano())
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
		if r.bind.in != in {
			// A reload replaced the sensors (it checked that the model
			// binds to them).
			b, err := in.bind(r.names, r.d)
			if err != nil {
				l.stats.fail()
				r.failed.Add(1)
				continue
			}
			r.bind = b
		}
		vec, ready, err := r.bind.push(values)
		if err != nil {
			l.stats.fail()
			r.failed.Add(1)
			continue
		}
		if !ready {
			continue
		}
		if i := firstNonFinite(vec); i >= 0 {
			// A missing input (a sensor down behind a merge, a feature
			// over such a channel) must not be classified as if it were
			// data: the cycle counts as failed, and a new model's health
			// check fails on it.
			l.stats.fail()
			r.failed.Add(1)
			if !nanLogged {
				l.log.Warn("feature vector has a missing value; not classified (logged once per model until a good cycle)",
					"feature", i, "model", r.ref.ID, "release", r.ref.Release)
				nanLogged = true
			}
			continue
		}
		nanLogged = false
		t0 := time.Now()
		class, err := r.model.Predict(nil, vec)
		d := time.Since(t0)
		if err != nil {
			l.stats.fail()
			r.failed.Add(1)
			continue
		}
		l.stats.record(r.model.Classes()[class], at, d)
		r.ok.Add(1)
		l.cycles.Add(1)
	}
	return nil
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
