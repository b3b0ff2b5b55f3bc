package synthetic

import (
	"context"
	"time"

	"github.com/trit-iot/trit/sensors"
)

// Options configures a Source. Zero fields mean defaults; a nil *Options
// means all defaults.
type Options struct {
	Name  string        // channel prefix (default "accel")
	Rate  float64       // sample rate in Hz (default 1000)
	State State         // initial state
	Cycle time.Duration // if > 0, move to the next state every Cycle
	Seed  uint64
	Clock sensors.Clock // stamps the readings (default SystemClock)
}

// Source is a simulated machine as a sensors.Source, with channels
// <name>.x, <name>.y, <name>.z (g) and <name>.temperature (°C). It does not
// pace itself: Read returns the next sample at once (the simulation
// advances 1/rate per sample), stamped with the time it was read; the
// registry wraps it with sensors.Paced to run in real time. (Stamping
// start + n/rate instead fell behind the clock whenever the machine could
// not keep the rate.)
type Source struct {
	m        *Machine
	o        Options
	n        int64
	segment  int64 // samples per segment
	channels []string
	closed   bool
}

// New returns a simulated machine.
func New(o *Options) *Source {
	var c Options
	if o != nil {
		c = *o
	}
	if c.Name == "" {
		c.Name = "accel"
	}
	if c.Rate <= 0 {
		c.Rate = DefaultRate
	}
	if c.Clock == nil {
		c.Clock = sensors.SystemClock
	}
	return &Source{
		m: NewMachine(c.State, c.Rate, c.Seed), o: c,
		segment: max(1, int64(c.Rate)), channels: Channels(c.Name),
	}
}

// Channels returns the channel names of a source named name.
func Channels(name string) []string {
	return []string{name + ".x", name + ".y", name + ".z", name + ".temperature"}
}

// Channels implements sensors.Source.
func (s *Source) Channels() []string { return s.channels }

// State returns the machine's current state.
func (s *Source) State() State { return s.m.State() }

// SetState switches the machine to state st.
func (s *Source) SetState(st State) { s.m.SetState(st) }

// Read implements sensors.Source.
func (s *Source) Read(ctx context.Context) (sensors.Reading, error) {
	if s.closed {
		return sensors.Reading{}, sensors.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return sensors.Reading{}, err
	}
	if s.n > 0 && s.n%s.segment == 0 {
		if s.o.Cycle > 0 && s.n%s.cycleLen() == 0 {
			s.m.SetState(States[(int(s.m.State())+1)%len(States)])
		} else {
			s.m.Redraw()
		}
	}
	s.n++
	x, y, z, c := s.m.Next()
	return sensors.Reading{Time: s.o.Clock.Now(), Values: []float64{x, y, z, c}}, nil
}

// cycleLen is the cycle in samples, rounded to whole segments.
func (s *Source) cycleLen() int64 {
	n := int64(s.o.Cycle.Seconds()*s.o.Rate) / s.segment * s.segment
	return max(n, s.segment)
}

// Close implements sensors.Source.
func (s *Source) Close() error {
	s.closed = true
	return nil
}
