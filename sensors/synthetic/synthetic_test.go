package synthetic

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"math"
	"slices"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/trit-iot/trit/sensors"
	"github.com/trit-iot/trit/sensors/features"
	"github.com/trit-iot/trit/sensors/sensortest"
)

func TestDatasetDeterministicAndBalanced(t *testing.T) {
	a, err := MakeDataset(&DatasetOptions{PerState: 20, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := MakeDataset(&DatasetOptions{PerState: 20, Seed: 3})
	c, _ := MakeDataset(&DatasetOptions{PerState: 20, Seed: 4})
	if len(a.Rows) != 60 || !slices.Equal(a.Labels, b.Labels) {
		t.Fatalf("%d rows; labels differ for the same seed", len(a.Rows))
	}
	for i := range a.Rows {
		if !slices.Equal(a.Rows[i], b.Rows[i]) {
			t.Fatalf("row %d differs for the same seed", i)
		}
	}
	if slices.Equal(a.Rows[0], c.Rows[0]) {
		t.Fatal("different seeds gave the same first row")
	}
	counts := map[State]int{}
	for _, l := range a.Labels {
		counts[l]++
	}
	if counts[Normal] != 20 || counts[Imbalance] != 20 || counts[BearingFault] != 20 {
		t.Fatalf("label counts %v", counts)
	}
	want, _ := DefaultSpec().FeatureNames()
	if !slices.Equal(a.Features, want) {
		t.Fatalf("features %v", a.Features)
	}
}

// classMean returns the mean over rows of state st of the sum of the named
// features.
func classMean(d *Dataset, st State, names ...string) float64 {
	var sum float64
	var n int
	for i, row := range d.Rows {
		if d.Labels[i] != st {
			continue
		}
		n++
		for _, name := range names {
			sum += float64(row[slices.Index(d.Features, name)])
		}
	}
	return sum / float64(n)
}

func TestDatasetPhysics(t *testing.T) {
	d, err := MakeDataset(&DatasetOptions{PerState: 100, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	low := []string{"accel.x.band_0_50", "accel.y.band_0_50", "accel.z.band_0_50"}
	high := []string{"accel.x.band_150_500", "accel.y.band_150_500", "accel.z.band_150_500"}
	if n, i := classMean(d, Normal, low...), classMean(d, Imbalance, low...); i < 3*n {
		t.Errorf("1× energy: imbalance %v, normal %v; want imbalance clearly higher", i, n)
	}
	if n, b := classMean(d, Normal, high...), classMean(d, BearingFault, high...); b < 3*n {
		t.Errorf("high-band energy: bearing fault %v, normal %v; want the fault clearly higher", b, n)
	}
	if n, b := classMean(d, Normal, "accel.temperature.mean"), classMean(d, BearingFault, "accel.temperature.mean"); b <= n {
		t.Errorf("temperature: bearing fault %v, normal %v", b, n)
	}
	// No single feature separates the states: the best threshold on any one
	// feature misclassifies some normal-vs-fault pairs.
	for j, name := range d.Features {
		for _, fault := range []State{Imbalance, BearingFault} {
			if acc := bestThreshold(d, j, fault); acc > 0.99 {
				t.Errorf("%s alone separates normal from %s (%.3f)", name, fault, acc)
			}
		}
	}
}

// bestThreshold returns the best accuracy of a threshold on feature j for
// normal vs fault rows.
func bestThreshold(d *Dataset, j int, fault State) float64 {
	type pt struct {
		v     float32
		fault bool
	}
	var ps []pt
	for i, row := range d.Rows {
		if d.Labels[i] == Normal || d.Labels[i] == fault {
			ps = append(ps, pt{row[j], d.Labels[i] == fault})
		}
	}
	sort.Slice(ps, func(a, b int) bool { return ps[a].v < ps[b].v })
	nFault := 0
	for _, p := range ps {
		if p.fault {
			nFault++
		}
	}
	best, below := 0, 0 // faults below the cut
	for i := range len(ps) + 1 {
		// Normal below the cut and faults above, or the reverse.
		ok := (i - below) + (nFault - below)
		best = max(best, ok, len(ps)-ok)
		if i < len(ps) && ps[i].fault {
			below++
		}
	}
	return float64(best) / float64(len(ps))
}

// TestDatasetLearnable checks that a nonlinear classifier (5 nearest
// neighbours on standardized features) learns the states well: the data is
// not noise.
func TestDatasetLearnable(t *testing.T) {
	d, err := MakeDataset(&DatasetOptions{PerState: 200, Seed: 11})
	if err != nil {
		t.Fatal(err)
	}
	n, dim := len(d.Rows), len(d.Features)
	mu, sd := make([]float64, dim), make([]float64, dim)
	for _, r := range d.Rows {
		for j, v := range r {
			mu[j] += float64(v) / float64(n)
		}
	}
	for _, r := range d.Rows {
		for j, v := range r {
			sd[j] += (float64(v) - mu[j]) * (float64(v) - mu[j]) / float64(n)
		}
	}
	z := func(r []float32, j int) float64 { return (float64(r[j]) - mu[j]) / math.Sqrt(sd[j]+1e-30) }
	train, test := n*3/4, 0
	correct := 0
	for i := train; i < n; i++ {
		type nb struct {
			dist float64
			l    State
		}
		var nbs []nb
		for k := range train {
			var dd float64
			for j := range dim {
				x := z(d.Rows[i], j) - z(d.Rows[k], j)
				dd += x * x
			}
			nbs = append(nbs, nb{dd, d.Labels[k]})
		}
		sort.Slice(nbs, func(a, b int) bool { return nbs[a].dist < nbs[b].dist })
		votes := map[State]int{}
		for _, x := range nbs[:5] {
			votes[x.l]++
		}
		best := Normal
		for _, s := range States {
			if votes[s] > votes[best] {
				best = s
			}
		}
		if best == d.Labels[i] {
			correct++
		}
		test++
	}
	if acc := float64(correct) / float64(test); acc < 0.85 {
		t.Fatalf("5-NN accuracy %.3f, want >= 0.85", acc)
	}
}

func TestWriteCSV(t *testing.T) {
	d, err := MakeDataset(&DatasetOptions{PerState: 3, Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := d.WriteCSV(&buf); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 10 || recs[0][0] != "label" || !slices.Equal(recs[0][1:], d.Features) {
		t.Fatalf("header %v, %d records", recs[0], len(recs))
	}
	for i, rec := range recs[1:] {
		if rec[0] != strconv.Itoa(int(d.Labels[i])) {
			t.Fatalf("row %d label %s, want %d", i, rec[0], d.Labels[i])
		}
		for j, f := range rec[1:] {
			v, err := strconv.ParseFloat(f, 32)
			if err != nil || float32(v) != d.Rows[i][j] {
				t.Fatalf("row %d col %d: %q != %v", i, j, f, d.Rows[i][j])
			}
		}
	}
}

func TestDatasetSpec(t *testing.T) {
	spec := features.PipelineSpec{Rate: 1000, Features: []features.Spec{{Channel: "accel.z", Window: 64, Stats: []string{"kurtosis"}}}}
	d, err := MakeDataset(&DatasetOptions{Spec: &spec, PerState: 2})
	if err != nil || len(d.Features) != 1 || len(d.Rows) != 6 {
		t.Fatalf("%v %v", d, err)
	}
	bad := features.PipelineSpec{Features: []features.Spec{{Channel: "temp", Window: 4, Stats: []string{"mean"}}}}
	if _, err := MakeDataset(&DatasetOptions{Spec: &bad}); err == nil {
		t.Fatal("spec on a channel the machine lacks accepted")
	}
}

func TestSourceAndCycle(t *testing.T) {
	clock := sensortest.NewFakeClock(time.Unix(50, 0))
	s := New(&Options{Rate: 1000, Cycle: 2 * time.Second, Seed: 5, Clock: clock})
	if !slices.Equal(s.Channels(), []string{"accel.x", "accel.y", "accel.z", "accel.temperature"}) {
		t.Fatalf("channels %v", s.Channels())
	}
	var states []State
	var zsum float64
	for i := range 6000 {
		r, err := s.Read(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if i%2000 == 0 {
			states = append(states, s.State()) // the state r was sampled in
		}
		zsum += r.Values[2]
		if !r.Time.Equal(clock.Now()) {
			t.Fatalf("sample %d stamped %v, read at %v", i, r.Time, clock.Now())
		}
	}
	if !slices.Equal(states, []State{Normal, Imbalance, BearingFault}) {
		t.Fatalf("states over the cycle %v", states)
	}
	if m := zsum / 6000; math.Abs(m-1) > 0.05 {
		t.Fatalf("mean z %v, want gravity 1 g", m)
	}
	s.SetState(Normal)
	s.Close()
	if _, err := s.Read(context.Background()); !errors.Is(err, sensors.ErrClosed) {
		t.Fatal(err)
	}
}

func TestRegistry(t *testing.T) {
	clock := sensortest.NewFakeClock(time.Unix(0, 0))
	cfg := sensors.Config{Kind: "synthetic", State: "bearing_fault", Seed: 9, Rate: 2000}
	src, err := sensors.OpenWith(cfg, &sensors.Env{Clock: clock, Buses: &sensortest.Buses{}})
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		if _, err := src.Read(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	// Paced in (virtual) real time: 10 samples at 2 kHz.
	if got := clock.Now().Sub(time.Unix(0, 0)); got != 9*500*time.Microsecond {
		t.Fatalf("virtual time after 10 samples: %v", got)
	}
	for _, c := range []sensors.Config{
		{Kind: "synthetic", State: "broken"},
		{Kind: "synthetic", Rate: 100},
		{Kind: "synthetic", Cycle: time.Millisecond},
		{Kind: "synthetic", File: "x.csv"},
	} {
		var ce *sensors.ConfigError
		if err := c.Validate(); !errors.As(err, &ce) {
			t.Errorf("%+v accepted (%v)", c, err)
		}
	}
	if _, err := ParseState("imbalance"); err != nil {
		t.Fatal(err)
	}
	if State(7).String() != "State(7)" || BearingFault.String() != "bearing_fault" {
		t.Fatal("State.String")
	}
}

// TestReadingsStampedWhenRead: a reading carries the time it was read,
// not start + n/rate, which falls behind the clock when the machine cannot
// keep the rate (here each read takes 1 ms at 20 kHz).
func TestReadingsStampedWhenRead(t *testing.T) {
	clock := sensortest.NewFakeClock(time.Unix(50, 0))
	s := New(&Options{Rate: 20000, Clock: clock})
	for i := range 100 {
		clock.Advance(time.Millisecond)
		r, err := s.Read(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if !r.Time.Equal(clock.Now()) {
			t.Fatalf("reading %d stamped %v, read at %v", i, r.Time, clock.Now())
		}
	}
}
