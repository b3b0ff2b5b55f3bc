package server

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/trit-iot/trit/wire"
)

// Per-device limits: token buckets of messages and of bytes, one pair per
// device (golang.org/x/time/rate). The embedded broker applies them to
// what each device publishes (brokerlimit.go).
//
// Invariants:
//   - A device without an entry has full buckets. An entry whose buckets
//     have both refilled carries no information, so sweep deletes it:
//     memory is bounded by the devices that published within the last
//     Burst/Rate (or ByteBurst/ByteRate) seconds, whatever devices come
//     and go.
//   - ByteBurst is at least wire.MaxPacket, so any packet the broker
//     accepts can pass a full byte bucket: a limit slows a device, it never
//     silences one.

// Limit is the budget of one device.
type Limit struct {
	Rate      float64 // messages per second
	Burst     int     // messages a device may send at once after a quiet spell
	ByteRate  float64 // payload bytes per second
	ByteBurst int     // payload bytes at once; at least wire.MaxPacket
}

// defaultDeviceLimit is generous for an agent (a telemetry report every
// 10 s, states and job events now and then: well under one message a
// second) and lets one drain its outbox after an outage (at most 4 MiB by
// default) in about 30 s.
var defaultDeviceLimit = Limit{Rate: 50, Burst: 500, ByteRate: 128 << 10, ByteBurst: 512 << 10}

// ErrLimit marks a Limit that cannot be applied.
var ErrLimit = errors.New("fleet: per-device limit")

// check validates l.
func (l Limit) check() error {
	switch {
	case !(l.Rate > 0) || l.Rate > 1e6:
		return fmt.Errorf("%w: rate %v: want messages per second in (0, 1e6]", ErrLimit, l.Rate)
	case l.Burst < 1 || l.Burst > 1e6:
		return fmt.Errorf("%w: burst %d: want 1 … 1,000,000 messages", ErrLimit, l.Burst)
	case !(l.ByteRate > 0) || l.ByteRate > 1e10:
		return fmt.Errorf("%w: byte rate %v: want bytes per second in (0, 1e10]", ErrLimit, l.ByteRate)
	case l.ByteBurst < wire.MaxPacket || l.ByteBurst > 1<<30:
		return fmt.Errorf("%w: byte burst %d: want %d (the largest packet) … %d bytes", ErrLimit, l.ByteBurst, wire.MaxPacket, 1<<30)
	}
	return nil
}

// buckets is one device's pair of token buckets.
type buckets struct {
	msgs, bytes *rate.Limiter
}

// deviceLimits holds the buckets of every device that published lately.
type deviceLimits struct {
	lim Limit

	mu        sync.Mutex
	m         map[string]*buckets
	lastSweep time.Time
	swept     int // entries left by the last sweep
}

func newDeviceLimits(l Limit) *deviceLimits {
	return &deviceLimits{lim: l, m: map[string]*buckets{}}
}

// sweepEvery is how often idle buckets are deleted (also when the map has
// doubled since the last sweep).
const sweepEvery = time.Minute

// get returns device's buckets, creating full ones. Called with mu held.
func (d *deviceLimits) get(device string, now time.Time) *buckets {
	if now.Sub(d.lastSweep) >= sweepEvery || len(d.m) > 2*d.swept+1024 {
		d.sweep(now)
	}
	b := d.m[device]
	if b == nil {
		b = &buckets{msgs: rate.NewLimiter(rate.Limit(d.lim.Rate), d.lim.Burst), bytes: rate.NewLimiter(rate.Limit(d.lim.ByteRate), d.lim.ByteBurst)}
		d.m[device] = b
	}
	return b
}

// sweep deletes the entries whose buckets are full again.
func (d *deviceLimits) sweep(now time.Time) {
	for id, b := range d.m {
		if b.msgs.TokensAt(now) >= float64(d.lim.Burst) && b.bytes.TokensAt(now) >= float64(d.lim.ByteBurst) {
			delete(d.m, id)
		}
	}
	d.lastSweep, d.swept = now, len(d.m)
}

// verdict is what the limits say about one message.
type verdict int

const (
	pass      verdict = iota
	overRate          // not enough message tokens
	overBytes         // not enough byte tokens
)

// allow takes a message of size bytes from device's buckets if both hold
// enough, and says which one did not otherwise (taking nothing).
func (d *deviceLimits) allow(device string, size int, now time.Time) verdict {
	d.mu.Lock()
	defer d.mu.Unlock()
	b := d.get(device, now)
	if b.msgs.TokensAt(now) < 1 {
		return overRate
	}
	if b.bytes.TokensAt(now) < float64(size) {
		return overBytes
	}
	b.msgs.AllowN(now, 1)
	b.bytes.AllowN(now, size)
	return pass
}

// wait takes a message of size bytes from device's buckets whatever they
// hold and returns how long the caller must wait before the message is
// within the budget (0 if it is now). Tokens go negative meanwhile, so
// later messages wait behind it: the device is paced at its rate.
func (d *deviceLimits) wait(device string, size int, now time.Time) time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	b := d.get(device, now)
	size = min(size, d.lim.ByteBurst) // never more than a full bucket (check guarantees it for a valid packet)
	return max(b.msgs.ReserveN(now, 1).DelayFrom(now), b.bytes.ReserveN(now, size).DelayFrom(now))
}

// size returns the entries kept (for tests).
func (d *deviceLimits) size() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.m)
}
