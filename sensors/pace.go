package sensors

import (
	"context"
	"time"
)

// Pacer schedules samples at a fixed rate, timed from the clock: sample n
// of a schedule is due at start + n/rate, and Wait sleeps only while the
// next one is not due yet. A sleep that ends late (a coarse timer, a
// loaded machine) is made up by the next Waits returning at once, so the
// rate is kept on average however late single wake-ups are; one sleep per
// sample would lose the lateness of every sleep (a 20 kHz source slept
// 0.5 ms late reads 1.8 kHz).
//
// Catching up is bounded: a caller more than maxLag behind gives up the
// backlog, the schedule restarts from now and the samples it skipped are
// counted (Skipped). A consumer that cannot keep the rate therefore gets
// fewer samples, never ones more than maxLag late.
type Pacer struct {
	clock   Clock
	rate    float64
	maxLag  time.Duration
	start   time.Time // of the current schedule; zero before the first Wait
	n       int64     // samples delivered in the current schedule
	skipped uint64
}

// maxLag is how far behind its schedule a Pacer catches up: a quarter of
// a second, or two periods at rates below 8 Hz.
func maxLag(rate float64) time.Duration {
	return max(250*time.Millisecond, time.Duration(2*float64(time.Second)/rate))
}

// NewPacer returns a Pacer for rate samples per second (rate > 0). A nil
// clock means SystemClock.
func NewPacer(rate float64, clock Clock) *Pacer {
	return &Pacer{clock: orSystem(clock), rate: rate, maxLag: maxLag(rate)}
}

// due is when sample n of the current schedule is due. Computed from n,
// not by adding periods, so rounding never accumulates.
func (p *Pacer) due(n int64) time.Time {
	return p.start.Add(time.Duration(float64(n) / p.rate * float64(time.Second)))
}

// Wait blocks until the next sample is due.
func (p *Pacer) Wait(ctx context.Context) error {
	now := p.clock.Now()
	if p.start.IsZero() {
		p.start, p.n = now, 0
	}
	due := p.due(p.n)
	if lag := now.Sub(due); lag > p.maxLag {
		// Every sample due by now but this one is given up.
		p.skipped += uint64(lag.Seconds() * p.rate)
		p.start, p.n, due = now, 0, now
	}
	if d := due.Sub(now); d > 0 {
		if err := p.clock.Sleep(ctx, d); err != nil {
			return err
		}
	} else if err := ctx.Err(); err != nil {
		return err
	}
	p.n++
	return nil
}

// Skipped returns how many samples were given up because the caller fell
// more than a quarter of a second (two periods below 8 Hz) behind.
func (p *Pacer) Skipped() uint64 { return p.skipped }

// Paced returns src with every Read delayed until its sample is due at rate
// samples per second (see Pacer). A rate of 0 returns src unchanged (read as
// fast as the source answers).
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
