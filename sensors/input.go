package sensors

import (
	"context"
	"fmt"
)

// Input is a list of configured sensors opened as one Source, as the agent
// and "trit-agent sensors read" read them: OpenAll, then, with several
// sensors, Merge paced by the fastest (the others sampled and held; a
// failed one gives NaN).
type Input struct {
	// Source reads every sensor's channels, in configuration order; each
	// Read returns when the primary has a sample.
	Source
	// Sensors are the opened sensors in configuration order, for Healths.
	// Closing Source closes them.
	Sensors []*Retrying
	// Primary is the effective config of the sensor that paces Source.
	Primary Config
}

// PrimaryOf validates cfgs and returns the index of the sensor that paces
// them together: the one with the highest rate (the first of equals). With
// several sensors each needs a rate, since a slower one is read in the
// background at its own pace.
func PrimaryOf(cfgs []Config) (int, error) {
	if err := ValidateAll(cfgs); err != nil {
		return 0, err
	}
	effs := make([]Config, len(cfgs))
	primary := 0
	for i, c := range cfgs {
		effs[i], _ = c.Effective() // validated above
		if effs[i].Rate > effs[primary].Rate {
			primary = i
		}
	}
	if len(cfgs) > 1 {
		for i, e := range effs {
			if i != primary && e.Rate == 0 {
				return 0, &ConfigError{Sensor: e.Name, Kind: e.Kind, Field: "rate",
					Msg: "none given; with several sensors each needs one (the fastest paces the others)"}
			}
		}
	}
	return primary, nil
}

// OpenInput opens cfgs as one Input (see PrimaryOf for what it requires).
// The error is non-nil only for an invalid config; a sensor that does not
// answer starts failed and shows in its Health.
func OpenInput(cfgs []Config, env *Env, p *RetryPolicy) (*Input, error) {
	if len(cfgs) == 0 {
		return nil, &ConfigError{Field: "sensor", Msg: "no sensors configured (add a [[sensor]] table)"}
	}
	primary, err := PrimaryOf(cfgs)
	if err != nil {
		return nil, err
	}
	srcs, err := OpenAll(cfgs, env, p)
	if err != nil {
		return nil, err
	}
	in := &Input{Sensors: srcs}
	in.Primary, _ = cfgs[primary].Effective()
	if len(srcs) == 1 {
		in.Source = srcs[0]
		return in, nil
	}
	var others []Source
	for i, s := range srcs {
		if i != primary {
			others = append(others, s)
		}
	}
	m, err := Merge(srcs[primary], others...)
	if err != nil {
		CloseAll(srcs)
		return nil, err
	}
	in.Source = m
	if primary != 0 {
		in.Source = reorder(m, srcs, primary)
	}
	return in, nil
}

// reordered puts a Merged's channels (the primary's first) back in
// configuration order.
type reordered struct {
	*Merged
	channels []string
	from     []int // from[i]: index in the Merged reading of channel i
}

func reorder(m *Merged, srcs []*Retrying, primary int) *reordered {
	r := &reordered{Merged: m}
	pw := len(srcs[primary].Channels())
	off := pw // the others start after the primary's channels
	for i, s := range srcs {
		w := len(s.Channels())
		start := off
		if i == primary {
			start = 0
		} else {
			off += w
		}
		for j := range w {
			r.from = append(r.from, start+j)
		}
		r.channels = append(r.channels, s.Channels()...)
	}
	return r
}

func (r *reordered) Channels() []string { return r.channels }

func (r *reordered) Read(ctx context.Context) (Reading, error) {
	m, err := r.Merged.Read(ctx)
	if err != nil {
		return Reading{}, err
	}
	if len(m.Values) != len(r.from) {
		return Reading{}, fmt.Errorf("sensors: merged reading has %d values for %d channels", len(m.Values), len(r.from))
	}
	v := make([]float64, len(r.from))
	for i, j := range r.from {
		v[i] = m.Values[j]
	}
	return Reading{Time: m.Time, Values: v}, nil
}
