package features

import (
	"encoding/json"
	"errors"
	"math"
	"math/cmplx"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// naivePower is the reference DFT the fft must match.
func naivePower(x []float64) []float64 {
	n := len(x)
	out := make([]float64, n/2+1)
	for k := range out {
		var s complex128
		for t, v := range x {
			s += complex(v, 0) * cmplx.Exp(complex(0, -2*math.Pi*float64(k*t)/float64(n)))
		}
		out[k] = real(s)*real(s) + imag(s)*imag(s)
	}
	return out
}

func randSignal(r *rand.Rand, n int) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = r.NormFloat64()*2 + 0.5
	}
	return x
}

func TestFFTMatchesDFT(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{2, 4, 8, 16, 64, 256} {
		x := randSignal(r, n)
		got := make([]float64, n/2+1)
		newFFT(n).power(got, x)
		want := naivePower(x)
		for k := range want {
			if math.Abs(got[k]-want[k]) > 1e-9*(1+want[k]) {
				t.Fatalf("n=%d bin %d: fft %v, dft %v", n, k, got[k], want[k])
			}
		}
	}
}

func TestStatsMatchDefinitions(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	x := randSignal(r, 100)
	x[17] = -9 // a clear min and max|x|
	var sum, sq float64
	mn, mx := math.Inf(1), math.Inf(-1)
	for _, v := range x {
		sum += v
		sq += v * v
		mn, mx = math.Min(mn, v), math.Max(mx, v)
	}
	mean := sum / 100
	var m2, m4 float64
	for _, v := range x {
		m2 += (v - mean) * (v - mean)
		m4 += math.Pow(v-mean, 4)
	}
	rms := math.Sqrt(sq / 100)
	want := map[string]float64{
		StatMean: mean, StatStd: math.Sqrt(m2 / 100), StatMin: mn, StatMax: mx,
		StatRMS: rms, StatP2P: mx - mn, StatKurtosis: 100 * m4 / (m2 * m2), StatCrest: 9 / rms,
	}
	m := momentsOf(x)
	for _, st := range Stats {
		if got := m.stat(st); math.Abs(got-want[st]) > 1e-12*(1+math.Abs(want[st])) {
			t.Errorf("%s = %v, want %v", st, got, want[st])
		}
	}
	c := momentsOf([]float64{4, 4, 4})
	if c.stat(StatKurtosis) != 0 || c.stat(StatStd) != 0 {
		t.Errorf("constant window: kurtosis %v std %v, want 0 0", c.stat(StatKurtosis), c.stat(StatStd))
	}
	z := momentsOf([]float64{0, 0})
	if z.stat(StatCrest) != 0 {
		t.Errorf("zero window crest = %v, want 0", z.stat(StatCrest))
	}
}

// push feeds x (one channel) to p and returns the vector after the last
// sample.
func pushAll(t *testing.T, p *Pipeline, x []float64) []float32 {
	t.Helper()
	for _, v := range x {
		if _, err := p.Push([]float64{v}); err != nil {
			t.Fatal(err)
		}
	}
	return p.Vector(nil)
}

func TestBandsAddUpToVariance(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	spec := PipelineSpec{Rate: 1000, Features: []Spec{{
		Channel: "a", Window: 256, Stats: []string{StatStd},
		Bands: [][2]float64{{0, 50}, {50, 200}, {200, 333.3}, {333.3, 500}},
	}}}
	p, err := NewPipeline(spec, []string{"a"})
	if err != nil {
		t.Fatal(err)
	}
	v := pushAll(t, p, randSignal(r, 256))
	variance := float64(v[0]) * float64(v[0])
	var sum float64
	for _, e := range v[1:] {
		sum += float64(e)
	}
	if math.Abs(sum-variance) > 1e-5*variance {
		t.Fatalf("band energies add up to %v, variance is %v", sum, variance)
	}
}

func TestBandOfSine(t *testing.T) {
	// 125 Hz at 1 kHz with N=256 sits exactly on bin 32.
	const amp = 0.7
	x := make([]float64, 256)
	for i := range x {
		x[i] = 3 + amp*math.Sin(2*math.Pi*125*float64(i)/1000)
	}
	spec := PipelineSpec{Rate: 1000, Features: []Spec{{Channel: "a", Window: 256, Bands: [][2]float64{{0, 100}, {100, 150}, {150, 500}}}}}
	p, err := NewPipeline(spec, []string{"a"})
	if err != nil {
		t.Fatal(err)
	}
	v := pushAll(t, p, x)
	if math.Abs(float64(v[1])-amp*amp/2) > 1e-6 || v[0] > 1e-9 || v[2] > 1e-9 {
		t.Fatalf("band energies %v, want [0 %v 0]", v, amp*amp/2)
	}
}

func TestFeatureNamesOrder(t *testing.T) {
	spec := PipelineSpec{Rate: 1000, Features: []Spec{
		{Channel: "accel.x", Window: 256, Stats: []string{"rms", "p2p"}, Bands: [][2]float64{{0, 50}, {50, 200}}},
		{Channel: "temp.temperature", Window: 8, Stats: []string{"mean"}},
		{Channel: "accel.y", Window: 64, Bands: [][2]float64{{12.5, 500}}},
	}}
	got, err := spec.FeatureNames()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"accel.x.rms", "accel.x.p2p", "accel.x.band_0_50", "accel.x.band_50_200", "temp.temperature.mean", "accel.y.band_12.5_500"}
	if !slices.Equal(got, want) {
		t.Fatalf("names %q, want %q", got, want)
	}
}

func TestSpecErrors(t *testing.T) {
	ok := Spec{Channel: "a", Window: 64, Stats: []string{"mean"}}
	cases := []struct {
		name  string
		spec  PipelineSpec
		index int
		field string
	}{
		{"no features", PipelineSpec{}, -1, "features"},
		{"negative rate", PipelineSpec{Rate: -1, Features: []Spec{ok}}, -1, "rate"},
		{"NaN rate", PipelineSpec{Rate: math.NaN(), Features: []Spec{ok}}, -1, "rate"},
		{"negative hop", PipelineSpec{Hop: -2, Features: []Spec{ok}}, -1, "hop"},
		{"no channel", PipelineSpec{Features: []Spec{ok, {Window: 4, Stats: []string{"mean"}}}}, 1, "channel"},
		{"zero window", PipelineSpec{Features: []Spec{{Channel: "a", Stats: []string{"mean"}}}}, 0, "window"},
		{"huge window", PipelineSpec{Features: []Spec{{Channel: "a", Window: MaxWindow + 1, Stats: []string{"mean"}}}}, 0, "window"},
		{"nothing", PipelineSpec{Features: []Spec{{Channel: "a", Window: 4}}}, 0, "stats"},
		{"unknown stat", PipelineSpec{Features: []Spec{{Channel: "a", Window: 4, Stats: []string{"median"}}}}, 0, "stats"},
		{"duplicate", PipelineSpec{Features: []Spec{ok, ok}}, 1, "stats"},
		{"bands without rate", PipelineSpec{Features: []Spec{{Channel: "a", Window: 64, Bands: [][2]float64{{0, 1}}}}}, 0, "bands"},
		{"not power of two", PipelineSpec{Rate: 100, Features: []Spec{{Channel: "a", Window: 100, Bands: [][2]float64{{0, 10}}}}}, 0, "window"},
		{"reversed band", PipelineSpec{Rate: 100, Features: []Spec{{Channel: "a", Window: 64, Bands: [][2]float64{{10, 5}}}}}, 0, "bands"},
		{"band above nyquist", PipelineSpec{Rate: 100, Features: []Spec{{Channel: "a", Window: 64, Bands: [][2]float64{{60, 70}}}}}, 0, "bands"},
		{"empty band", PipelineSpec{Rate: 100, Features: []Spec{{Channel: "a", Window: 8, Bands: [][2]float64{{1, 2}}}}}, 0, "bands"},
		{"infinite band", PipelineSpec{Rate: 100, Features: []Spec{{Channel: "a", Window: 8, Bands: [][2]float64{{0, math.Inf(1)}}}}}, 0, "bands"},
	}
	for _, c := range cases {
		err := c.spec.Validate()
		var se *SpecError
		if !errors.As(err, &se) {
			t.Errorf("%s: got %v, want a *SpecError", c.name, err)
			continue
		}
		if se.Index != c.index || se.Field != c.field {
			t.Errorf("%s: error at feature %d field %s, want %d %s (%v)", c.name, se.Index, se.Field, c.index, c.field, err)
		}
	}
}

func TestCanProduce(t *testing.T) {
	spec := PipelineSpec{Rate: 1000, Features: []Spec{
		{Channel: "accel.x", Window: 256, Stats: []string{"rms"}, Bands: [][2]float64{{0, 50}}},
		{Channel: "temp.temperature", Window: 8, Stats: []string{"mean"}},
	}}
	avail := []string{"accel.x", "accel.y", "accel.z"}
	if err := CanProduce(spec, avail, []string{"accel.x.band_0_50", "accel.x.rms"}); err != nil {
		t.Fatalf("producible subset refused: %v", err)
	}
	var fe *FeatureError
	err := CanProduce(spec, avail, []string{"accel.x.rms", "temp.temperature.mean", "accel.x.p2p"})
	if !errors.As(err, &fe) || fe.Feature != "temp.temperature.mean" || fe.Position != 1 {
		t.Fatalf("missing channel: got %v", err)
	}
	err = CanProduce(spec, append(avail, "temp.temperature"), []string{"accel.x.rms", "accel.x.p2p"})
	if !errors.As(err, &fe) || fe.Feature != "accel.x.p2p" || fe.Position != 1 {
		t.Fatalf("feature not in spec: got %v", err)
	}
	var se *SpecError
	if err := CanProduce(PipelineSpec{}, avail, nil); !errors.As(err, &se) {
		t.Fatalf("invalid spec: got %v, want *SpecError", err)
	}
	all := append(avail, "temp.temperature")
	err = CanProduce(spec, all, []string{"accel.x.rms", "temp.temperature.mean", "accel.x.rms"})
	if !errors.As(err, &fe) || fe.Feature != "accel.x.rms" || fe.Position != 2 || !strings.Contains(err.Error(), "twice") {
		t.Fatalf("duplicate feature: got %v", err)
	}
	// A bundle without names (f0, f1, ... implied) says nothing about
	// which input is which: refused.
	for _, want := range [][]string{nil, {}} {
		if err := CanProduce(spec, all, want); !errors.As(err, &fe) || fe.Position != -1 {
			t.Fatalf("no names (%v): got %v", want, err)
		}
	}
	if err := CanProduce(spec, all, []string{"f0", "f1"}); !errors.As(err, &fe) || fe.Feature != "f0" {
		t.Fatalf("default names: got %v", err)
	}
}

func TestFeatureNameLength(t *testing.T) {
	long := strings.Repeat("a", MaxName-len(".rms"))
	spec := PipelineSpec{Features: []Spec{{Channel: long, Window: 4, Stats: []string{"rms"}}}}
	if err := spec.Validate(); err != nil {
		t.Fatalf("%d-byte name refused: %v", MaxName, err)
	}
	spec.Features[0].Channel += "b"
	var se *SpecError
	if err := spec.Validate(); !errors.As(err, &se) || se.Field != "channel" {
		t.Fatalf("%d-byte name: got %v", MaxName+1, err)
	}
}

// naiveFeatures computes rms and the 0-50 Hz band of the last n samples of x
// the slow way, as an oracle for the pipeline's ring buffer and hop.
func naiveFeatures(x []float64, n int, rate float64) (rms, band float64) {
	w := x[len(x)-n:]
	var mean, sq float64
	for _, v := range w {
		mean += v
		sq += v * v
	}
	mean /= float64(n)
	d := make([]float64, n)
	for i, v := range w {
		d[i] = v - mean
	}
	pw := naivePower(d)
	for k := range pw {
		if float64(k)*rate/float64(n) < 50 {
			wk := 2.0
			if k == 0 || k == n/2 {
				wk = 1
			}
			band += wk * pw[k] / float64(n*n)
		}
	}
	return math.Sqrt(sq / float64(n)), band
}

func TestPipelineWindowsAndHop(t *testing.T) {
	spec := PipelineSpec{Rate: 400, Hop: 10, Features: []Spec{
		{Channel: "b", Window: 32, Stats: []string{"rms"}, Bands: [][2]float64{{0, 50}}},
		{Channel: "a", Window: 8, Stats: []string{"mean"}},
	}}
	p, err := NewPipeline(spec, []string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(7, 8))
	var as, bs []float64
	var readyAt []int
	for i := range 100 {
		a, b := r.Float64(), r.NormFloat64()
		as, bs = append(as, a), append(bs, b)
		ready, err := p.Push([]float64{a, b})
		if err != nil {
			t.Fatal(err)
		}
		if !ready {
			continue
		}
		readyAt = append(readyAt, i+1)
		v := p.Vector(nil)
		rms, band := naiveFeatures(bs, 32, 400)
		var mean float64
		for _, x := range as[len(as)-8:] {
			mean += x / 8
		}
		if math.Abs(float64(v[0])-rms) > 1e-5 || math.Abs(float64(v[1])-band) > 1e-5 || math.Abs(float64(v[2])-mean) > 1e-5 {
			t.Fatalf("after %d samples: vector %v, want [%v %v %v]", i+1, v, rms, band, mean)
		}
	}
	if want := []int{32, 42, 52, 62, 72, 82, 92}; !slices.Equal(readyAt, want) {
		t.Fatalf("ready after %v samples, want %v", readyAt, want)
	}
	p.Reset()
	if p.Full() {
		t.Fatal("Full after Reset")
	}
}

func TestSelectAndPipelineFor(t *testing.T) {
	spec := PipelineSpec{Features: []Spec{
		{Channel: "a", Window: 4, Stats: []string{"mean", "max"}},
		{Channel: "b", Window: 4, Stats: []string{"min"}},
	}}
	p, err := NewPipeline(spec, []string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	q, err := p.Select([]string{"b.min", "a.mean"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		vals := []float64{float64(i), float64(10 - i)}
		p.Push(vals)
		q.Push(vals)
	}
	full, sel := p.Vector(nil), q.Vector(make([]float32, 0, 8))
	if !slices.Equal(sel, []float32{full[2], full[0]}) || !slices.Equal(q.FeatureNames(), []string{"b.min", "a.mean"}) {
		t.Fatalf("selected %v %v from %v %v", q.FeatureNames(), sel, p.FeatureNames(), full)
	}
	// Only the channels the wanted features need must exist.
	r, err := NewPipelineFor(spec, []string{"b"}, []string{"b.min"})
	if err != nil {
		t.Fatalf("NewPipelineFor without unneeded channel a: %v", err)
	}
	if _, err := r.Push([]float64{1, 2}); err == nil {
		t.Fatal("Push with too many values: no error")
	}
	if _, err := NewPipeline(spec, []string{"b"}); err == nil {
		t.Fatal("NewPipeline without channel a: no error")
	}
	if _, err := NewPipelineFor(spec, []string{"a", "b"}, nil); err == nil {
		t.Fatal("NewPipelineFor with no features: no error")
	}
}

func TestSpecJSON(t *testing.T) {
	const doc = `{"rate": 1000, "features": [{"channel": "accel.x", "window": 256, "stats": ["rms","p2p"], "bands": [[0,50],[50,200]]}]}`
	var spec PipelineSpec
	if err := json.Unmarshal([]byte(doc), &spec); err != nil {
		t.Fatal(err)
	}
	names, err := spec.FeatureNames()
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"accel.x.rms", "accel.x.p2p", "accel.x.band_0_50", "accel.x.band_50_200"}; !slices.Equal(names, want) {
		t.Fatalf("names %q, want %q", names, want)
	}
}

func TestVectorAllocatesNothing(t *testing.T) {
	spec := PipelineSpec{Rate: 1000, Features: []Spec{{Channel: "a", Window: 256, Stats: Stats, Bands: [][2]float64{{0, 100}, {100, 500}}}}}
	p, err := NewPipeline(spec, []string{"a"})
	if err != nil {
		t.Fatal(err)
	}
	dst := make([]float32, p.Len())
	vals := []float64{1}
	if n := testing.AllocsPerRun(10, func() {
		p.Push(vals)
		dst = p.Vector(dst)
	}); n != 0 {
		t.Fatalf("Push+Vector allocate %v times", n)
	}
}

// FuzzSpec checks that any JSON spec either fails validation cleanly or
// yields a pipeline that runs.
func FuzzSpec(f *testing.F) {
	f.Add(`{"rate": 1000, "features": [{"channel": "a", "window": 256, "stats": ["rms","p2p"], "bands": [[0,50],[50,200]]}]}`)
	f.Add(`{"rate": 10, "hop": 3, "features": [{"channel": "a", "window": 4, "stats": ["kurtosis","crest"]}, {"channel": "b", "window": 2, "bands": [[0, 5]]}]}`)
	f.Add(`{"features": [{"channel": "a", "window": 1, "stats": ["mean"]}]}`)
	f.Add(`{"rate": 1e308, "features": [{"channel": "a", "window": 2, "bands": [[0, 1e308]]}]}`)
	f.Fuzz(func(t *testing.T, doc string) {
		var spec PipelineSpec
		if json.Unmarshal([]byte(doc), &spec) != nil {
			return
		}
		for _, ft := range spec.Features {
			if ft.Window > 4096 {
				return // valid but slow to fill; not what fuzzing is for
			}
		}
		p, err := NewPipeline(spec, []string{"a", "b"})
		if err != nil {
			return
		}
		for i := range 5000 {
			if ready, err := p.Push([]float64{float64(i % 7), float64(i % 3)}); err != nil {
				t.Fatal(err)
			} else if ready {
				if v := p.Vector(nil); len(v) != p.Len() {
					t.Fatalf("vector of %d, want %d", len(v), p.Len())
				}
			}
		}
	})
}

func BenchmarkFFT256(b *testing.B) {
	x := randSignal(rand.New(rand.NewPCG(1, 1)), 256)
	f, dst := newFFT(256), make([]float64, 129)
	for b.Loop() {
		f.power(dst, x)
	}
}

// BenchmarkNaiveDFT256 is the reference loop BenchmarkFFT256 replaces.
func BenchmarkNaiveDFT256(b *testing.B) {
	x := randSignal(rand.New(rand.NewPCG(1, 1)), 256)
	for b.Loop() {
		naivePower(x)
	}
}

func BenchmarkVector(b *testing.B) {
	spec := PipelineSpec{Rate: 1000, Features: []Spec{
		{Channel: "x", Window: 256, Stats: []string{"rms", "p2p"}, Bands: [][2]float64{{0, 50}, {50, 150}, {150, 500}}},
		{Channel: "y", Window: 256, Stats: []string{"rms", "p2p"}, Bands: [][2]float64{{0, 50}, {50, 150}, {150, 500}}},
		{Channel: "z", Window: 256, Stats: []string{"rms", "p2p"}, Bands: [][2]float64{{0, 50}, {50, 150}, {150, 500}}},
	}}
	p, _ := NewPipeline(spec, []string{"x", "y", "z"})
	r := rand.New(rand.NewPCG(1, 1))
	for range 256 {
		p.Push([]float64{r.NormFloat64(), r.NormFloat64(), r.NormFloat64()})
	}
	dst := make([]float32, p.Len())
	for b.Loop() {
		dst = p.Vector(dst)
	}
}
