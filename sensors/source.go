package sensors

import (
	"context"
	"time"
)

// Reading is one sample of every channel of a Source, taken at Time.
// Values[i] belongs to the Source's Channels()[i].
type Reading struct {
	Time   time.Time
	Values []float64
}

// Source is a stream of Readings with fixed, named channels.
//
// Read blocks until the next sample is due (a Source paces itself at its
// configured rate), then measures and returns it. It returns io.EOF when a
// finite source (a replay without loop) is exhausted, and ctx.Err() when ctx
// is done first. The methods are not safe for concurrent use: to stop a
// blocked Read, cancel its context, then call Close.
type Source interface {
	// Channels returns the channel names, in the order of Reading.Values.
	// The caller must not modify the slice.
	Channels() []string
	// Read returns the next sample.
	Read(ctx context.Context) (Reading, error)
	// Close releases the device and its bus. Read after Close returns
	// ErrClosed.
	Close() error
}
