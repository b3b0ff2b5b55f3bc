package features

import (
	"fmt"
	"math"
	"slices"
	"strconv"
)

// Statistic names accepted in Spec.Stats.
const (
	StatMean     = "mean"
	StatStd      = "std"
	StatMin      = "min"
	StatMax      = "max"
	StatRMS      = "rms"
	StatP2P      = "p2p"
	StatKurtosis = "kurtosis"
	StatCrest    = "crest"
)

// Stats lists the known statistic names.
var Stats = []string{StatMean, StatStd, StatMin, StatMax, StatRMS, StatP2P, StatKurtosis, StatCrest}

// MaxName is the longest feature name, in bytes: a model bundle stores
// names of at most 64 bytes, so a longer one could not travel with a model.
const MaxName = 64

// MaxWindow bounds Spec.Window, to keep a bad spec from allocating
// unbounded memory.
const MaxWindow = 1 << 16

// Spec is the feature extraction for one channel.
type Spec struct {
	Channel string       `toml:"channel" json:"channel"`
	Window  int          `toml:"window" json:"window"`         // samples; a power of two when Bands is set
	Stats   []string     `toml:"stats" json:"stats,omitempty"` // see Stats
	Bands   [][2]float64 `toml:"bands" json:"bands,omitempty"` // [lo, hi) in Hz
}

// PipelineSpec is the feature extraction of one model.
type PipelineSpec struct {
	// Rate is the sample rate of the input, in Hz; needed to place bands.
	Rate float64 `toml:"rate" json:"rate,omitempty"`
	// Hop is the number of samples between two feature vectors; 0 means the
	// longest window (windows that do not overlap).
	Hop      int    `toml:"hop" json:"hop,omitempty"`
	Features []Spec `toml:"feature" json:"features"`
}

// SpecError reports an invalid PipelineSpec.
type SpecError struct {
	Index   int    // index into Features, or -1 for the pipeline itself
	Channel string // the feature's channel, if any
	Field   string // "rate", "hop", "channel", "window", "stats" or "bands"
	Msg     string
}

// Error implements error.
func (e *SpecError) Error() string {
	if e.Index < 0 {
		return fmt.Sprintf("features: pipeline: %s: %s", e.Field, e.Msg)
	}
	return fmt.Sprintf("features: feature[%d] (channel %q): %s: %s", e.Index, e.Channel, e.Field, e.Msg)
}

// Validate checks the spec, including that feature names are unique.
func (s PipelineSpec) Validate() error {
	_, err := s.FeatureNames()
	return err
}

// FeatureNames returns the names of the features the spec produces, in
// output order: for each Spec, its Stats in order, then its Bands in order.
func (s PipelineSpec) FeatureNames() ([]string, error) {
	if math.IsNaN(s.Rate) || math.IsInf(s.Rate, 0) || s.Rate < 0 {
		return nil, &SpecError{Index: -1, Field: "rate", Msg: fmt.Sprintf("%v must be a finite number >= 0 (Hz)", s.Rate)}
	}
	if s.Hop < 0 || s.Hop > MaxWindow {
		return nil, &SpecError{Index: -1, Field: "hop", Msg: fmt.Sprintf("%d must be in 0..%d", s.Hop, MaxWindow)}
	}
	if len(s.Features) == 0 {
		return nil, &SpecError{Index: -1, Field: "features", Msg: "no features"}
	}
	var names []string
	seen := map[string]bool{}
	for i, f := range s.Features {
		fn, err := f.names(i, s.Rate)
		if err != nil {
			return nil, err
		}
		for _, n := range fn {
			if len(n) > MaxName {
				return nil, &SpecError{Index: i, Channel: f.Channel, Field: "channel", Msg: fmt.Sprintf("feature name %q is longer than %d bytes, which a model bundle cannot carry; use a shorter sensor name", n, MaxName)}
			}
			if seen[n] {
				return nil, &SpecError{Index: i, Channel: f.Channel, Field: "stats", Msg: fmt.Sprintf("feature %q is produced twice", n)}
			}
			seen[n] = true
		}
		names = append(names, fn...)
	}
	return names, nil
}

// names validates one Spec and returns its feature names.
func (f Spec) names(i int, rate float64) ([]string, error) {
	fail := func(field, format string, args ...any) ([]string, error) {
		return nil, &SpecError{Index: i, Channel: f.Channel, Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	if f.Channel == "" {
		return fail("channel", "missing")
	}
	if f.Window < 1 || f.Window > MaxWindow {
		return fail("window", "%d must be in 1..%d samples", f.Window, MaxWindow)
	}
	if len(f.Stats) == 0 && len(f.Bands) == 0 {
		return fail("stats", "neither stats nor bands given")
	}
	var names []string
	for _, st := range f.Stats {
		if !slices.Contains(Stats, st) {
			return fail("stats", "unknown statistic %q (known: %v)", st, Stats)
		}
		names = append(names, f.Channel+"."+st)
	}
	if len(f.Bands) > 0 {
		if rate == 0 {
			return fail("bands", "bands need the pipeline's sample rate (rate)")
		}
		if f.Window < 2 || f.Window&(f.Window-1) != 0 {
			return fail("window", "%d is not a power of two >= 2, which bands need (radix-2 FFT)", f.Window)
		}
	}
	for _, b := range f.Bands {
		if _, _, err := binRange(b, f.Window, rate); err != nil {
			return fail("bands", "%v", err)
		}
		names = append(names, f.Channel+".band_"+fmtHz(b[0])+"_"+fmtHz(b[1]))
	}
	return names, nil
}

// binRange returns the first and last FFT bin of band b for a window of n
// samples at rate Hz.
func binRange(b [2]float64, n int, rate float64) (lo, hi int, err error) {
	nyq := rate / 2
	switch {
	case math.IsNaN(b[0]) || math.IsNaN(b[1]) || math.IsInf(b[0], 0) || math.IsInf(b[1], 0):
		return 0, 0, fmt.Errorf("band %v: edges must be finite", b)
	case b[0] < 0 || b[1] <= b[0]:
		return 0, 0, fmt.Errorf("band %v: want 0 <= lo < hi", b)
	case b[0] > nyq:
		return 0, 0, fmt.Errorf("band %v: lo is above the Nyquist frequency %v Hz", b, nyq)
	}
	width := rate / float64(n)
	lo = int(math.Ceil(b[0] / width))
	if b[1] >= nyq {
		hi = n / 2
	} else {
		hi = int(math.Ceil(b[1]/width)) - 1
	}
	if hi < lo {
		return 0, 0, fmt.Errorf("band %v holds no FFT bin (bins are %.4g Hz apart at window %d, rate %v Hz)", b, width, n, rate)
	}
	return lo, hi, nil
}

// fmtHz formats a band edge for a feature name: "50", "12.5".
func fmtHz(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
