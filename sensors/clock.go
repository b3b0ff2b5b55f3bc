package sensors

import (
	"context"
	"time"
)

// Clock is the time source sources and retries use, so that tests can run
// paced sources and backoff schedules in virtual time
// (see sensortest.FakeClock).
type Clock interface {
	Now() time.Time
	// Sleep blocks for d or until ctx is done, whichever comes first, and
	// returns ctx.Err() in the latter case.
	Sleep(ctx context.Context, d time.Duration) error
}

// SystemClock is the real clock.
var SystemClock Clock = systemClock{}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

func (systemClock) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// orSystem returns c, or SystemClock when c is nil.
func orSystem(c Clock) Clock {
	if c == nil {
		return SystemClock
	}
	return c
}
