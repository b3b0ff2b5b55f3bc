package agent

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trit-iot/trit/sensors"
	"github.com/trit-iot/trit/sensors/features"
)

// writeCounter writes a replay file whose one column, name, counts rows
// 0, 1, 2, …: every sample read from it is told apart by its value.
func writeCounter(t *testing.T, dir, name string, rows int) string {
	t.Helper()
	var b strings.Builder
	b.WriteString(name + "\n")
	for i := range rows {
		fmt.Fprintf(&b, "%d\n", i)
	}
	path := filepath.Join(dir, name+".csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// fastSlow is a 2 Hz playback sensor listed before a 1 kHz one.
func fastSlow(t *testing.T) []sensors.Config {
	dir := t.TempDir()
	return []sensors.Config{
		{Kind: "replay", Name: "slow", File: writeCounter(t, dir, "slow", 100), Rate: 2, Loop: true},
		{Kind: "replay", Name: "fast", File: writeCounter(t, dir, "fast", 100000), Rate: 1000, Loop: true},
	}
}

// TestInputFastSensorPaces: with a 1 kHz and a 2 Hz sensor, the fast one
// paces the cycles and the slow one is sampled and held. Reading them one
// after another gave a new slow sample every cycle (about 2 cycles a
// second). Counted in cycles, not time: every cycle carries a new fast
// sample, and the slow value changes far less often than once a cycle.
func TestInputFastSensorPaces(t *testing.T) {
	in, err := openInput(fastSlow(t), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if got := strings.Join(in.channels, ","); got != "slow,fast" {
		t.Fatalf("channels %s, want configuration order slow,fast", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const cycles = 300
	lastFast, lastSlow := -1.0, math.NaN()
	slowChanges := 0
	for i := range cycles {
		v, err := in.read(ctx)
		if err != nil {
			t.Fatalf("cycle %d: %v", i, err)
		}
		slow, fast := v[0], v[1]
		if fast != lastFast+1 {
			t.Fatalf("cycle %d: fast sample %v after %v: every cycle must carry the fast sensor's next sample", i, fast, lastFast)
		}
		lastFast = fast
		if !math.IsNaN(slow) && slow != lastSlow {
			slowChanges++
			lastSlow = slow
		}
	}
	// At the sensors' rates 300 cycles see one or two slow samples; allow
	// a slowed-down machine a wide margin, far from one per cycle.
	if slowChanges > cycles/10 {
		t.Fatalf("the slow sensor's value changed %d times in %d cycles: it is not sampled and held", slowChanges, cycles)
	}
	if slowChanges == 0 {
		t.Fatalf("the slow sensor gave no value in %d cycles", cycles)
	}
}

// TestConfigRejectsPipelineRate: a pipeline must be for the rate of the
// sensor that paces the cycles (the fastest), or its bands are placed at
// the wrong frequencies.
func TestConfigRejectsPipelineRate(t *testing.T) {
	k := newKeys(t)
	spec := func(rate float64) *features.PipelineSpec {
		return &features.PipelineSpec{Rate: rate, Features: []features.Spec{
			{Channel: "fast", Window: 8, Stats: []string{features.StatMean}},
			{Channel: "slow", Window: 8, Stats: []string{features.StatMean}},
		}}
	}
	for _, tc := range []struct {
		rate float64
		ok   bool
	}{{1000, true}, {2, false}, {500, false}} {
		cfg := testConfig(t, k, "tcp://fake:1883")
		cfg.Sensors = fastSlow(t)
		cfg.Features = spec(tc.rate)
		err := cfg.Validate()
		if tc.ok && err != nil {
			t.Errorf("pipeline at %v Hz: %v", tc.rate, err)
		}
		if !tc.ok && (err == nil || !strings.Contains(err.Error(), "features.rate") || !strings.Contains(err.Error(), `"fast"`)) {
			t.Errorf("pipeline at %v Hz with a 1 kHz sensor pacing: %v, want an error naming features.rate and sensor \"fast\"", tc.rate, err)
		}
	}
	// Several sensors need a rate each: a slower one is read in the
	// background at its own pace.
	cfg := testConfig(t, k, "tcp://fake:1883")
	cfg.Sensors = fastSlow(t)
	cfg.Sensors[0].Rate = 0
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "rate") {
		t.Errorf("a sensor without a rate beside another: %v", err)
	}
}
