package agent

import "time"

// telemetryErrorEvery is how often a failure that repeats every telemetry
// interval (a full disk) is logged again.
const telemetryErrorEvery = 10 * time.Minute

// repeatLimiter rate-limits the log of a failure that repeats: the first
// one is logged, then at most one every period (with the number of
// failures since the last line), and the end of the run of failures once.
type repeatLimiter struct {
	every  time.Duration
	last   time.Time // when a failure was last logged; zero: none in this run
	since  int       // failures since the last logged one
	inARow int       // failures in the current run
}

func newRepeatLimiter(every time.Duration) *repeatLimiter { return &repeatLimiter{every: every} }

// fail records a failure at now and reports whether to log it, with the
// number of failures not logged before it.
func (r *repeatLimiter) fail(now time.Time) (log bool, since int) {
	r.inARow++
	if !r.last.IsZero() && now.Sub(r.last) < r.every {
		r.since++
		return false, 0
	}
	since, r.since, r.last = r.since, 0, now
	return true, since
}

// ok records a success and returns how many failures the run that just
// ended had (0 if none).
func (r *repeatLimiter) ok() int {
	n := r.inARow
	r.inARow, r.since, r.last = 0, 0, time.Time{}
	return n
}
