package sensors_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/trit-iot/trit/sensors"
	"github.com/trit-iot/trit/sensors/features"
	"github.com/trit-iot/trit/sensors/sensortest"
	"github.com/trit-iot/trit/sensors/synthetic"
)

func TestReadLoop(t *testing.T) {
	clock := sensortest.NewFakeClock(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC))
	// Paced as the registry opens it: readings are stamped when read, 1 ms
	// apart in virtual time.
	src := sensors.Paced(synthetic.New(&synthetic.Options{Rate: 1000, Seed: 1, Clock: clock}), 1000, clock)
	spec := features.PipelineSpec{Rate: 1000, Features: []features.Spec{{Channel: "accel.x", Window: 4, Stats: []string{"rms"}}}}
	p, err := features.NewPipeline(spec, src.Channels())
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := sensors.ReadLoop(context.Background(), &buf, src, p, &sensors.LoopOptions{Count: 9}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	// 9 readings and a feature line after readings 4 and 8.
	if len(lines) != 11 || !strings.HasPrefix(lines[0], "2025-01-02T03:04:05Z accel.x=") ||
		!strings.HasPrefix(lines[4], "  features: accel.x.rms=") || !strings.HasPrefix(lines[9], "  features:") {
		t.Fatalf("output:\n%s", buf.String())
	}
	if !strings.Contains(lines[1], "2025-01-02T03:04:05.001Z") || !strings.Contains(lines[1], " accel.temperature=") {
		t.Fatalf("second line %q", lines[1])
	}

	// Every 4th reading printed; every feature vector printed.
	buf.Reset()
	p.Reset()
	if err := sensors.ReadLoop(context.Background(), &buf, src, p, &sensors.LoopOptions{Count: 12, Every: 4}); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Count(buf.String(), "accel.x="), 3; got != want {
		t.Fatalf("%d readings printed, want %d:\n%s", got, want, buf.String())
	}
	if got := strings.Count(buf.String(), "features:"); got != 3 {
		t.Fatalf("%d feature lines, want 3:\n%s", got, buf.String())
	}

	other, _ := features.NewPipeline(spec, []string{"accel.x"})
	if err := sensors.ReadLoop(context.Background(), &buf, src, other, &sensors.LoopOptions{Count: 1}); err == nil {
		t.Fatal("pipeline on other channels accepted")
	}
}

// broken fails every read.
type broken struct{}

func (broken) Channels() []string { return []string{"a"} }
func (broken) Close() error       { return nil }
func (broken) Read(context.Context) (sensors.Reading, error) {
	return sensors.Reading{}, sensors.ErrNoResponse
}

func TestReadLoopErrorsAndEnd(t *testing.T) {
	var buf bytes.Buffer
	if err := sensors.ReadLoop(context.Background(), &buf, broken{}, nil, nil); !errors.Is(err, sensors.ErrNoResponse) {
		t.Fatalf("got %v", err)
	}
	if n := strings.Count(buf.String(), "error: "); n != 3 {
		t.Fatalf("%d error lines:\n%s", n, buf.String())
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := sensors.ReadLoop(ctx, &buf, synthetic.New(nil), nil, nil); err != nil {
		t.Fatalf("canceled loop: %v", err)
	}
	if err := sensors.ReadLoop(context.Background(), &buf, eofSource{}, nil, nil); err != nil {
		t.Fatalf("ended source: %v", err)
	}
}

// TestEndToEnd runs the path the agent will: config → retrying source →
// feature pipeline checked against a model's feature names → vectors.
func TestEndToEnd(t *testing.T) {
	clock := sensortest.NewFakeClock(time.Unix(0, 0))
	cfg := sensors.Config{Kind: "synthetic", State: "imbalance", Seed: 3}
	src, err := sensors.OpenRetrying(cfg, &sensors.Env{Clock: clock, Buses: &sensortest.Buses{}}, &sensors.RetryPolicy{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	spec := synthetic.DefaultSpec()
	want, _ := spec.FeatureNames()
	// A bundle listing the features in another order is served in its order.
	want[0], want[1] = want[1], want[0]
	if err := features.CanProduce(spec, src.Channels(), want); err != nil {
		t.Fatal(err)
	}
	p, err := features.NewPipelineFor(spec, src.Channels(), want)
	if err != nil {
		t.Fatal(err)
	}
	var vectors [][]float32
	for len(vectors) < 3 {
		r, err := src.Read(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if ready, err := p.Push(r.Values); err != nil {
			t.Fatal(err)
		} else if ready {
			vectors = append(vectors, p.Vector(nil))
		}
	}
	// 3 vectors of 256 samples at 1 kHz took 768 ms of (virtual) time.
	if got := clock.Now().Sub(time.Unix(0, 0)); got != 767*time.Millisecond {
		t.Fatalf("virtual time %v", got)
	}
	if v := vectors[2]; len(v) != len(want) || v[1] <= 0 || v[0] <= v[1] {
		t.Fatalf("vector %v (want p2p first, then a smaller rms)", v)
	}
	if h := src.Health(); h.State != sensors.StateOK {
		t.Fatalf("health %+v", h)
	}
	// A model that wants a channel this gateway lacks is refused by name.
	var fe *features.FeatureError
	err = features.CanProduce(spec, []string{"accel.x", "accel.y", "accel.z"}, want)
	if !errors.As(err, &fe) || fe.Feature != "accel.temperature.mean" {
		t.Fatalf("missing temperature: %v", err)
	}
}
