package agent

import (
	"math"
	"sync"

	"github.com/trit-iot/trit/wire"
)

// deviceClock stamps the device's states and job events with its logical
// clock (wire.Clock): the process's boot number, reserved from the
// database's durable session counter at start, and a count of stamps
// kept in memory. Only stamp order matters: a receiver applies a state or
// an event's model only over older stamps, so a state published during a
// broker or database outage and handed over again later cannot undo a
// newer one.
type deviceClock struct {
	mu      sync.Mutex
	boot    uint64 // 0: no clock (the counter could not be advanced)
	n       uint32
	reserve func() (uint64, error) // store.NextSession
}

// newDeviceClock reserves a boot number. On failure the clock stays zero
// (messages go out unstamped, as older agents' do) and the error is
// returned for the log.
func newDeviceClock(reserve func() (uint64, error)) (*deviceClock, error) {
	c := &deviceClock{reserve: reserve}
	boot, err := reserve()
	if err != nil {
		return c, err
	}
	if boot <= wire.MaxClockBoot {
		c.boot = boot
	}
	return c, nil
}

// stamp returns the next clock value, or 0 without a clock.
func (c *deviceClock) stamp() wire.Clock {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.boot == 0 {
		return 0
	}
	if c.n == math.MaxUint32 { // four billion stamps: a new boot number
		boot, err := c.reserve()
		if err != nil || boot > wire.MaxClockBoot {
			return wire.ClockAt(c.boot, c.n) // the last value again: never a lower one
		}
		c.boot, c.n = boot, 0
	}
	c.n++
	return wire.ClockAt(c.boot, c.n)
}

// bootSession is the session number the process reserved, 0 if none:
// telemetry made before the first connection carries it, so no two
// processes make reports with the same (session, seq).
func (c *deviceClock) bootSession() uint64 {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.boot
}
