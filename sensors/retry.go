package sensors

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"
)

// RetryPolicy says how hard a Retrying source tries. Zero fields mean the
// defaults given; a nil *RetryPolicy means all defaults.
type RetryPolicy struct {
	// Attempts is how many times one Read tries the device before the sensor
	// is declared failed (default 3).
	Attempts int
	// RetryDelay is the pause before the second attempt; it doubles for each
	// further attempt (default 10ms).
	RetryDelay time.Duration
	// ReopenDelay is the pause before reopening a failed sensor; it doubles
	// after every failed reopen (default 1s) ...
	ReopenDelay time.Duration
	// ... up to MaxDelay (default 1 min).
	MaxDelay time.Duration
	// Clock paces the pauses and times the rate a source delivers
	// (default: the Env's clock for OpenRetrying, OpenAll and OpenInput,
	// so a source is paced and measured by one clock; SystemClock
	// otherwise).
	Clock Clock
}

func (p *RetryPolicy) orDefaults() RetryPolicy {
	var out RetryPolicy
	if p != nil {
		out = *p
	}
	if out.Attempts <= 0 {
		out.Attempts = 3
	}
	if out.RetryDelay <= 0 {
		out.RetryDelay = 10 * time.Millisecond
	}
	if out.ReopenDelay <= 0 {
		out.ReopenDelay = time.Second
	}
	if out.MaxDelay <= 0 {
		out.MaxDelay = time.Minute
	}
	out.MaxDelay = max(out.MaxDelay, out.ReopenDelay)
	out.Clock = orSystem(out.Clock)
	return out
}

// State is a sensor's health state.
type State string

// Health states.
const (
	StateOK     State = "ok"     // the last open or read succeeded
	StateFailed State = "failed" // the last open or read failed after retries
	// StateSlow: reads succeed but fewer per second than configured (the
	// device or the machine cannot keep up); LastError says how many.
	StateSlow State = "slow"
)

// Health is a snapshot of a Retrying source's condition, as the agent reports
// it in its state.
type Health struct {
	Sensor    string    `json:"sensor"`
	State     State     `json:"state"`
	Since     time.Time `json:"since"`                // when State last changed
	LastError string    `json:"last_error,omitempty"` // most recent error, even if recovered since
	Failures  int       `json:"failures,omitempty"`   // consecutive failures; 0 when ok
	NextRetry time.Time `json:"next_retry,omitzero"`  // when a failed sensor is reopened
	// Rate is the readings per second delivered over the last measurement
	// (0: none finished yet, or no configured rate to measure against);
	// ConfiguredRate is what the configuration asks for.
	Rate           float64 `json:"rate,omitempty"`
	ConfiguredRate float64 `json:"configured_rate,omitempty"`
}

// Retrying is a Source that survives its device: it retries failed reads
// with exponential backoff, reopens a failed device (re-initialising it),
// and reports its Health. With a configured rate (OpenRetrying) it also
// measures the readings it delivers per second and reports StateSlow while
// they fall short (ratewatch.go). Read keeps returning errors while the device is
// down, but each failed Read first waits for the backoff, so a read loop
// never spins.
//
// Health may be called from any goroutine; Close may be called concurrently
// with Read and interrupts its waits.
type Retrying struct {
	name     string
	channels []string
	open     func() (Source, error)
	p        RetryPolicy

	ctx    context.Context // canceled by Close
	cancel context.CancelFunc

	rmu      sync.Mutex // serialises use of src
	src      Source
	nextOpen time.Time
	closed   bool

	mu     sync.Mutex // guards health and rate
	health Health
	rate   rateWatch
}

// NewRetrying wraps open, which opens the device, in a Retrying source named
// name with the given channels. It tries open once right away, so Health is
// meaningful on return, and never fails: a device that is down is retried.
func NewRetrying(name string, channels []string, open func() (Source, error), p *RetryPolicy) *Retrying {
	return newRetrying(name, channels, open, p, 0)
}

// newRetrying is NewRetrying for a source configured at rate readings per
// second (0: none), which it then watches.
func newRetrying(name string, channels []string, open func() (Source, error), p *RetryPolicy, rate float64) *Retrying {
	ctx, cancel := context.WithCancel(context.Background())
	r := &Retrying{name: name, channels: channels, open: open, p: p.orDefaults(), ctx: ctx, cancel: cancel, rate: newRateWatch(rate)}
	r.health = Health{Sensor: name, State: StateOK, Since: r.p.Clock.Now(), ConfiguredRate: rate}
	r.rmu.Lock()
	defer r.rmu.Unlock()
	r.tryOpen()
	return r
}

// OpenRetrying validates cfg and returns a Retrying source for it, watching
// the rate it delivers against cfg's rate. The error is non-nil only for an
// invalid config (a *ConfigError); a device that does not answer shows up
// in Health and in Read's errors instead. A policy without a Clock uses
// env's, the clock that paces the source.
func OpenRetrying(cfg Config, env *Env, p *RetryPolicy) (*Retrying, error) {
	c, k, err := cfg.prepare()
	if err != nil {
		return nil, err
	}
	channels, err := k.Channels(c)
	if err != nil {
		return nil, withSensor(err, c.Name, c.Kind)
	}
	e := env.orDefaults()
	if p == nil || p.Clock == nil {
		// The rate is measured by the clock that paces the source: a
		// source paced in a test's virtual time and measured by the
		// system's would be as fast or as slow as the machine.
		q := RetryPolicy{Clock: e.Clock}
		if p != nil {
			q, q.Clock = *p, e.Clock
		}
		p = &q
	}
	return newRetrying(c.Name, channels, func() (Source, error) { return k.Open(c, e) }, p, c.Rate), nil
}

// Name returns the sensor's name.
func (r *Retrying) Name() string { return r.name }

// Channels implements Source. It is known even while the device is down.
func (r *Retrying) Channels() []string { return r.channels }

// Health returns the current health.
func (r *Retrying) Health() Health {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.health
}

// Read implements Source.
func (r *Retrying) Read(ctx context.Context) (Reading, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(r.ctx, cancel)()

	r.rmu.Lock()
	defer r.rmu.Unlock()
	if r.closed {
		return Reading{}, ErrClosed
	}
	if r.src == nil {
		if err := r.p.Clock.Sleep(ctx, r.nextOpen.Sub(r.p.Clock.Now())); err != nil {
			return Reading{}, r.ctxErr(err)
		}
		if err := r.tryOpen(); err != nil {
			return Reading{}, err
		}
	}
	var err error
	for i := range r.p.Attempts {
		if i > 0 {
			if err := r.p.Clock.Sleep(ctx, r.p.RetryDelay<<(i-1)); err != nil {
				return Reading{}, r.ctxErr(err)
			}
		}
		var rd Reading
		rd, err = r.src.Read(ctx)
		switch {
		case err == nil:
			r.delivered()
			return rd, nil
		case errors.Is(err, io.EOF):
			return Reading{}, err // end of a finite source, not a fault
		case ctx.Err() != nil:
			return Reading{}, r.ctxErr(ctx.Err())
		}
		r.note(err)
	}
	r.src.Close()
	r.src = nil
	r.failed(err)
	return Reading{}, err
}

// Close implements Source.
func (r *Retrying) Close() error {
	r.cancel()
	r.rmu.Lock()
	defer r.rmu.Unlock()
	r.closed = true
	if r.src == nil {
		return nil
	}
	err := r.src.Close()
	r.src = nil
	return err
}

// ctxErr maps the cancellation caused by Close to ErrClosed.
func (r *Retrying) ctxErr(err error) error {
	if r.ctx.Err() != nil {
		return ErrClosed
	}
	return err
}

// tryOpen opens the device; r.rmu is held.
func (r *Retrying) tryOpen() error {
	src, err := r.open()
	if err != nil {
		r.failed(err)
		return err
	}
	r.src = src
	r.succeeded()
	return nil
}

// succeeded records a successful open or read.
func (r *Retrying) succeeded() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.succeededLocked(r.p.Clock.Now())
}

func (r *Retrying) succeededLocked(now time.Time) {
	if r.health.State == StateFailed {
		r.health.State = StateOK
		r.health.Since = now
		r.rate.restart()
	}
	r.health.Failures = 0
	r.health.NextRetry = time.Time{}
}

// delivered records a successful read and counts it against the rate.
func (r *Retrying) delivered() {
	now := r.p.Clock.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.succeededLocked(now)
	ended := r.rate.ended
	changed := r.rate.tick(now)
	if r.rate.ended == ended {
		return // within a window: nothing new
	}
	r.health.Rate = r.rate.got
	if changed {
		r.health.Since = now
		r.health.State = StateOK
	}
	if r.rate.slow {
		// Kept current while slow: the rates, not a read error retried
		// meanwhile, say what is wrong.
		r.health.State = StateSlow
		r.health.LastError = r.rate.describe()
	}
}

func (r *Retrying) note(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.health.LastError = err.Error()
}

// failed records a failure and schedules the next reopen; r.rmu is held.
func (r *Retrying) failed(err error) {
	now := r.p.Clock.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.health.State != StateFailed {
		r.health.State = StateFailed
		r.health.Since = now
	}
	r.rate.restart()
	r.health.LastError = err.Error()
	r.health.Failures++
	d := r.p.ReopenDelay
	for i := 1; i < r.health.Failures && d < r.p.MaxDelay; i++ {
		d *= 2
	}
	r.nextOpen = now.Add(min(d, r.p.MaxDelay))
	r.health.NextRetry = r.nextOpen
}
