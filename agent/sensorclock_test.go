package agent

import (
	"context"
	"sync"
	"testing"
	"time"
)

// sensorClock is the sensors' clock (Options.SensorEnv) in tests of how
// many readings a sensor delivers: virtual time that only the sensor's
// reads move (Sleep, as sensortest.FakeClock's does), and only up to a
// limit the test raises. Pacing and the rate watch both run on it, so the
// readings a sensor delivers per second of its time, and whether it is
// slow, follow from the test's script alone, never from how busy the
// machine is; and a reader that reaches the limit waits there, so the
// test knows how much sensor time it let pass and nothing spins while it
// waits for the agent.
//
// One goroutine sleeps on it (the agent's single sensor, not a Merge):
// Sleep(d) ends d (plus late) after the time it was called.
type sensorClock struct {
	late time.Duration // added to every sleep, as a coarse timer's or a loaded machine's wake-up

	mu      sync.Mutex
	now     time.Time
	limit   time.Time
	waiting bool          // a Sleep waits for the limit to rise
	raised  chan struct{} // closed when the limit rises
}

func newSensorClock(start time.Time) *sensorClock {
	return &sensorClock{now: start, limit: start, raised: make(chan struct{})}
}

// Now returns the virtual time.
func (c *sensorClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Sleep moves the virtual time d (plus late) on, once the limit allows it,
// or returns ctx.Err() if ctx is done first.
func (c *sensorClock) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	c.mu.Lock()
	end := c.now.Add(d + c.late)
	for end.After(c.limit) {
		c.waiting = true
		raised := c.raised
		c.mu.Unlock()
		select {
		case <-ctx.Done():
			c.mu.Lock()
			c.waiting = false
			c.mu.Unlock()
			return ctx.Err()
		case <-raised:
		}
		c.mu.Lock()
	}
	c.waiting = false
	c.now = end
	c.mu.Unlock()
	return ctx.Err()
}

// allow raises the limit by d.
func (c *sensorClock) allow(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.raise(c.limit.Add(d))
}

// allowAhead raises the limit to d past the virtual time, if below.
func (c *sensorClock) allowAhead(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if l := c.now.Add(d); l.After(c.limit) {
		c.raise(l)
	}
}

// raise sets the limit to l and wakes the sleeper; c.mu is held.
func (c *sensorClock) raise(l time.Time) {
	c.limit = l
	c.waiting = false // the sleeper says again if it still waits
	close(c.raised)
	c.raised = make(chan struct{})
}

// run lets the sensor read for d of its time and returns once its reader
// waits at the new limit, with the virtual time then.
func (c *sensorClock) run(t *testing.T, d time.Duration) time.Time {
	t.Helper()
	c.allow(d)
	return c.wait(t)
}

// wait returns the virtual time once the reader waits at the limit. The
// deadline only bounds a broken run: how long the reads take on the wall
// clock changes nothing the tests assert.
func (c *sensorClock) wait(t *testing.T) time.Time {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(time.Millisecond) {
		c.mu.Lock()
		waiting, now, limit := c.waiting, c.now, c.limit
		c.mu.Unlock()
		if waiting {
			return now
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sensor did not read up to %v of its time (at %v)", limit, now)
		}
	}
}

// runFree lets virtual time go on at up to ten times the wall clock's pace
// until stop is called (an install's health check counts cycles by the
// wall clock), never more than 10 ms ahead of the reader, so a starved
// reader has no backlog to work off; stop returns once the reader waits
// at the limit, with the virtual time then.
func (c *sensorClock) runFree(t *testing.T) (stop func() time.Time) {
	done, stopped := make(chan struct{}), make(chan struct{})
	var once sync.Once
	end := func() {
		once.Do(func() {
			close(done)
			<-stopped
		})
	}
	t.Cleanup(end) // a test that failed before stop
	go func() {
		defer close(stopped)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				c.allowAhead(10 * time.Millisecond)
			}
		}
	}()
	return func() time.Time {
		t.Helper()
		end()
		return c.wait(t)
	}
}
