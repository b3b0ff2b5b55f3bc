package agent

import (
	"encoding/json"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/trit-iot/trit/wire"
)

// The label source (docs/OPERATIONS.md "Label source", docs/FLEET.md
// "Closing the loop"): a channel of the configured sensors that reports
// ground truth — a door contact's GPIO line, a machine's state read from
// its PLC, a recording's label column — paired with each window the agent
// classifies by its reading: the window completed by a reading is
// labelled with the label channel's value in that same reading (mapped to
// a class by label_source.map). The labelled windows wait in a ring,
// stored in the database every telemetry interval and when the agent
// stops, until the fleet, asking for them (wire.RequestLabels), says it
// stores them (the request's After); only then are they dropped. Past
// the ring's bound the oldest go first, counted in Dropped.

// LabelSourceConfig is [label_source] in the agent's configuration.
type LabelSourceConfig struct {
	// Name says what the source is ("door", "plc-state"); the fleet
	// records "gateway:<device>/<name>" as the windows' labeller. Default
	// "label".
	Name string `toml:"name"`
	// Channel is a channel of the configured sensors whose value in a
	// reading is the class of the window that reading completes; it must
	// not be one of the model's inputs.
	Channel string `toml:"channel"`
	// Map turns the channel's value, as text (strconv 'g': "0", "1",
	// "2.5"), into a class; a value not in it labels nothing. Without a
	// map the value's text is the class.
	Map map[string]string `toml:"map"`
	// Every labels one classified window in Every (default 1: each).
	Every int `toml:"every"`
	// MaxBytes bounds the windows waiting for the fleet, in bytes of their
	// JSON (default DefaultLabelsMaxBytes, at most MaxLabelsMaxBytes); the
	// fleet takes them one message at a time.
	MaxBytes int `toml:"max_bytes"`
}

// labelRing holds labelled windows until the fleet acknowledges them.
type labelRing struct {
	cfg LabelSourceConfig

	mu       sync.Mutex
	idx      int    // the channel's index in in's channels, -1: none
	in       *input // the input idx is for
	seen     uint64
	features []string
	models   []wire.ModelRef
	items    []wire.LabelledWindow
	sizes    []int
	bytes    int
	dropped  uint64
	dirty    bool
}

func newLabelRing(cfg LabelSourceConfig) *labelRing {
	return &labelRing{cfg: cfg, idx: -1}
}

// labelledSize bounds the JSON size of w (as sampleSize).
func labelledSize(w *wire.LabelledWindow) int {
	return 112 + len(w.Class) + len(w.Label) + 16*len(w.X)
}

// label returns the class the label channel reports in a reading of in,
// or "" when it reports none (no such channel, a missing value, a value
// outside the map).
func (l *labelRing) label(in *input, values []float64) string {
	l.mu.Lock()
	if l.in != in {
		l.in, l.idx = in, slices.Index(in.channels, l.cfg.Channel)
	}
	idx := l.idx
	l.mu.Unlock()
	if idx < 0 || idx >= len(values) || values[idx] != values[idx] {
		return ""
	}
	text := strconv.FormatFloat(values[idx], 'g', -1, 64)
	if l.cfg.Map != nil {
		text = l.cfg.Map[text]
	}
	if wire.CheckLabel(text) != nil {
		return ""
	}
	return text
}

// offer adds window x of model r, classified class with margin, labelled
// label, at time at (one in Every).
func (l *labelRing) offer(r *running, at time.Time, x []float32, class string, margin float64, label string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen++
	if every := uint64(max(l.cfg.Every, 1)); l.seen%every != 0 {
		return
	}
	if names := featureNames(r); !slices.Equal(names, l.features) {
		// Another model's inputs: the waiting windows no longer fit one set.
		l.dropped += uint64(len(l.items))
		l.features, l.models, l.items, l.sizes, l.bytes = names, nil, nil, nil, 0
	}
	ref := r.ref
	ref.Install = "" // the model, whatever its install's stage
	m := slices.Index(l.models, ref)
	if m < 0 {
		if len(l.models) == wire.MaxLabelModels {
			l.dropModel(0)
		}
		l.models = append(l.models, ref)
		m = len(l.models) - 1
	}
	w := wire.LabelledWindow{Time: at.UnixMilli(), X: slices.Clone(x), Model: m, Class: class, Margin: min(max(margin, 0), 1), Label: label}
	if n := len(l.items); n > 0 && l.items[n-1].Time >= w.Time {
		return // one window per millisecond: the ID the fleet keys it by
	}
	size := labelledSize(&w)
	l.items, l.sizes = append(l.items, w), append(l.sizes, size)
	l.bytes += size
	for l.bytes > l.cfg.MaxBytes && len(l.items) > 0 {
		l.bytes -= l.sizes[0]
		l.items, l.sizes = l.items[1:], l.sizes[1:]
		l.dropped++
	}
	l.dirty = true
}

// dropModel drops model k and its windows (the model table is full).
func (l *labelRing) dropModel(k int) {
	keep, sizes, bytes := l.items[:0], l.sizes[:0], 0
	for i, w := range l.items {
		switch {
		case w.Model == k:
			l.dropped++
			continue
		case w.Model > k:
			w.Model--
		}
		keep, sizes = append(keep, w), append(sizes, l.sizes[i])
		bytes += l.sizes[i]
	}
	l.items, l.sizes, l.bytes = keep, sizes, bytes
	l.models = slices.Delete(l.models, k, k+1)
}

// ack drops the windows read at or before after (the fleet stores them).
func (l *labelRing) ack(after int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := 0
	for k < len(l.items) && l.items[k].Time <= after {
		l.bytes -= l.sizes[k]
		k++
	}
	if k > 0 {
		l.items, l.sizes, l.dirty = slices.Clone(l.items[k:]), slices.Clone(l.sizes[k:]), true
	}
}

// set returns the waiting windows as a LabelSet (nil when none wait).
func (l *labelRing) set() *wire.LabelSet {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.items) == 0 {
		return nil
	}
	return &wire.LabelSet{Source: l.cfg.Name, Models: slices.Clone(l.models), Features: slices.Clone(l.features),
		Windows: slices.Clone(l.items), Dropped: l.dropped}
}

// stored is the ring as kept in the database.
type storedLabels struct {
	Features []string              `json:"features"`
	Models   []wire.ModelRef       `json:"models"`
	Windows  []wire.LabelledWindow `json:"windows"`
	Dropped  uint64                `json:"dropped"`
}

// encodeIfDirty returns the ring's JSON if it changed since the last call.
func (l *labelRing) encodeIfDirty() ([]byte, bool) {
	l.mu.Lock()
	if !l.dirty {
		l.mu.Unlock()
		return nil, false
	}
	l.dirty = false
	s := storedLabels{Features: l.features, Models: l.models, Windows: l.items, Dropped: l.dropped}
	data, err := json.Marshal(s)
	l.mu.Unlock()
	return data, err == nil
}

// restore loads a ring stored by encodeIfDirty; windows that do not fit
// (features, model, bound) are left out, and a record that does not
// decode is ignored.
func (l *labelRing) restore(data []byte) bool {
	var s storedLabels
	if err := json.Unmarshal(data, &s); err != nil || len(s.Models) > wire.MaxLabelModels {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.features, l.models, l.dropped = s.Features, s.Models, s.Dropped
	for _, w := range s.Windows {
		if len(w.X) != len(s.Features) || w.Model < 0 || w.Model >= len(s.Models) {
			continue
		}
		n := labelledSize(&w)
		if l.bytes+n > l.cfg.MaxBytes {
			break
		}
		l.items, l.sizes = append(l.items, w), append(l.sizes, n)
		l.bytes += n
	}
	return true
}
