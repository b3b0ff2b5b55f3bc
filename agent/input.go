package agent

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/trit-iot/trit/sensors"
	"github.com/trit-iot/trit/sensors/features"
)

// input reads the configured sensors through sensors.OpenInput: the
// fastest sensor paces the inference cycles and the others are sampled and
// held (docs/SENSORS.md "Several sensors in one pipeline"); a sensor that
// failed contributes NaN, which the loop does not classify.
type input struct {
	src      *sensors.Input
	channels []string
	spec     *features.PipelineSpec // nil: features are channel values
}

// openInput opens the sensors. Config.Validate has checked that the
// pipeline's rate is the pacing sensor's (sensors.CheckSpecRate).
func openInput(cfgs []sensors.Config, spec *features.PipelineSpec, env *sensors.Env) (*input, error) {
	src, err := sensors.OpenInput(cfgs, env, nil)
	if err != nil {
		return nil, err
	}
	return &input{src: src, channels: src.Channels(), spec: spec}, nil
}

// read takes one reading: the pacing sensor's next sample and the latest
// of the others.
func (in *input) read(ctx context.Context) ([]float64, error) {
	r, err := in.src.Read(ctx)
	if err != nil {
		return nil, err
	}
	if len(r.Values) != len(in.channels) {
		return nil, fmt.Errorf("sensors returned %d values for %d channels", len(r.Values), len(in.channels))
	}
	return r.Values, nil
}

func (in *input) health() []sensors.Health { return sensors.Healths(in.src.Sensors) }

// Close closes every sensor.
func (in *input) Close() error { return in.src.Close() }

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
