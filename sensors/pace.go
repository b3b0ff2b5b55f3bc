package sensors

import (
	"context"
	"time"
)

// Pacer schedules samples at a fixed rate. It never bursts to catch up: when
// the caller falls more than one period behind, the schedule restarts from
// now, so a slow consumer gets fewer samples rather than stale ones.
type Pacer struct {
	clock  Clock
	period time.Duration
	next   time.Time
}

// NewPacer returns a Pacer for rate samples per second (rate > 0). A nil
// clock means SystemClock.
func NewPacer(rate float64, clock Clock) *Pacer {
	return &Pacer{clock: orSystem(clock), period: time.Duration(float64(time.Second) / rate)}
}

// Wait blocks until the next sample is due.
func (p *Pacer) Wait(ctx context.Context) error {
	now := p.clock.Now()
	if p.next.IsZero() || now.Sub(p.next) > p.period {
		p.next = now
	}
	if d := p.next.Sub(now); d > 0 {
		if err := p.clock.Sleep(ctx, d); err != nil {
			return err
		}
	} else if err := ctx.Err(); err != nil {
		return err
	}
	p.next = p.next.Add(p.period)
	return nil
}

// Paced returns src with every Read delayed until its sample is due at rate
// samples per second. A rate of 0 returns src unchanged (read as fast as the
// source answers).
func Paced(src Source, rate float64, clock Clock) Source {
	if rate <= 0 {
		return src
	}
	return &paced{Source: src, pacer: NewPacer(rate, clock)}
}

type paced struct {
	Source
	pacer *Pacer
}

func (p *paced) Read(ctx context.Context) (Reading, error) {
	if err := p.pacer.Wait(ctx); err != nil {
		return Reading{}, err
	}
	return p.Source.Read(ctx)
}
