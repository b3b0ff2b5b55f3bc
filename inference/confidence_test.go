package inference

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
)

func TestSurprisalTable(t *testing.T) {
	for p := range 256 {
		want := math.Round(16 * -math.Log2((float64(p)+0.5)/256))
		if float64(Surprisal[p]) != want {
			t.Errorf("Surprisal[%d] = %d, want %v", p, Surprisal[p], want)
		}
	}
}

func TestCalibrationBinMatchesSearch(t *testing.T) {
	c := &Calibration{Edges: []float32{0, 0.25, 1, 3.5, 100}, Confidence: []uint8{1, 2, 3, 4, 5, 6}}
	if err := c.Validate(false); err != nil {
		t.Fatal(err)
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	for _, m := range append([]float32{0, 0.25, 1, 3.5, 100, 1e30}, func() []float32 {
		var out []float32
		for range 1000 {
			out = append(out, float32(rnd.ExpFloat64()*5))
		}
		return out
	}()...) {
		want := sort.Search(len(c.Edges), func(i int) bool { return c.Edges[i] > m })
		if got := c.Bin(m); got != want {
			t.Fatalf("Bin(%g) = %d, want %d", m, got, want)
		}
	}
}

func TestCalibrationValidate(t *testing.T) {
	for name, c := range map[string]*Calibration{
		"no bins":            {},
		"too many bins":      {Edges: make([]float32, 16), Confidence: make([]uint8, 17)},
		"edge count":         {Edges: []float32{1, 2}, Confidence: []uint8{1, 2}},
		"edges descend":      {Edges: []float32{2, 1}, Confidence: []uint8{1, 2, 3}},
		"negative edge":      {Edges: []float32{-1}, Confidence: []uint8{1, 2}},
		"minus zero edge":    {Edges: []float32{float32(math.Copysign(0, -1))}, Confidence: []uint8{1, 2}},
		"NaN edge":           {Edges: []float32{float32(math.NaN())}, Confidence: []uint8{1, 2}},
		"confidence flat":    {Edges: []float32{1}, Confidence: []uint8{2, 2}},
		"novelty, no prints": {Confidence: []uint8{9}, MaxNovelty: 5},
	} {
		if err := c.Validate(false); err == nil {
			t.Errorf("%s: Validate accepted %+v", name, c)
		}
	}
	// The out-of-range term measures novelty without a fingerprint.
	if err := (&Calibration{Confidence: []uint8{9}, MaxNovelty: 5, Outside: 160}).Validate(false); err != nil {
		t.Errorf("Outside without a fingerprint: %v", err)
	}
	if err := (&Calibration{Confidence: []uint8{9}, Outside: MaxOutsideWeight + 1}).Validate(false); err == nil {
		t.Error("Validate accepted an out-of-range weight above MaxOutsideWeight")
	}
}

// calibratedSpec is pipelineSpec with a fingerprint of every other kept
// column (rates from a seeded stream) and a 12-bin calibration.
func calibratedSpec(t testing.TB, seed uint64, d, p, classes int) *ModelSpec {
	spec := pipelineSpec(t, seed, d, p, classes, d > 100)
	rnd := rand.New(rand.NewPCG(seed, 7))
	fp := &Fingerprint{}
	for i := 0; i < len(spec.Kept) && len(fp.Columns) < 256; i += 2 {
		fp.Columns = append(fp.Columns, int32(i))
		fp.Rates = append(fp.Rates, uint8(rnd.IntN(256)))
	}
	spec.Fingerprint = fp
	cal := &Calibration{MinConfidence: 150, MaxNovelty: 100 * uint32(len(fp.Columns))}
	for k := range 11 {
		cal.Edges = append(cal.Edges, float32(k)*0.5)
	}
	for k := range 12 {
		cal.Confidence = append(cal.Confidence, uint8(100+10*k))
	}
	spec.Calibration = cal
	return spec
}

// TestPredictOutcomeMatchesDefinition: the class is Predict's, the margin
// its best score less the second best, the bin and confidence the
// calibration's, the novelty the documented sum over the fingerprint, and
// unknown the documented rule, for both the bundle's thresholds and
// overridden ones.
func TestPredictOutcomeMatchesDefinition(t *testing.T) {
	for _, tc := range []struct {
		classes int
		outside uint16
	}{{2, 0}, {5, 0}, {2, 300}, {5, 1000}} {
		classes := tc.classes
		spec := calibratedSpec(t, 11, 8, 256, classes)
		spec.Calibration.Outside = tc.outside
		m, err := New(spec)
		if err != nil {
			t.Fatal(err)
		}
		rnd := rand.New(rand.NewPCG(3, uint64(classes)))
		z := make([]uint64, (len(spec.Kept)+63)/64)
		scores := make([]float32, classes)
		unknown, far := 0, 0
		for range 300 {
			x := make([]float32, 8)
			for i := range x {
				x[i] = float32(rnd.NormFloat64() * 3)
				if tc.outside > 0 && rnd.IntN(2) == 0 { // half the inputs in range
					lo, hi := float64(spec.Scaler.Lo[i]), float64(spec.Scaler.Hi[i])
					x[i] = float32(lo + (hi-lo)*rnd.Float64())
				}
			}
			th := m.Thresholds()
			if rnd.IntN(3) == 0 {
				th = Thresholds{MinConfidence: uint8(rnd.IntN(256)), MaxNovelty: uint32(rnd.IntN(20000))}
			}
			got := make([]float32, classes)
			o, err := m.PredictOutcome(got, z, x, th)
			if err != nil {
				t.Fatal(err)
			}
			class, _ := m.Predict(scores, x)
			for c := range got {
				if math.Float32bits(got[c]) != math.Float32bits(scores[c]) {
					t.Fatalf("scores %v, Predict's %v", got, scores)
				}
			}
			if o.Class != class {
				t.Fatalf("class %d, Predict says %d", o.Class, class)
			}
			best, second := float32(math.Inf(-1)), float32(math.Inf(-1))
			for c, s := range scores {
				if c == class {
					best = s
				} else if s > second {
					second = s
				}
			}
			if want := best - second; o.Margin != want {
				t.Fatalf("margin %g, want %g (scores %v)", o.Margin, want, scores)
			}
			bin := 0
			for _, e := range spec.Calibration.Edges {
				if o.Margin >= e {
					bin++
				}
			}
			if o.Bin != bin || o.Confidence != spec.Calibration.Confidence[bin] {
				t.Fatalf("bin %d confidence %d, want bin %d", o.Bin, o.Confidence, bin)
			}
			var nov float64
			for i, c := range spec.Fingerprint.Columns {
				p := float64(spec.Fingerprint.Rates[i])
				if z[c/64]>>(c%64)&1 == 0 {
					p = 255 - p
				}
				nov += math.Round(16 * -math.Log2((p+0.5)/256))
			}
			outside := 0
			if tc.outside > 0 {
				outside = outsideReference(t, spec.Scaler, x, int(tc.outside))
				nov += float64(outside)
			}
			if outside > 0 {
				far++
			}
			if float64(o.Novelty) != nov {
				t.Fatalf("novelty %d, want %v", o.Novelty, nov)
			}
			want := (th.MinConfidence > 0 && o.Confidence < th.MinConfidence) || (th.MaxNovelty > 0 && o.Novelty > th.MaxNovelty)
			if o.Unknown != want {
				t.Fatalf("unknown %v under %+v for %+v", o.Unknown, th, o)
			}
			if o.Unknown {
				unknown++
			}
		}
		if unknown == 0 || unknown == 300 {
			t.Errorf("%d classes: %d of 300 unknown: the test does not exercise both answers", classes, unknown)
		}
		if tc.outside > 0 && (far == 0 || far == 300) {
			t.Errorf("%d of 300 inputs out of range: the test does not exercise the out-of-range term", far)
		}
	}
}

// outsideReference is the documented out-of-range term of raw x with
// weight w (scaling.outside), from the scaler's unclipped values.
func outsideReference(t testing.TB, sc Scaler, x []float32, w int) int {
	u := make([]float32, len(x))
	if err := (&Scaler{Lo: sc.Lo, Hi: sc.Hi}).Apply(u, x); err != nil {
		t.Fatal(err)
	}
	n := 0
	for i, v := range x {
		switch {
		case v != v:
		case sc.Hi[i] == sc.Lo[i]:
			if v != sc.Lo[i] {
				n += 2 * w
			}
		case u[i] > 1 || u[i] < -1:
			e := math.Min(1, math.Abs(float64(u[i]))-1)
			n += w + int(math.Floor(float64(float32(e)*float32(w))))
		}
	}
	return n
}

// TestOutsideTerm pins the out-of-range term on hand-picked values:
// inside the range, just past either end, far past (capped), a constant
// feature, missing and infinite values.
func TestOutsideTerm(t *testing.T) {
	// Scaled u = (v − 0)·2/4 − 1 on feature 0: range [0, 4], half-range 2.
	sc, err := (&Scaler{Lo: []float32{0, 5}, Hi: []float32{4, 5}}).prepare(2)
	if err != nil {
		t.Fatal(err)
	}
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	const w = 100
	for _, c := range []struct {
		x    []float32
		want uint32
	}{
		{[]float32{0, 5}, 0},
		{[]float32{4, 5}, 0},
		{[]float32{2, nan}, 0},
		{[]float32{nan, nan}, 0},
		{[]float32{4.5, 5}, w + 25},  // e = 0.25 half-ranges
		{[]float32{-0.5, 5}, w + 25}, // the same below
		{[]float32{5.4, 5}, w + 70},  // e = 0.7 (0.70000005 in float32: ⌊70.000005⌋)
		{[]float32{6, 5}, 2 * w},     // e = 1
		{[]float32{100, 5}, 2 * w},   // capped
		{[]float32{inf, 5}, 2 * w},
		{[]float32{-inf, 5}, 2 * w},
		{[]float32{2, 5.5}, 2 * w}, // constant in training, not now
		{[]float32{4.5, 6}, w + 25 + 2*w},
	} {
		if got := sc.outside(&cpu, c.x, w); got != c.want {
			t.Errorf("outside(%v) = %d, want %d", c.x, got, c.want)
		}
		if sum := outsideReference(t, Scaler{Lo: []float32{0, 5}, Hi: []float32{4, 5}}, c.x, w); uint32(sum) != c.want {
			t.Errorf("reference(%v) = %d, want %d", c.x, sum, c.want)
		}
	}
}

func TestPredictOutcomeAllocatesNothing(t *testing.T) {
	spec := calibratedSpec(t, 7, 20, 512, 4)
	spec.Calibration.Outside = 300
	m, err := New(spec)
	if err != nil {
		t.Fatal(err)
	}
	x := make([]float32, 20)
	z := make([]uint64, m.words)
	th := m.Thresholds()
	m.PredictOutcome(nil, z, x, th)
	if n := testing.AllocsPerRun(100, func() { m.PredictOutcome(nil, z, x, th) }); n != 0 {
		t.Fatalf("PredictOutcome allocates %v times per call", n)
	}
}

// outcomeShapes are the models the confidence benchmarks time.
var outcomeShapes = []struct {
	name          string
	d, p, classes int
}{
	{"sensor(8,thresholds,1024,3)", 8, 1024, 3},
	{"wall-following(24,thresholds,4096,4)", 24, 4096, 4},
	{"mnist(784,proj32,12288,10)", 784, 12288, 10},
}

// outcomeModel is a calibrated model of shape bc and an input for it.
func outcomeModel(b *testing.B, bc struct {
	name          string
	d, p, classes int
}) (*Model, []float32) {
	spec := calibratedSpec(b, 3, bc.d, bc.p, bc.classes)
	spec.Calibration.Outside = 500 // as trained bundles have it
	m, err := New(spec)
	if err != nil {
		b.Fatal(err)
	}
	// Inside every feature's training range, as nearly all of a
	// gateway's windows are (the out-of-range term's branches then go one
	// way).
	x := make([]float32, bc.d)
	for i := range x {
		lo, hi := spec.Scaler.Lo[i], spec.Scaler.Hi[i]
		x[i] = lo + (hi-lo)*float32(i%7)/7
	}
	return m, x
}

// BenchmarkPredictOutcome runs Predict and PredictOutcome (margin,
// calibration, a 256-column novelty, the out-of-range term) on the same models: the difference
// is what confidence and unknown cost a prediction.
func BenchmarkPredictOutcome(b *testing.B) {
	for _, bc := range outcomeShapes {
		m, x := outcomeModel(b, bc)
		scores := make([]float32, bc.classes)
		z := make([]uint64, m.words)
		th := m.Thresholds()
		b.Run(bc.name+"/predict", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				m.Predict(scores, x)
			}
		})
		b.Run(bc.name+"/outcome", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				m.PredictOutcome(scores, z, x, th)
			}
		})
	}
}

// BenchmarkConfidenceOnly times what PredictOutcome adds to a prediction
// alone — the margin, the calibration bin, a 256-column novelty and the
// out-of-range term over the raw features — on
// a window's integer scores and kept bits, so its share of a prediction
// (BenchmarkPredictOutcome's predict) can be read on a loaded machine.
func BenchmarkConfidenceOnly(b *testing.B) {
	for _, bc := range outcomeShapes {
		m, x := outcomeModel(b, bc)
		z := make([]uint64, m.words)
		raw := make([]int32, m.nv)
		m.PredictRaw(raw, x)
		m.EmbedKept(z, x)
		cal := m.spec.Calibration
		b.Run(bc.name, func(b *testing.B) {
			var sink uint32
			for b.Loop() {
				mg := m.margin(raw)
				sink += uint32(cal.Confidence[cal.Bin(mg)]) + m.nov.novelty(&m.emb.k, z) + m.emb.sc.outside(&m.emb.k, x, uint32(cal.Outside))
			}
			_ = sink
		})
	}
}

// TestNoveltySumMatchesReference: the prepared sum (its fast path and
// the Go loop) equals Novelty's documented loop on random fingerprints of
// many sizes, columns up to the last kept one, and random bits.
func TestNoveltySumMatchesReference(t *testing.T) {
	rnd := rand.New(rand.NewPCG(28, 35))
	for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 17, 255, 256, 1000, MaxFingerprint} {
		for trial := range 20 {
			kept := n + rnd.IntN(3000)
			if trial%4 == 0 {
				kept = n // every column, the last one included
			}
			cols := rnd.Perm(kept)[:n]
			if n > 0 && trial%2 == 1 && !slices.Contains(cols, kept-1) {
				cols[0] = kept - 1
			}
			slices.Sort(cols)
			f := &Fingerprint{Columns: make([]int32, n), Rates: make([]uint8, n)}
			for i, c := range cols {
				f.Columns[i] = int32(c)
				f.Rates[i] = uint8(rnd.IntN(256))
				if trial%3 == 0 {
					f.Rates[i] = []uint8{0, 255}[rnd.IntN(2)]
				}
			}
			if err := f.Validate(kept); err != nil {
				t.Fatal(err)
			}
			ns := newNoveltySum(f)
			z := make([]uint64, (kept+63)/64)
			for bits := range 4 {
				for w := range z {
					switch bits {
					case 0:
						z[w] = 0
					case 1:
						z[w] = ^uint64(0)
					default:
						z[w] = rnd.Uint64()
					}
				}
				want := f.Novelty(z)
				if got := ns.novelty(&cpu, z); got != want {
					t.Fatalf("n=%d kept=%d trial %d bits %d: %s %d, reference %d", n, kept, trial, bits, simdName, got, want)
				}
				if got := ns.novelty(&goKernels, z); got != want {
					t.Fatalf("n=%d kept=%d trial %d bits %d: Go %d, reference %d", n, kept, trial, bits, got, want)
				}
			}
		}
	}
}

// BenchmarkNovelty times the documented loop against the prepared sum
// on a 256-column fingerprint of 1,024 kept columns.
func BenchmarkNovelty(b *testing.B) {
	rnd := rand.New(rand.NewPCG(28, 36))
	f := &Fingerprint{}
	for c := 0; c < 1024; c += 4 {
		f.Columns = append(f.Columns, int32(c))
		f.Rates = append(f.Rates, uint8(rnd.IntN(256)))
	}
	z := make([]uint64, 16)
	for w := range z {
		z[w] = rnd.Uint64()
	}
	ns := newNoveltySum(f)
	var sink uint32
	b.Run("reference", func(b *testing.B) {
		for b.Loop() {
			sink += f.Novelty(z)
		}
	})
	b.Run("go", func(b *testing.B) {
		for b.Loop() {
			sink += ns.novelty(&goKernels, z)
		}
	})
	b.Run(simdName, func(b *testing.B) {
		for b.Loop() {
			sink += ns.novelty(&cpu, z)
		}
	})
	_ = sink
}

// TestOutsideFastPathMatchesGo: the out-of-range term's fast path gives
// the Go loop's sum on random scalers (constant features, ranges so
// narrow that k is infinite) and random inputs (inside, just past and far
// past the range, on its ends, NaN, ±Inf), every length up to 40 and 784.
func TestOutsideFastPathMatchesGo(t *testing.T) {
	rnd := rand.New(rand.NewPCG(28, 37))
	inf := float32(math.Inf(1))
	sizes := []int{784}
	for d := range 41 {
		sizes = append(sizes, d)
	}
	for _, d := range sizes {
		for trial := range 30 {
			s := &Scaler{Lo: make([]float32, d), Hi: make([]float32, d)}
			for i := range d {
				lo := float32(rnd.NormFloat64() * 10)
				s.Lo[i], s.Hi[i] = lo, lo+float32(rnd.ExpFloat64()*5)
				switch rnd.IntN(8) {
				case 0:
					s.Hi[i] = lo // constant
				case 1:
					s.Hi[i] = math.Nextafter32(lo, inf) // k may be +Inf
				}
			}
			sc, err := s.prepare(d)
			if err != nil {
				t.Fatal(err)
			}
			x := make([]float32, d)
			for i := range x {
				lo, hi := s.Lo[i], s.Hi[i]
				switch rnd.IntN(9) {
				case 0:
					x[i] = float32(math.NaN())
				case 1:
					x[i] = []float32{inf, -inf}[rnd.IntN(2)]
				case 2:
					x[i] = []float32{lo, hi}[rnd.IntN(2)]
				case 3:
					x[i] = hi + (hi-lo)*float32(rnd.Float64()) // up to a range past
				case 4:
					x[i] = lo - (hi-lo)*float32(rnd.Float64())
				case 5:
					x[i] = float32(rnd.NormFloat64() * 1e6)
				default:
					x[i] = lo + (hi-lo)*float32(rnd.Float64())
				}
			}
			for _, w := range []uint32{1, 7, 300, MaxOutsideWeight} {
				got, want := sc.outside(&cpu, x, w), sc.outside(&goKernels, x, w)
				if got != want {
					t.Fatalf("d=%d trial %d w=%d: %s %d, Go %d", d, trial, w, simdName, got, want)
				}
			}
		}
	}
}

// TestOffsetsMoveTheDecision: an offset is added to its vector's integer
// score before the scale, so Predict, PredictRaw and PredictOutcome move
// together: a large enough offset makes its class win every input, and
// the margin is computed from the moved scores.
func TestOffsetsMoveTheDecision(t *testing.T) {
	for _, classes := range []int{2, 5} {
		spec := calibratedSpec(t, 11, 8, 256, classes)
		plain, err := New(spec)
		if err != nil {
			t.Fatal(err)
		}
		nv := Vectors(classes)
		moved := *spec
		cal := *spec.Calibration
		cal.Offsets = make([]int32, nv)
		cal.Offsets[nv-1] = MaxOffset // the last vector: class 1 of two, the last class of five
		moved.Calibration = &cal
		m, err := New(&moved)
		if err != nil {
			t.Fatal(err)
		}
		rnd := rand.New(rand.NewPCG(4, uint64(classes)))
		raw0, raw1 := make([]int32, nv), make([]int32, nv)
		for range 100 {
			x := make([]float32, 8)
			for i := range x {
				x[i] = float32(rnd.NormFloat64() * 3)
			}
			plain.PredictRaw(raw0, x)
			c, _ := m.PredictRaw(raw1, x)
			if c != classes-1 || raw1[nv-1] != raw0[nv-1]+MaxOffset || raw1[0] != raw0[0] && nv > 1 {
				t.Fatalf("%d classes: class %d, raw %v from %v", classes, c, raw1, raw0)
			}
			o, _ := m.PredictOutcome(nil, nil, x, m.Thresholds())
			if o.Class != c || !(o.Margin > 0) {
				t.Fatalf("%d classes: outcome %+v, Predict's class %d", classes, o, c)
			}
		}
		cal.Offsets = cal.Offsets[:nv-1]
		if _, err := New(&moved); err == nil && nv > 1 {
			t.Errorf("%d classes: %d offsets accepted for %d vectors", classes, nv-1, nv)
		}
		cal.Offsets = append(make([]int32, nv-1), MaxOffset+1)
		if _, err := New(&moved); !errors.Is(err, ErrCalibration) {
			t.Errorf("offset past MaxOffset: %v", err)
		}
	}
}
