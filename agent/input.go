package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/trit-iot/trit/sensors"
	"github.com/trit-iot/trit/sensors/features"
)

// input reads the configured sensors: one cycle reads every sensor once, in
// configuration order, and concatenates their channels. Each sensor paces
// itself, so a cycle takes as long as the slowest sensor's period.
type input struct {
	srcs     []*sensors.Retrying
	channels []string
	values   []float64
	spec     *features.PipelineSpec // nil: features are channel values
}

func openInput(cfgs []sensors.Config, spec *features.PipelineSpec, env *sensors.Env) (*input, error) {
	in := &input{spec: spec}
	for _, c := range cfgs {
		r, err := sensors.OpenRetrying(c, env, nil)
		if err != nil {
			in.Close()
			return nil, err
		}
		in.srcs = append(in.srcs, r)
		in.channels = append(in.channels, r.Channels()...)
	}
	if dup := firstDuplicate(in.channels); dup != "" {
		in.Close()
		return nil, fmt.Errorf("sensors: channel %q is provided twice; give the sensors distinct names", dup)
	}
	in.values = make([]float64, len(in.channels))
	return in, nil
}

func firstDuplicate(names []string) string {
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			return n
		}
		seen[n] = true
	}
	return ""
}

// read takes one reading of every sensor. The returned slice is reused by
// the next call.
func (in *input) read(ctx context.Context) ([]float64, time.Time, error) {
	var t time.Time
	off := 0
	for _, s := range in.srcs {
		r, err := s.Read(ctx)
		if err != nil {
			return nil, time.Time{}, err
		}
		if len(r.Values) != len(s.Channels()) {
			return nil, time.Time{}, fmt.Errorf("sensor %q returned %d values for %d channels", s.Name(), len(r.Values), len(s.Channels()))
		}
		copy(in.values[off:], r.Values)
		off += len(r.Values)
		if r.Time.After(t) {
			t = r.Time
		}
	}
	return in.values, t, nil
}

func (in *input) health() []sensors.Health {
	out := make([]sensors.Health, len(in.srcs))
	for i, s := range in.srcs {
		out[i] = s.Health()
	}
	return out
}

// Close closes every sensor.
func (in *input) Close() error {
	var errs []error
	for _, s := range in.srcs {
		errs = append(errs, s.Close())
	}
	return errors.Join(errs...)
}

// binding turns readings into one model's feature vectors. Each model gets
// its own binding (a pipeline has state), built before the model is swapped
// in, so an incompatible bundle is refused before it is activated.
type binding struct {
	in     *input             // the input whose channels it indexes
	direct []int              // channel index per feature (no pipeline)
	pipe   *features.Pipeline // or a pipeline in the model's feature order
	vec    []float32
}

// bind builds the binding for a model with the given ordered feature names
// (nil: the bundle names none) and d features. Without a pipeline, feature
// names are channel names; unnamed features take the channels in order,
// leaving out "<sensor>.label" channels (a replayed LIBSVM file's labels).
// With a pipeline, names are pipeline feature names; unnamed features are
// all the pipeline's features in spec order.
func (in *input) bind(names []string, d int) (*binding, error) {
	if in.spec != nil {
		want := names
		if want == nil {
			all, err := in.spec.FeatureNames()
			if err != nil {
				return nil, err
			}
			if len(all) != d {
				return nil, fmt.Errorf("the bundle names no features (it matches inputs by position) and expects %d; the pipeline computes %d", d, len(all))
			}
			want = all
		}
		p, err := features.NewPipelineFor(*in.spec, in.channels, want)
		if err != nil {
			return nil, err
		}
		return &binding{in: in, pipe: p, vec: make([]float32, d)}, nil
	}
	b := &binding{in: in, vec: make([]float32, d)}
	if names == nil {
		for i, ch := range in.channels {
			if !strings.HasSuffix(ch, ".label") {
				b.direct = append(b.direct, i)
			}
		}
		if len(b.direct) != d {
			return nil, fmt.Errorf("the bundle names no features (it matches channels by position) and expects %d; the sensors provide %d channels (besides labels): %s",
				d, len(b.direct), strings.Join(in.channels, ", "))
		}
		return b, nil
	}
	for pos, n := range names {
		i := slices.Index(in.channels, n)
		if i < 0 {
			return nil, &features.FeatureError{Feature: n, Position: pos,
				Reason: "no configured sensor provides channel " + strconv.Quote(n) + " and no [features] pipeline is configured"}
		}
		b.direct = append(b.direct, i)
	}
	return b, nil
}

// reset forgets the readings pushed so far (a pipeline's windows).
func (b *binding) reset() {
	if b.pipe != nil {
		b.pipe.Reset()
	}
}

// push feeds one reading and reports whether a feature vector is ready.
func (b *binding) push(values []float64) ([]float32, bool, error) {
	if b.pipe == nil {
		for i, j := range b.direct {
			b.vec[i] = float32(values[j])
		}
		return b.vec, true, nil
	}
	ready, err := b.pipe.Push(values)
	if err != nil || !ready {
		return nil, false, err
	}
	b.vec = b.pipe.Vector(b.vec)
	return b.vec, true, nil
}
