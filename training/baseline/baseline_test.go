package baseline

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/trit-iot/trit/training"
	"github.com/trit-iot/trit/training/data"
)

func TestPaperMemoryMatchesPaperTable(t *testing.T) {
	// Table 2 of the paper, in KB (1024 bytes), p = 2048: usps (d = 256,
	// 10 classes), covtype (d = 54, 2 classes), mnist (d = 780, 10 classes).
	cases := []struct {
		m       Method
		d, c    int
		wantKiB float64
	}{
		{RFE, 256, 10, 2136}, {RFE, 54, 1, 448}, {RFE, 780, 10, 6328},
		{BJLE, 256, 10, 2128.25}, {BCSIK, 54, 1, 440.25}, {BJLE, 780, 10, 6320.25},
	}
	for _, tc := range cases {
		got := float64(PaperMemory(tc.m, tc.d, 2048, tc.c).Total()) / 1024
		if got != tc.wantKiB {
			t.Errorf("%v d=%d c=%d: %.2f KiB, want %.2f", tc.m, tc.d, tc.c, got, tc.wantKiB)
		}
	}
	ff := PaperMemory(Fastfood, 256, 2048, 10)
	tt := PaperMemory(TritTernary, 256, 2048, 10)
	if ff.Transformation != 5*2048*4 || tt.Transformation != ff.Transformation {
		t.Errorf("Fastfood-type transformation = %d, %d bytes, want %d", ff.Transformation, tt.Transformation, 5*2048*4)
	}
	if tt.Embedding != 256 || tt.Classifier != 10*2048/8 {
		t.Errorf("ternary embedding %d, classifier %d bytes; want 256, 2560", tt.Embedding, tt.Classifier)
	}
}

func TestParseMethod(t *testing.T) {
	for _, m := range Methods() {
		got, err := ParseMethod(m.String())
		if err != nil || got != m {
			t.Errorf("ParseMethod(%q) = %v, %v", m.String(), got, err)
		}
	}
	if _, err := ParseMethod("svm"); !errors.Is(err, ErrMethod) {
		t.Errorf("ParseMethod(svm) error %v, want ErrMethod", err)
	}
}

// The cos maps must approximate the Gaussian kernel: E[z(x)ᵀz(y)] =
// exp(-‖x-y‖²/(2σ²)). With p = 16384 the standard deviation of the
// estimate is below 0.01.
func TestCosFeaturesApproximateGaussianKernel(t *testing.T) {
	const d, p, sigma = 8, 16384, 1.0
	x := []float32{0.1, -0.2, 0.3, 0.0, 0.5, -0.5, 0.2, 0.1}
	y := []float32{0.4, -0.1, 0.0, 0.2, 0.1, -0.3, -0.2, 0.3}
	var d2 float64
	for i := range x {
		d2 += float64((x[i] - y[i]) * (x[i] - y[i]))
	}
	want := math.Exp(-d2 / (2 * sigma * sigma))
	for _, m := range []Method{RFE, Fastfood} {
		fm, err := newMap(m, d, p, sigma, 7)
		if err != nil {
			t.Fatal(err)
		}
		zx, zy := make([]float32, p), make([]float32, p)
		s := fm.newScratch()
		fm.mapRow(zx, x, s)
		fm.mapRow(zy, y, s)
		var k, nx float64
		for j := range zx {
			k += float64(zx[j]) * float64(zy[j])
			nx += float64(zx[j]) * float64(zx[j])
		}
		if math.Abs(k-want) > 0.04 {
			t.Errorf("%v: z(x)ᵀz(y) = %.4f, kernel %.4f", m, k, want)
		}
		if math.Abs(nx-1) > 0.04 {
			t.Errorf("%v: ‖z(x)‖² = %.4f, want ≈ 1", m, nx)
		}
	}
}

// trit-full's features must be exactly the gateway's bits.
func TestTritFullUsesGatewayBits(t *testing.T) {
	const d, p = 5, 130
	fm, err := newMap(TritFull, d, p, 0.7, 3)
	if err != nil {
		t.Fatal(err)
	}
	ff := fm.(*fastfood)
	x := []float32{0.3, -0.9, 0.1, 0.5, -0.2}
	z := make([]float32, p)
	s := fm.newScratch()
	fm.mapRow(z, x, s)
	bits := make([]uint64, (p+63)/64)
	ff.tr.Embed(bits, x, ff.tr.NewWorkspace())
	for j := range p {
		if (z[j] > 0) != (bits[j/64]>>(j%64)&1 == 1) {
			t.Fatalf("column %d: feature %v, bit %d", j, z[j], bits[j/64]>>(j%64)&1)
		}
	}
}

func circles(t *testing.T) (train, test *data.Dataset) {
	t.Helper()
	ds := training.TwoCircles(600, 0.4, 0.05, 11)
	train, test, err := data.Split(ds, 0.3, 5)
	if err != nil {
		t.Fatal(err)
	}
	return train, test
}

var quick = &Config{P: 256, SigmaGrid: []float64{0.25, 1, 4}, CGrid: []float64{0.1, 10}, Seed: 1}

func TestFitEveryMethodOnTwoCircles(t *testing.T) {
	train, test := circles(t)
	for _, m := range Methods() {
		res, err := Fit(m, train, quick)
		if err != nil {
			t.Fatalf("%v: %v", m, err)
		}
		acc, err := Accuracy(res.Classifier, test, 0)
		if err != nil {
			t.Fatalf("%v: %v", m, err)
		}
		t.Logf("%-12v σ=%-5g C=%-4g test %.1f%% search %d points", m, res.Sigma, res.C, acc, len(res.Search))
		// sign(Rᵀx) only sees the angle of x, and the circles share their
		// centre: BJLE cannot separate them. Every other method must.
		if m == BJLE {
			if len(res.Search) != len(quick.CGrid) {
				t.Errorf("BJLE searched %d points, want only C (σ has no effect)", len(res.Search))
			}
			continue
		}
		if acc < 95 {
			t.Errorf("%v: test accuracy %.1f%%, want ≥ 95%%", m, acc)
		}
		if len(res.Search) != 6 {
			t.Errorf("%v: %d search points, want 6", m, len(res.Search))
		}
		if res.Vectors != 1 || res.Memory != PaperMemory(m, 2, 256, 1) {
			t.Errorf("%v: vectors %d, memory %+v", m, res.Vectors, res.Memory)
		}
		if m == TritTernary && (res.Spec == nil || res.NonZero == 0 || len(res.History) != 1) {
			t.Errorf("trit-ternary result lacks spec/nonzero/history")
		}
		sec, err := TimePerSample(res.Classifier, test, time.Millisecond)
		if err != nil || !(sec > 0) {
			t.Errorf("%v: TimePerSample = %g, %v", m, sec, err)
		}
	}
}

func TestFitIsDeterministic(t *testing.T) {
	train, test := circles(t)
	cfg := *quick
	cfg.SearchRows = 300
	for _, m := range []Method{RFE, BCSIK, TritFull} {
		a, err := Fit(m, train, &cfg)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Workers = 1 // the worker count must not matter
		b, err := Fit(m, train, &cfg)
		cfg.Workers = 0
		if err != nil {
			t.Fatal(err)
		}
		if a.SearchRows != 300 || a.Sigma != b.Sigma || a.C != b.C || len(a.Search) != len(b.Search) {
			t.Fatalf("%v: runs differ: %v/%v vs %v/%v", m, a.Sigma, a.C, b.Sigma, b.C)
		}
		for i := range a.Search {
			if a.Search[i].Accuracy != b.Search[i].Accuracy {
				t.Errorf("%v: search point %d: %v vs %v", m, i, a.Search[i].Accuracy, b.Search[i].Accuracy)
			}
		}
		pa, pb := a.Classifier.NewPredictor(), b.Classifier.NewPredictor()
		for i := range test.N {
			ca, _ := pa.Predict(test.Row(i))
			cb, _ := pb.Predict(test.Row(i))
			if ca != cb {
				t.Fatalf("%v: row %d predicted %d and %d", m, i, ca, cb)
			}
		}
	}
}

func TestFitMulticlass(t *testing.T) {
	// Three Gaussian blobs in 4 dimensions.
	ds := &data.Dataset{Name: "blobs", D: 4, Classes: []string{"a", "b", "c"}}
	r := uint64(9)
	next := func() float64 {
		r = r*6364136223846793005 + 1442695040888963407
		return float64(r>>11)/(1<<53) - 0.5
	}
	for i := range 300 {
		c := i % 3
		for j := range 4 {
			v := 0.3 * next()
			if j == c {
				v += 1
			}
			ds.X = append(ds.X, float32(v))
		}
		ds.Y = append(ds.Y, int32(c))
	}
	ds.N = 300
	for _, m := range []Method{RFE, TritFull, TritTernary} {
		res, err := Fit(m, ds, &Config{P: 128, Sigma: 1, C: 1, Seed: 2})
		if err != nil {
			t.Fatal(err)
		}
		if res.Vectors != 3 || res.Search != nil {
			t.Errorf("%v: vectors %d, search %v", m, res.Vectors, res.Search)
		}
		acc, err := Accuracy(res.Classifier, ds, 1)
		if err != nil || acc < 95 {
			t.Errorf("%v: training accuracy %.1f%%, %v", m, acc, err)
		}
	}
}

func TestFitRejectsBadInput(t *testing.T) {
	train, _ := circles(t)
	bad := []*Config{{P: -1}, {Sigma: math.NaN()}, {C: -1}, {Validation: 1}, {SigmaGrid: []float64{0}}, {MaxIter: -2}}
	for _, c := range bad {
		if _, err := Fit(RFE, train, c); !errors.Is(err, ErrConfig) {
			t.Errorf("Fit(%+v) error %v, want ErrConfig", c, err)
		}
	}
	one := train.Subset([]int{0})
	if _, err := Fit(RFE, one, nil); !errors.Is(err, ErrConfig) {
		t.Errorf("one row: error %v, want ErrConfig", err)
	}
	if _, err := Fit(Method(42), train, nil); !errors.Is(err, ErrMethod) {
		t.Errorf("bad method: error %v", err)
	}
}
