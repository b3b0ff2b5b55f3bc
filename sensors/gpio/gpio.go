// Package gpio counts edges on GPIO inputs through periph's gpio package,
// as a sensors.Source. It registers the kind "gpio".
//
// Each pin gives two channels: <name>.<id>.count, the number of edges since
// the previous Read (pulses per sample: a flow meter, a tachometer), and
// <name>.<id>.level, the level at Read (0 or 1). The id is the GPIO number
// for pins named "GPIO17" or "17", the pin name otherwise.
package gpio

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"periph.io/x/conn/v3/gpio"

	"github.com/trit-iot/trit/sensors"
)

// pollTimeout bounds how long an edge counter waits before checking whether
// the source was closed.
const pollTimeout = 100 * time.Millisecond

// Options configures a Source. Zero fields mean defaults; a nil *Options
// means all defaults.
type Options struct {
	Name  string        // sensor name and channel prefix (default "gpio")
	Pull  gpio.Pull     // default gpio.Float
	Edge  gpio.Edge     // edges counted (default gpio.RisingEdge)
	Clock sensors.Clock // for timestamps
}

// Source counts edges on a set of pins.
type Source struct {
	name     string
	pins     []gpio.PinIn
	counts   []atomic.Int64
	channels []string
	clock    sensors.Clock
	stop     atomic.Bool
	wg       sync.WaitGroup
	closed   bool
}

// New sets up pins as inputs with edge detection and starts counting.
func New(pins []gpio.PinIn, o *Options) (*Source, error) {
	var c Options
	if o != nil {
		c = *o
	}
	if c.Name == "" {
		c.Name = "gpio"
	}
	if c.Pull == gpio.PullNoChange {
		c.Pull = gpio.Float
	}
	if c.Edge == gpio.NoEdge {
		c.Edge = gpio.RisingEdge
	}
	if c.Clock == nil {
		c.Clock = sensors.SystemClock
	}
	s := &Source{name: c.Name, pins: pins, counts: make([]atomic.Int64, len(pins)), clock: c.Clock}
	var names []string
	for _, p := range pins {
		if err := p.In(c.Pull, c.Edge); err != nil {
			return nil, sensors.NewDeviceError(c.Name, "open", nil, fmt.Errorf("pin %s: set as input with %s edge detection: %w", p.Name(), c.Edge, err))
		}
		names = append(names, p.Name())
	}
	s.channels = Channels(c.Name, names)
	for i, p := range pins {
		s.wg.Add(1)
		go s.count(p, &s.counts[i])
	}
	return s, nil
}

func (s *Source) count(p gpio.PinIn, n *atomic.Int64) {
	defer s.wg.Done()
	for !s.stop.Load() {
		if p.WaitForEdge(pollTimeout) {
			n.Add(1)
		}
	}
}

// PinID returns the channel id of a pin name: "17" for "GPIO17" or "17",
// the name itself otherwise.
func PinID(name string) string {
	id := strings.TrimPrefix(strings.ToUpper(name), "GPIO")
	if _, err := strconv.Atoi(id); err == nil {
		return id
	}
	return name
}

// Channels returns the channel names of a source named name on pins.
func Channels(name string, pins []string) []string {
	var ch []string
	for _, p := range pins {
		id := PinID(p)
		ch = append(ch, name+"."+id+".count", name+"."+id+".level")
	}
	return ch
}

// Channels implements sensors.Source.
func (s *Source) Channels() []string { return s.channels }

// Read returns, per pin, the edges counted since the previous Read and the
// current level.
func (s *Source) Read(ctx context.Context) (sensors.Reading, error) {
	if s.closed {
		return sensors.Reading{}, sensors.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return sensors.Reading{}, err
	}
	v := make([]float64, 0, 2*len(s.pins))
	for i, p := range s.pins {
		level := 0.0
		if p.Read() == gpio.High {
			level = 1
		}
		v = append(v, float64(s.counts[i].Swap(0)), level)
	}
	return sensors.Reading{Time: s.clock.Now(), Values: v}, nil
}

// Close stops counting (within pollTimeout) and halts the pins.
func (s *Source) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	s.stop.Store(true)
	s.wg.Wait()
	var first error
	for _, p := range s.pins {
		if err := p.Halt(); err != nil && first == nil {
			first = err
		}
	}
	return first
}
