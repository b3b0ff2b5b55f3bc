package wire

import (
	"math/rand/v2"
	"time"
)

// Backoff is the randomized exponential backoff of broker reconnects, for
// agents and the fleet alike. The nominal delay starts at Min and doubles
// with every failed attempt up to Max; the wait actually returned is drawn
// uniformly from the upper half of it, [d/2, d] ("equal jitter"). Without
// the randomness every gateway that lost a restarting broker would come
// back in the same instant, every time, and a broker that just restarted
// would see its whole fleet at once.
//
// The zero value is not usable: set Min and Max (0 < Min <= Max). A Backoff
// is not safe for concurrent use.
type Backoff struct {
	Min, Max time.Duration
	// Rand returns a number in [0, 1); nil means math/rand/v2's Float64.
	Rand func() float64

	next time.Duration // nominal delay of the next wait; 0 means Min
}

// Next returns how long to wait before the next attempt, and the nominal
// (un-randomized) delay it was drawn from, then doubles the nominal delay
// up to Max.
func (b *Backoff) Next() (wait, nominal time.Duration) {
	d := b.next
	if d <= 0 || d < b.Min {
		d = b.Min
	}
	d = min(d, b.Max)
	if d > b.Max/2 {
		b.next = b.Max
	} else {
		b.next = 2 * d
	}
	r := b.Rand
	if r == nil {
		r = rand.Float64
	}
	half := d / 2
	return half + time.Duration(r()*float64(d-half)), d
}

// Reset starts the next wait at Min again (after a connection that lasted).
func (b *Backoff) Reset() { b.next = 0 }
