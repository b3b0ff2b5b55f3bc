package features

import (
	"errors"
	"fmt"
	"slices"
)

// Pipeline computes feature vectors from a stream of samples. It keeps the
// last Window samples of every configured channel; once the longest window
// is full, every Hop samples a new vector is ready.
//
// A Pipeline is not safe for concurrent use. Push and Vector allocate
// nothing.
type Pipeline struct {
	spec     PipelineSpec
	channels []string // input channels, parallel to Push's values
	names    []string // output feature names
	order    []int    // output position -> index into full
	windows  []*window
	full     []float64 // every feature of the spec, in spec order
	hop      int
	longest  int
	pushed   int // samples pushed, saturating at longest
	untilHop int // samples until the next vector once full
}

// window is the ring buffer and work space of one Spec.
type window struct {
	spec   Spec
	in     int // index into the input channels
	ring   []float64
	pos    int // next write position
	lin    []float64
	power  []float64
	fft    *fft
	bins   [][2]int
	offset int // index of this spec's first feature in full
}

// NewPipeline returns a pipeline for spec whose input samples carry the
// given channels, in order (a Source's Channels()). Its vectors hold every
// feature of the spec, in spec order. It fails with a *FeatureError if a
// channel of the spec is not among channels.
func NewPipeline(spec PipelineSpec, channels []string) (*Pipeline, error) {
	names, err := spec.FeatureNames()
	if err != nil {
		return nil, err
	}
	return NewPipelineFor(spec, channels, names)
}

// NewPipelineFor is like NewPipeline, but its vectors hold exactly the
// features named in want, in that order (a model bundle's feature order),
// and only channels that want needs must be present. It fails like
// CanProduce.
func NewPipelineFor(spec PipelineSpec, channels, want []string) (*Pipeline, error) {
	if err := CanProduce(spec, channels, want); err != nil {
		return nil, err
	}
	if len(want) == 0 {
		return nil, errors.New("features: a pipeline needs at least one feature")
	}
	names, _ := spec.FeatureNames() // validated by CanProduce
	p := &Pipeline{spec: spec, channels: slices.Clone(channels), names: slices.Clone(want),
		full: make([]float64, len(names)), order: make([]int, len(want))}
	for i, n := range want {
		p.order[i] = slices.Index(names, n)
	}
	off := 0
	for _, f := range spec.Features {
		k := len(f.Stats) + len(f.Bands)
		used := slices.ContainsFunc(p.order, func(j int) bool { return j >= off && j < off+k })
		if used {
			p.windows = append(p.windows, newWindow(f, slices.Index(channels, f.Channel), off, spec.Rate))
			p.longest = max(p.longest, f.Window)
		}
		off += k
	}
	p.hop = spec.Hop
	if p.hop == 0 {
		p.hop = p.longest
	}
	return p, nil
}

func newWindow(f Spec, in, offset int, rate float64) *window {
	w := &window{spec: f, in: in, ring: make([]float64, f.Window), lin: make([]float64, f.Window), offset: offset}
	if len(f.Bands) > 0 {
		w.fft = newFFT(f.Window)
		w.power = make([]float64, f.Window/2+1)
		for _, b := range f.Bands {
			lo, hi, _ := binRange(b, f.Window, rate) // validated by the caller
			w.bins = append(w.bins, [2]int{lo, hi})
		}
	}
	return w
}

// Channels returns the input channels given to NewPipeline.
func (p *Pipeline) Channels() []string { return slices.Clone(p.channels) }

// FeatureNames returns the names of the vector's features, in order.
func (p *Pipeline) FeatureNames() []string { return slices.Clone(p.names) }

// Spec returns the spec the pipeline was built from.
func (p *Pipeline) Spec() PipelineSpec { return p.spec }

// Len returns the length of a feature vector.
func (p *Pipeline) Len() int { return len(p.names) }

// Select returns NewPipelineFor(p's spec, p's channels, want): a new, empty
// pipeline on the same input with the features of want in want's order.
func (p *Pipeline) Select(want []string) (*Pipeline, error) {
	return NewPipelineFor(p.spec, p.channels, want)
}

// Reset forgets all samples pushed so far.
func (p *Pipeline) Reset() {
	p.pushed, p.untilHop = 0, 0
	for _, w := range p.windows {
		w.pos = 0
		clear(w.ring)
	}
}

// Push adds one sample; values is parallel to the pipeline's channels. It
// reports whether a new feature vector is ready (see Vector).
func (p *Pipeline) Push(values []float64) (bool, error) {
	if len(values) != len(p.channels) {
		return false, fmt.Errorf("features: Push got %d values for %d channels %v", len(values), len(p.channels), p.channels)
	}
	for _, w := range p.windows {
		w.ring[w.pos] = values[w.in]
		w.pos++
		if w.pos == len(w.ring) {
			w.pos = 0
		}
	}
	if p.pushed < p.longest {
		p.pushed++
		if p.pushed < p.longest {
			return false, nil
		}
		p.untilHop = p.hop
		return true, nil
	}
	p.untilHop--
	if p.untilHop > 0 {
		return false, nil
	}
	p.untilHop = p.hop
	return true, nil
}

// Full reports whether every window holds enough samples for Vector.
func (p *Pipeline) Full() bool { return p.pushed >= p.longest }

// Vector computes the features over the current windows into dst, which is
// grown if its capacity is short, and returns it. Before the windows are
// full (see Full), the missing samples count as zeros.
func (p *Pipeline) Vector(dst []float32) []float32 {
	for _, w := range p.windows {
		w.compute(p.full, p.spec.Rate)
	}
	if cap(dst) < len(p.order) {
		dst = make([]float32, len(p.order))
	}
	dst = dst[:len(p.order)]
	for i, j := range p.order {
		dst[i] = float32(p.full[j])
	}
	return dst
}

// compute writes this window's features into full at w.offset.
func (w *window) compute(full []float64, rate float64) {
	n := copy(w.lin, w.ring[w.pos:])
	copy(w.lin[n:], w.ring[:w.pos])
	m := momentsOf(w.lin)
	out := full[w.offset:]
	for i, st := range w.spec.Stats {
		out[i] = m.stat(st)
	}
	if w.fft == nil {
		return
	}
	for i := range w.lin {
		w.lin[i] -= m.mean
	}
	w.fft.power(w.power, w.lin)
	nn := float64(len(w.lin)) * float64(len(w.lin))
	half := len(w.lin) / 2
	out = out[len(w.spec.Stats):]
	for i, b := range w.bins {
		var e float64
		for k := b[0]; k <= b[1]; k++ {
			if k == 0 || k == half {
				e += w.power[k]
			} else {
				e += 2 * w.power[k]
			}
		}
		out[i] = e / nn
	}
}
