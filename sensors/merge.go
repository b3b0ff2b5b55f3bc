package sensors

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sync"
	"time"
)

// Merged is one Source made of several, for a feature pipeline that reads
// channels of more than one sensor (an accelerometer at 1 kHz and a
// temperature probe at 1 Hz). Its channels are those of all its sources, in
// order. The first source, the primary, paces it: every Read returns the
// primary's next sample together with the latest sample of each other
// source (sample-and-hold), which are read in the background at their own
// rates; they must pace themselves (every source opened through the
// registry does, except a replay at rate 0).
//
// A channel whose source has not produced a sample yet, or whose last read
// failed, is NaN: a feature computed from it is NaN too, so a consumer
// skips such vectors instead of classifying stale or missing data, and the
// source's own Health says why.
type Merged struct {
	primary  Source
	others   []Source
	channels []string
	offsets  []int // offsets[i]: index of others[i]'s first channel

	mu     sync.Mutex // guards latest
	latest []float64  // the others' channels, NaN until read

	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once
	err    error // of Close
}

// Merge returns a Merged of primary and others, and starts reading the
// others. Channel names must be unique across the sources. The Merged owns
// the sources: Close closes them all.
func Merge(primary Source, others ...Source) (*Merged, error) {
	m := &Merged{primary: primary, others: others, channels: slices.Clone(primary.Channels())}
	n := 0
	for _, o := range others {
		m.offsets = append(m.offsets, n)
		n += len(o.Channels())
		m.channels = append(m.channels, o.Channels()...)
	}
	seen := map[string]bool{}
	for _, c := range m.channels {
		if seen[c] {
			return nil, fmt.Errorf("sensors: merge: channel %q comes from two sensors; give them distinct names", c)
		}
		seen[c] = true
	}
	m.latest = make([]float64, n)
	for i := range m.latest {
		m.latest[i] = math.NaN()
	}
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	for i, o := range others {
		m.wg.Add(1)
		go m.follow(ctx, o, m.offsets[i])
	}
	return m, nil
}

// follow reads src until ctx is done or src ends, keeping its latest values
// at latest[off:].
func (m *Merged) follow(ctx context.Context, src Source, off int) {
	defer m.wg.Done()
	width := len(src.Channels())
	for ctx.Err() == nil {
		r, err := src.Read(ctx)
		m.mu.Lock()
		dst := m.latest[off : off+width]
		if err == nil && len(r.Values) == width {
			copy(dst, r.Values)
		} else {
			for i := range dst {
				dst[i] = math.NaN()
			}
		}
		m.mu.Unlock()
		switch {
		case err == nil:
		case errors.Is(err, ErrClosed), errors.Is(err, io.EOF):
			return
		default:
			// A Retrying source waits out its own backoff; this pause only
			// keeps a bare source that fails at once from spinning.
			SystemClock.Sleep(ctx, errorPause)
		}
	}
}

// errorPause is the least time between two failed background reads.
const errorPause = 100 * time.Millisecond

// Channels implements Source.
func (m *Merged) Channels() []string { return m.channels }

// Read implements Source: the primary's next sample, then the others'
// latest values. Its errors are the primary's.
func (m *Merged) Read(ctx context.Context) (Reading, error) {
	r, err := m.primary.Read(ctx)
	if err != nil {
		return Reading{}, err
	}
	v := make([]float64, len(m.channels))
	n := copy(v, r.Values)
	m.mu.Lock()
	copy(v[n:], m.latest)
	m.mu.Unlock()
	return Reading{Time: r.Time, Values: v}, nil
}

// Close stops the background reads and closes every source.
func (m *Merged) Close() error {
	m.once.Do(func() {
		m.cancel()
		m.wg.Wait()
		errs := []error{m.primary.Close()}
		for _, o := range m.others {
			errs = append(errs, o.Close())
		}
		m.err = errors.Join(errs...)
	})
	return m.err
}
