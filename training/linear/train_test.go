package linear

import (
	"errors"
	"math"
	"runtime"
	"slices"
	"testing"
)

func sameBits(a, b *Model) bool {
	if len(a.W) != len(b.W) || math.Float64bits(a.Bias) != math.Float64bits(b.Bias) ||
		a.Iter != b.Iter || a.Converged != b.Converged {
		return false
	}
	for j := range a.W {
		if math.Float64bits(a.W[j]) != math.Float64bits(b.W[j]) {
			return false
		}
	}
	return true
}

func TestDeterministic(t *testing.T) {
	const n, p = 300, 16
	x, y := blobs(8, n, p, 1, 1)
	opt := &Options{Bias: 1, Seed: 12345}
	a, err := Train(x, n, p, y, opt)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Train(x, n, p, y, opt)
	if err != nil {
		t.Fatal(err)
	}
	if !sameBits(a, b) {
		t.Error("two runs with the same seed differ")
	}
	// Another seed visits rows in another order: a different point, but
	// an equally good one.
	c, err := Train(x, n, p, y, &Options{Bias: 1, Seed: 54321})
	if err != nil {
		t.Fatal(err)
	}
	if sameBits(a, c) {
		t.Error("seeds 12345 and 54321 gave bit-identical models; is the seed used?")
	}
	oa, oc := Objective(a, x, n, p, y, opt), Objective(c, x, n, p, y, opt)
	if math.Abs(oa-oc) > 1e-2*oa {
		t.Errorf("objectives for two seeds differ too much: %v vs %v", oa, oc)
	}
}

func TestOneVsRest(t *testing.T) {
	const n, p, classes = 240, 8, 5
	x, _ := blobs(6, n, p, 1, 1)
	labels := make([]int32, n)
	for i := range labels {
		// Class from the first two features' quadrant plus a remainder, so
		// the classes are partly learnable and unbalanced.
		c := int32(0)
		if x[i*p] > 0 {
			c++
		}
		if x[i*p+1] > 0 {
			c += 2
		}
		if i%17 == 0 {
			c = 4
		}
		labels[i] = c
	}
	opt := &Options{Bias: 1, Seed: 3, Loss: SquaredHinge}

	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	runtime.GOMAXPROCS(1)
	one, err := TrainOneVsRest(x, n, p, labels, classes, opt)
	if err != nil {
		t.Fatal(err)
	}
	runtime.GOMAXPROCS(4)
	four, err := TrainOneVsRest(x, n, p, labels, classes, opt)
	if err != nil {
		t.Fatal(err)
	}
	if len(one) != classes || len(four) != classes {
		t.Fatalf("got %d and %d models, want %d", len(one), len(four), classes)
	}
	for c := range classes {
		if !sameBits(one[c], four[c]) {
			t.Errorf("class %d: GOMAXPROCS 1 and 4 give different models", c)
		}
		// Each model is exactly the two-class model of c against the rest.
		y := make([]int8, n)
		for i, l := range labels {
			y[i] = -1
			if int(l) == c {
				y[i] = 1
			}
		}
		m, err := Train(x, n, p, y, opt)
		if err != nil {
			t.Fatal(err)
		}
		if !sameBits(m, four[c]) {
			t.Errorf("class %d: one-vs-rest model differs from Train on c-vs-rest labels", c)
		}
	}
	// The quadrant classes are learnable: most rows get their class.
	ok := 0
	for i := range n {
		best, arg := math.Inf(-1), -1
		for c, m := range four {
			if d := m.Decision(x[i*p : (i+1)*p]); d > best {
				best, arg = d, c
			}
		}
		if arg == int(labels[i]) {
			ok++
		}
	}
	if acc := float64(ok) / n; acc < 0.7 {
		t.Errorf("one-vs-rest training accuracy %v, want ≥ 0.7", acc)
	}
}

func TestBadInput(t *testing.T) {
	x := []float32{1, 2, 3, 4, 5, 6}
	y := []int8{1, -1, 1}
	nan := float32(math.NaN())
	inf := float32(math.Inf(1))
	for _, tc := range []struct {
		name string
		x    []float32
		n, p int
		y    []int8
		opt  *Options
		want error
	}{
		{"n zero", nil, 0, 2, nil, nil, ErrShape},
		{"p negative", x, 3, -2, y, nil, ErrShape},
		{"short x", x[:5], 3, 2, y, nil, ErrShape},
		{"long y", x, 3, 2, []int8{1, 1, 1, 1}, nil, ErrShape},
		{"label 0", x, 3, 2, []int8{1, 0, -1}, nil, ErrLabel},
		{"label 2", x, 3, 2, []int8{1, 2, -1}, nil, ErrLabel},
		{"NaN", []float32{1, 2, 3, nan, 5, 6}, 3, 2, y, nil, ErrNonFinite},
		{"Inf", []float32{1, 2, 3, 4, 5, inf}, 3, 2, y, nil, ErrNonFinite},
		{"C negative", x, 3, 2, y, &Options{C: -1}, ErrOption},
		{"C NaN", x, 3, 2, y, &Options{C: math.NaN()}, ErrOption},
		{"C Inf", x, 3, 2, y, &Options{C: math.Inf(1)}, ErrOption},
		{"C from bad lambda", x, 3, 2, y, &Options{C: CFromLambda(0, 3)}, ErrOption},
		{"loss", x, 3, 2, y, &Options{Loss: 7}, ErrOption},
		{"Eps negative", x, 3, 2, y, &Options{Eps: -0.1}, ErrOption},
		{"MaxIter negative", x, 3, 2, y, &Options{MaxIter: -1}, ErrOption},
		{"Bias negative", x, 3, 2, y, &Options{Bias: -1}, ErrOption},
		{"Bias NaN", x, 3, 2, y, &Options{Bias: nan}, ErrOption},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Train(tc.x, tc.n, tc.p, tc.y, tc.opt)
			if !errors.Is(err, tc.want) || m != nil {
				t.Errorf("Train: got (%v, %v), want error %v", m, err, tc.want)
			}
			// The same problem through one-vs-rest, labels 1 → 1, else 0.
			var labels []int32
			for _, v := range tc.y {
				labels = append(labels, int32(max(v, 0)))
			}
			if tc.want == ErrLabel {
				labels[1] = -1
			}
			ms, err := TrainOneVsRest(tc.x, tc.n, tc.p, labels, 2, tc.opt)
			if !errors.Is(err, tc.want) || ms != nil {
				t.Errorf("TrainOneVsRest: got (%v, %v), want error %v", ms, err, tc.want)
			}
		})
	}
	// n·p overflowing int is caught before len(x) is compared.
	if _, err := newProblem(x, math.MaxInt32, math.MaxInt/16, 0); !errors.Is(err, ErrShape) {
		t.Errorf("n·p overflow: got %v, want ErrShape", err)
	}
	if _, err := newProblem(x, math.MaxInt32+1, 1, 0); !errors.Is(err, ErrShape) {
		t.Errorf("n > MaxInt32: got %v, want ErrShape", err)
	}
	labels := []int32{0, 1, 2}
	for _, tc := range []struct {
		name    string
		labels  []int32
		classes int
		want    error
	}{
		{"one class", []int32{0, 0, 0}, 1, ErrLabel},
		{"label ≥ classes", labels, 2, ErrLabel},
		{"negative label", []int32{0, -1, 1}, 3, ErrLabel},
		{"short labels", labels[:2], 3, ErrShape},
	} {
		if _, err := TrainOneVsRest(x, 3, 2, tc.labels, tc.classes, nil); !errors.Is(err, tc.want) {
			t.Errorf("TrainOneVsRest %s: got %v, want %v", tc.name, err, tc.want)
		}
	}
}

func TestDecisionAndObjective(t *testing.T) {
	m := &Model{W: []float64{2, -1}, Bias: 0.5}
	if got := m.Decision([]float32{1, 3}); got != -0.5 {
		t.Errorf("Decision = %v, want 2·1 − 1·3 + 0.5 = −0.5", got)
	}
	if got := m.Decision([]float32{1}); !math.IsNaN(got) {
		t.Errorf("Decision on a short row = %v, want NaN", got)
	}
	if got := (*Model)(nil).Decision(nil); !math.IsNaN(got) {
		t.Errorf("nil Decision = %v, want NaN", got)
	}

	x := []float32{1, 3, 0, 2, 1, 0}
	y := []int8{1, -1, 1}
	// f = −0.5, −1.5, 2.5; y·f = −0.5, 1.5, 2.5; hinge losses 1.5, 0, 0.
	// Bias 0.25 means w_b = 2, so ½‖(2, −1, 2)‖² = 4.5.
	opt := &Options{C: 2, Bias: 0.25}
	if got, want := Objective(m, x, 3, 2, y, opt), 4.5+2*1.5; math.Abs(got-want) > 1e-12 {
		t.Errorf("hinge Objective = %v, want %v", got, want)
	}
	opt.Loss = SquaredHinge
	if got, want := Objective(m, x, 3, 2, y, opt), 4.5+2*2.25; math.Abs(got-want) > 1e-12 {
		t.Errorf("squared-hinge Objective = %v, want %v", got, want)
	}
	for name, got := range map[string]float64{
		"bias without opt.Bias": Objective(m, x, 3, 2, y, nil),
		"wrong p":               Objective(m, x, 2, 3, y[:2], opt),
		"bad label":             Objective(m, x, 3, 2, []int8{1, 0, 1}, opt),
		"nil model":             Objective(nil, x, 3, 2, y, opt),
		"bad options":           Objective(m, x, 3, 2, y, &Options{C: -1}),
	} {
		if !math.IsNaN(got) {
			t.Errorf("Objective with %s = %v, want NaN", name, got)
		}
	}
}

func TestCFromLambda(t *testing.T) {
	if got := CFromLambda(0.01, 50); math.Abs(got-1) > 1e-15 {
		t.Errorf("CFromLambda(0.01, 50) = %v, want 1", got)
	}
	// Same minimiser: λ‖w‖² + (1/n)Σξ = (½‖w‖² + CΣξ)·2λ.
	const n, p, lambda = 100, 4, 0.003
	x, y := blobs(2, n, p, 1, 1)
	opt := &Options{C: CFromLambda(lambda, n), Eps: 1e-8}
	m, err := Train(x, n, p, y, opt)
	if err != nil {
		t.Fatal(err)
	}
	paper := func(w []float64) float64 {
		var reg, loss float64
		for _, v := range w {
			reg += v * v
		}
		for i := range n {
			loss += max(0, 1-float64(y[i])*dot(w, x[i*p:(i+1)*p]))
		}
		return lambda*reg + loss/n
	}
	if got, want := paper(m.W), 2*lambda*Objective(m, x, n, p, y, opt); math.Abs(got-want) > 1e-12 {
		t.Errorf("λ-form objective %v, 2λ·C-form %v", got, want)
	}
	// Perturbing the solution cannot lower the λ-form objective.
	base := paper(m.W)
	for j := range p {
		for _, h := range []float64{-1e-3, 1e-3} {
			w := append([]float64(nil), m.W...)
			w[j] += h
			if paper(w) < base-1e-9 {
				t.Errorf("moving w[%d] by %v lowers the λ-form objective", j, h)
			}
		}
	}
	for _, bad := range []struct {
		lambda float64
		n      int
	}{{0, 1}, {-1, 1}, {math.NaN(), 1}, {math.Inf(1), 1}, {1, 0}} {
		if c := CFromLambda(bad.lambda, bad.n); !math.IsNaN(c) {
			t.Errorf("CFromLambda(%v, %d) = %v, want NaN", bad.lambda, bad.n, c)
		}
	}
}

func TestLossString(t *testing.T) {
	for l, want := range map[Loss]string{Hinge: "hinge", SquaredHinge: "squared-hinge", 5: "Loss(5)"} {
		if got := l.String(); got != want {
			t.Errorf("Loss(%d).String() = %q, want %q", int(l), got, want)
		}
	}
}

// TestInt8RowsSameModel: rows of small integers give the same model as
// int8 and as float32 — bit for bit, one-vs-rest too — since every int8
// is exactly a float32.
func TestInt8RowsSameModel(t *testing.T) {
	const n, p = 400, 37
	xf, y := blobs(5, n, p, 2, 1)
	xi := make([]int8, len(xf))
	for i, v := range xf {
		xi[i] = int8(max(-127, min(127, math.Round(float64(v)*20))))
		xf[i] = float32(xi[i])
	}
	opt := &Options{C: 0.5, Bias: 1, Seed: 3}
	mf, err := Train(xf, n, p, y, opt)
	if err != nil {
		t.Fatal(err)
	}
	mi, err := Train(xi, n, p, y, opt)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(mf.W, mi.W) || mf.Bias != mi.Bias || mf.Iter != mi.Iter {
		t.Fatalf("int8 rows: %d iterations, bias %g; float32: %d, %g", mi.Iter, mi.Bias, mf.Iter, mf.Bias)
	}
	labels := make([]int32, n)
	for i := range labels {
		labels[i] = int32(i % 3)
	}
	of, err := TrainOneVsRest(xf, n, p, labels, 3, opt)
	if err != nil {
		t.Fatal(err)
	}
	oi, err := TrainOneVsRest(xi, n, p, labels, 3, opt)
	if err != nil {
		t.Fatal(err)
	}
	for c := range of {
		if !slices.Equal(of[c].W, oi[c].W) || of[c].Bias != oi[c].Bias {
			t.Fatalf("one-vs-rest class %d differs", c)
		}
	}
}
