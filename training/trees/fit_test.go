package trees

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/trit-iot/trit/inference"
	"github.com/trit-iot/trit/training/internal/splitmix"
)

// grid returns m cuts evenly inside (−1, 1) for each of d features.
func grid(d, m int) [][]float32 {
	cuts := make([][]float32, d)
	for f := range cuts {
		for k := 1; k <= m; k++ {
			cuts[f] = append(cuts[f], float32(-1+2*float64(k)/float64(m+1)))
		}
	}
	return cuts
}

// checkerboard returns n rows of d uniform features in [−1, 1) labelled by
// label (a function of the row); labels of a share noise of the rows are
// replaced by random classes.
func checkerboard(n, d, classes int, noise float64, seed uint64, label func(x []float32) int) ([]float32, []int32) {
	r := splitmix.New(seed)
	xs := make([]float32, n*d)
	y := make([]int32, n)
	for i := range n {
		x := xs[i*d : (i+1)*d]
		for j := range x {
			x[j] = float32(2*r.Float64() - 1)
		}
		y[i] = int32(label(x))
		if r.Float64() < noise {
			y[i] = int32(r.Intn(classes))
		}
	}
	return xs, y
}

// board4 is a 4×4 checkerboard on features 0 and 1 (cells 0.5 wide): a
// sum of functions of one feature each (all that thresholds, or trees of
// depth 1, can express) does no better than chance on it.
func board4(x []float32) int {
	a := int(math.Floor(2 * (float64(x[0]) + 1)))
	b := int(math.Floor(2 * (float64(x[1]) + 1)))
	return (a + b) % 2
}

// xor4 is a 4-class problem of two XORs: features (0,1) and (2,3).
func xor4(x []float32) int {
	c := 0
	if (x[0] > 0) != (x[1] > 0) {
		c = 1
	}
	if (x[2] > 0) != (x[3] > 0) {
		c += 2
	}
	return c
}

func accuracy(e *ensemble, xs []float32, y []int32, d int) float64 {
	right := 0
	for i := range y {
		if e.predict(xs[i*d:(i+1)*d]) == int(y[i]) {
			right++
		}
	}
	return float64(right) / float64(len(y))
}

func TestCheckerboard(t *testing.T) {
	const n, d = 3000, 5
	xs, y := checkerboard(n, d, 2, 0, 1, board4)
	xt, yt := checkerboard(n, d, 2, 0, 2, board4)
	cuts := grid(d, 31)
	e, err := fit(xs, n, d, y, 2, cuts, &Options{Trees: 100, Depth: 4})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.trees.Validate(d); err != nil {
		t.Fatal(err)
	}
	train, test := accuracy(e, xs, y, d), accuracy(e, xt, yt, d)
	t.Logf("depth 4: train %.4f, test %.4f", train, test)
	if train < 0.98 || test < 0.96 {
		t.Errorf("depth 4: train accuracy %.4f, test %.4f; want ≥ 0.98, 0.96", train, test)
	}
	// The same budget of depth-1 trees (an additive model) cannot: the
	// board needs the interactions.
	e1, err := fit(xs, n, d, y, 2, cuts, &Options{Trees: 100, Depth: 1})
	if err != nil {
		t.Fatal(err)
	}
	a := accuracy(e1, xt, yt, d)
	t.Logf("depth 1: test %.4f", a)
	if a > 0.75 {
		t.Errorf("depth 1 reached test accuracy %.4f on a checkerboard", a)
	}
}

func TestMulticlass(t *testing.T) {
	const n, d = 4000, 6
	xs, y := checkerboard(n, d, 4, 0.05, 3, xor4)
	xt, yt := checkerboard(n, d, 4, 0, 4, xor4)
	e, err := fit(xs, n, d, y, 4, grid(d, 15), &Options{Trees: 60, Depth: 4, Subsample: 0.8, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	train, test := accuracy(e, xs, y, d), accuracy(e, xt, yt, d)
	t.Logf("train %.4f (5%% label noise), test %.4f", train, test)
	if train < 0.94 || test < 0.98 {
		t.Errorf("train accuracy %.4f, test %.4f; want ≥ 0.94, 0.98", train, test)
	}
}

// The training log-loss must fall over the rounds, and with full rows
// (Newton steps shrunk by η on a convex loss) at every round.
func TestLossFalls(t *testing.T) {
	const n, d = 2000, 4
	for _, classes := range []int{2, 3} {
		label := func(x []float32) int { return xor4(x) % classes }
		xs, y := checkerboard(n, d, classes, 0.1, 5, label)
		e, err := fit(xs, n, d, y, classes, grid(d, 15), &Options{Trees: 50, Depth: 3, trackLoss: true})
		if err != nil {
			t.Fatal(err)
		}
		first, last := e.loss[0], e.loss[len(e.loss)-1]
		t.Logf("%d classes: log-loss %.4f → %.4f", classes, first, last)
		if !(last < first/2) {
			t.Errorf("%d classes: log-loss %.4f → %.4f, want at least halved", classes, first, last)
		}
		for r := 1; r < len(e.loss); r++ {
			if e.loss[r] > e.loss[r-1] {
				t.Errorf("%d classes: log-loss rose at round %d: %.6f → %.6f", classes, r, e.loss[r-1], e.loss[r])
			}
		}
	}
}

// The trees do not depend on Workers: with and without held-out rows
// (which are scored beside the next tree's gradients when there are
// workers to spare), boosting to the end and stopping early.
func TestWorkersIdentical(t *testing.T) {
	// More rows than one chunk, and enough sampled rows and held-out rows
	// × scores for the serial passes to run beside the parallel ones
	// (overlapRows).
	const n, d, nv = 14000, 7, 3000
	xs, y := checkerboard(n, d, 3, 0.1, 6, func(x []float32) int { return xor4(x) % 3 })
	vx, vy := checkerboard(nv, d, 3, 0.1, 7, func(x []float32) int { return xor4(x) % 3 })
	if n*7/10 < overlapRows*11/10 || nv*3 < overlapRows {
		t.Fatalf("the rows no longer reach overlapRows = %d", overlapRows)
	}
	cuts := grid(d, 40)
	for _, c := range []struct {
		name  string
		opt   Options
		valid bool
	}{
		{"no held-out rows", Options{Trees: 20, Depth: 5, Subsample: 0.7, Seed: 9}, false},
		{"held-out rows", Options{Trees: 20, Depth: 5, Subsample: 0.7, Seed: 9}, true},
		{"stopping early", Options{Trees: 400, Depth: 5, Subsample: 0.7, Seed: 9, Patience: 3, LearningRate: 1}, true},
	} {
		opt := c.opt
		opt.trackLoss = true
		if c.valid {
			opt.Valid = &Rows{X: vx, N: nv, Y: vy}
		}
		var ref *ensemble
		for _, w := range []int{1, 4, 3} {
			opt.Workers = w
			e, err := fit(xs, n, d, y, 3, cuts, &opt)
			if err != nil {
				t.Fatal(err)
			}
			if ref == nil {
				ref = e
				if c.name == "stopping early" && e.trees.Count() == opt.Trees {
					t.Fatalf("%s: boosting did not stop (%d trees): the case tests nothing", c.name, e.trees.Count())
				}
				continue
			}
			if !slices.Equal(e.trees.Feature, ref.trees.Feature) || !slices.Equal(e.trees.Value, ref.trees.Value) ||
				!slices.Equal(e.values, ref.values) || !slices.Equal(e.loss, ref.loss) || !slices.Equal(e.train, ref.train) || e.best != ref.best {
				t.Errorf("%s: Workers = %d differs from Workers = 1", c.name, w)
			}
		}
	}
}

// Rows on the cuts and NaN rows must reach the same leaf through
// inference.Trees.Leaf as through the learner's binning: the scores the
// ensemble computes from Leaf equal, bit for bit, those boosting built.
func TestBinningMatchesLeaf(t *testing.T) {
	const n, d = 1500, 4
	cuts := grid(d, 7)
	cuts[2] = []float32{-0.5, 0, 0, 0.5} // a repeated cut
	cuts[3] = nil                        // never split
	r := splitmix.New(11)
	xs := make([]float32, n*d)
	y := make([]int32, n)
	for i := range n {
		x := xs[i*d : (i+1)*d]
		for j := range x {
			switch r.Intn(4) {
			case 0:
				x[j] = float32(math.NaN())
			case 1:
				if len(cuts[j]) > 0 {
					x[j] = cuts[j][r.Intn(len(cuts[j]))] // exactly on a cut
					break
				}
				fallthrough
			default:
				x[j] = float32(2*r.Float64() - 1)
			}
		}
		v := x[0] > 0 && x[2] <= 0 || x[1] > 0.25
		if v {
			y[i] = 1
		}
	}
	for _, classes := range []int{2, 3} {
		e, err := fit(xs, n, d, y, classes, cuts, &Options{Trees: 30, Depth: 3})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.trees.Validate(d); err != nil {
			t.Fatal(err)
		}
		for _, f := range e.trees.Feature {
			if f == 3 {
				t.Fatal("split a feature without cuts")
			}
		}
		s := make([]float64, e.k)
		bad := 0
		for i := range n {
			e.scores(s, xs[i*d:(i+1)*d])
			if !slices.Equal(s, e.train[i*e.k:(i+1)*e.k]) {
				bad++
			}
		}
		if bad > 0 {
			t.Errorf("%d classes: %d of %d rows reach other leaves through Trees.Leaf", classes, bad, n)
		}
	}
}

func TestBin(t *testing.T) {
	cuts := []float32{-1, -0.5, -0.5, 0, 0.25, 0.25, 0.25, 1}
	xs := append([]float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), -2, 2}, cuts...)
	for _, c := range cuts {
		xs = append(xs, math.Nextafter32(c, -2), math.Nextafter32(c, 2))
	}
	for _, x := range xs {
		b := bin(x, cuts)
		for k, c := range cuts {
			if (b > k) != (x > c) {
				t.Errorf("bin(%g) = %d, but x > cuts[%d] = %g is %v", x, b, k, c, x > c)
			}
		}
	}
}

// With nothing to learn (one class) every level falls back to a harmless
// test, and the trees are still valid.
func TestNoGain(t *testing.T) {
	const n, d = 200, 3
	xs, _ := checkerboard(n, d, 2, 0, 12, board4)
	y := make([]int32, n)
	cuts := grid(d, 5)
	cuts[0] = nil
	tr, err := Fit(xs, n, d, y, 2, cuts, &Options{Trees: 3, Depth: 4})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Validate(d); err != nil {
		t.Fatal(err)
	}
	for i, f := range tr.Feature {
		if f != 1 || tr.Value[i] != cuts[1][4] {
			t.Errorf("test %d is x[%d] > %g, want the fallback x[1] > %g", i, f, tr.Value[i], cuts[1][4])
		}
	}
}

func TestRefusals(t *testing.T) {
	const n, d = 10, 2
	xs, y := checkerboard(n, d, 2, 0, 13, board4)
	cuts := grid(d, 3)
	ok := Options{Trees: 2}
	type input struct {
		xs      []float32
		n, d    int
		y       []int32
		classes int
		cuts    [][]float32
		opt     *Options
	}
	good := func() input { return input{xs, n, d, y, 2, cuts, &ok} }
	for name, c := range map[string]struct {
		edit func(*input)
		want error
	}{
		"nil options":       {func(in *input) { in.opt = nil }, ErrOptions},
		"no trees":          {func(in *input) { in.opt = &Options{} }, ErrOptions},
		"too many trees":    {func(in *input) { in.opt = &Options{Trees: inference.MaxTrees + 1} }, ErrOptions},
		"depth 9":           {func(in *input) { in.opt = &Options{Trees: 1, Depth: inference.MaxTreeDepth + 1} }, ErrOptions},
		"negative depth":    {func(in *input) { in.opt = &Options{Trees: 1, Depth: -1} }, ErrOptions},
		"learning rate 2":   {func(in *input) { in.opt = &Options{Trees: 1, LearningRate: 2} }, ErrOptions},
		"NaN learning rate": {func(in *input) { in.opt = &Options{Trees: 1, LearningRate: math.NaN()} }, ErrOptions},
		"negative lambda":   {func(in *input) { in.opt = &Options{Trees: 1, Lambda: -1} }, ErrOptions},
		"infinite lambda":   {func(in *input) { in.opt = &Options{Trees: 1, Lambda: math.Inf(1)} }, ErrOptions},
		"negative MinLeaf":  {func(in *input) { in.opt = &Options{Trees: 1, MinLeaf: -1} }, ErrOptions},
		"subsample 1.5":     {func(in *input) { in.opt = &Options{Trees: 1, Subsample: 1.5} }, ErrOptions},
		"negative workers":  {func(in *input) { in.opt = &Options{Trees: 1, Workers: -1} }, ErrOptions},
		"no rows":           {func(in *input) { in.n, in.xs, in.y = 0, nil, nil }, ErrData},
		"short xs":          {func(in *input) { in.xs = in.xs[:n*d-1] }, ErrData},
		"short y":           {func(in *input) { in.y = in.y[:n-1] }, ErrData},
		"one class":         {func(in *input) { in.classes = 1 }, ErrData},
		"label too big":     {func(in *input) { in.y = append([]int32{2}, y[1:]...) }, ErrData},
		"negative label":    {func(in *input) { in.y = append([]int32{-1}, y[1:]...) }, ErrData},
		"cuts for 1":        {func(in *input) { in.cuts = cuts[:1] }, ErrData},
		"no cuts":           {func(in *input) { in.cuts = [][]float32{nil, {}} }, ErrData},
		"NaN cut":           {func(in *input) { in.cuts = [][]float32{{0, float32(math.NaN())}, {0}} }, ErrData},
		"infinite cut":      {func(in *input) { in.cuts = [][]float32{{float32(math.Inf(-1))}, {0}} }, ErrData},
		"descending cuts":   {func(in *input) { in.cuts = [][]float32{{0.5, 0}, {0}} }, ErrData},
		"too many cuts":     {func(in *input) { in.cuts = [][]float32{make([]float32, maxCuts+1), {0}} }, ErrData},
	} {
		in := good()
		c.edit(&in)
		tr, err := Fit(in.xs, in.n, in.d, in.y, in.classes, in.cuts, in.opt)
		if !errors.Is(err, c.want) || tr != nil {
			t.Errorf("%s: got %v, %v; want %v", name, tr, err, c.want)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
	in := good()
	if _, err := Fit(in.xs, in.n, in.d, in.y, in.classes, in.cuts, in.opt); err != nil {
		t.Errorf("valid input refused: %v", err)
	}
}

// More than 255 cuts takes the uint16 bins.
func TestWideBins(t *testing.T) {
	const n, d = 2000, 3
	xs, y := checkerboard(n, d, 2, 0, 14, board4)
	e, err := fit(xs, n, d, y, 2, grid(d, 1000), &Options{Trees: 60, Depth: 4})
	if err != nil {
		t.Fatal(err)
	}
	if a := accuracy(e, xs, y, d); a < 0.97 {
		t.Errorf("training accuracy %.4f with 1000 cuts, want ≥ 0.97", a)
	}
	s := make([]float64, 1)
	for i := range n {
		e.scores(s, xs[i*d:(i+1)*d])
		if s[0] != e.train[i] {
			t.Fatalf("row %d: Trees.Leaf scores %g, boosting %g", i, s[0], e.train[i])
		}
	}
}

// BenchmarkFit fits 400 depth-6 trees on wall-following-sized data: 5,000
// rows of 24 features, 4 classes, 128 cuts per feature.
func BenchmarkFit(b *testing.B) {
	const n, d = 5000, 24
	xs, y := checkerboard(n, d, 4, 0.05, 15, xor4)
	cuts := grid(d, 128)
	opt := &Options{Trees: 400, Depth: 6}
	for b.Loop() {
		if _, err := Fit(xs, n, d, y, 4, cuts, opt); err != nil {
			b.Fatal(err)
		}
	}
}

// Without room to keep histograms, every level is summed from all rows:
// the same trees on this data (the gains differ only in rounding).
func TestDirectHistograms(t *testing.T) {
	const n, d = 3000, 5
	xs, y := checkerboard(n, d, 3, 0.05, 16, func(x []float32) int { return xor4(x) % 3 })
	cuts := grid(d, 31)
	opt := &Options{Trees: 30, Depth: 5, Subsample: 0.9, Seed: 3}
	kept, err := fit(xs, n, d, y, 3, cuts, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer func(v int) { keepBytes = v }(keepBytes)
	keepBytes = 0
	direct, err := fit(xs, n, d, y, 3, cuts, opt)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(kept.trees.Feature, direct.trees.Feature) || !slices.Equal(kept.trees.Value, direct.trees.Value) {
		t.Errorf("direct histograms grew other trees:\n%v %v\n%v %v", kept.trees.Feature, kept.trees.Value, direct.trees.Feature, direct.trees.Value)
	}
	if a := accuracy(direct, xs, y, d); a < 0.9 {
		t.Errorf("direct histograms: training accuracy %.4f, want ≥ 0.9", a)
	}
}

// Every split leaves at least MinLeaf rows each side; an impossible
// MinLeaf leaves only the fallback test.
func TestMinLeaf(t *testing.T) {
	const n, d = 1000, 3
	xs, y := checkerboard(n, d, 2, 0.1, 17, board4)
	cuts := grid(d, 63)
	tr, err := Fit(xs, n, d, y, 2, cuts, &Options{Trees: 20, Depth: 4, MinLeaf: 300})
	if err != nil {
		t.Fatal(err)
	}
	for j, f := range tr.Feature {
		right := 0
		for i := range n {
			if xs[i*d+int(f)] > tr.Value[j] {
				right++
			}
		}
		if right < 300 || n-right < 300 {
			t.Errorf("test %d (x[%d] > %g) splits %d | %d rows, MinLeaf 300", j, f, tr.Value[j], n-right, right)
		}
	}
	tr, err = Fit(xs, n, d, y, 2, cuts, &Options{Trees: 2, Depth: 3, MinLeaf: n/2 + 1})
	if err != nil {
		t.Fatal(err)
	}
	for j, f := range tr.Feature {
		if f != 0 || tr.Value[j] != cuts[0][62] {
			t.Errorf("test %d is x[%d] > %g, want the fallback x[0] > %g", j, f, tr.Value[j], cuts[0][62])
		}
	}
}

// Boosting is sequential: the first k trees of a run of n are the trees of
// a run of k, leaf values included. Training relies on it — the search's
// smaller rounds and the structures with fewer trees use a prefix of one
// boosted run.
func TestPrefixIsShorterRun(t *testing.T) {
	const n, d = 3000, 6
	xs, y := checkerboard(n, d, 3, 0.1, 4, func(x []float32) int { return xor4(x) % 3 })
	cuts := grid(d, 30)
	long, err := FitModel(xs, n, d, y, 3, cuts, &Options{Trees: 24, Depth: 4, Subsample: 0.8, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	short, err := FitModel(xs, n, d, y, 3, cuts, &Options{Trees: 9, Depth: 4, Subsample: 0.8, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	k := 9 * 4
	if !slices.Equal(short.Trees.Feature, long.Trees.Feature[:k]) || !slices.Equal(short.Trees.Value, long.Trees.Value[:k]) ||
		!slices.Equal(short.Values, long.Values[:len(short.Values)]) {
		t.Fatal("the first 9 of 24 boosted trees differ from a run of 9")
	}
	if short.K != 3 || len(short.Values) != 9<<4*3 {
		t.Fatalf("K = %d, %d leaf values, want 3 and %d", short.K, len(short.Values), 9<<4*3)
	}
}

// TestEarlyStopping: with held-out rows, boosting on noisy labels stops
// long before its ceiling, returns the trees it fitted (a prefix of the
// full run) and says where the held-out loss was lowest.
func TestEarlyStopping(t *testing.T) {
	const n, d = 2000, 4
	xs, y := checkerboard(n, d, 2, 0.3, 8, board4)
	vx, vy := checkerboard(500, d, 2, 0.3, 9, board4)
	cuts := grid(d, 30)
	opt := &Options{Trees: 600, Depth: 3, LearningRate: 0.5, Seed: 1}
	full, err := FitModel(xs, n, d, y, 2, cuts, opt)
	if err != nil {
		t.Fatal(err)
	}
	opt.Valid = &Rows{X: vx, N: 500, Y: vy}
	early, err := FitModel(xs, n, d, y, 2, cuts, opt)
	if err != nil {
		t.Fatal(err)
	}
	count := early.Trees.Count()
	if count >= 600 || early.Best < 1 || early.Best > count || count-early.Best < 20 {
		t.Fatalf("stopped at %d trees, best %d (ceiling 600, patience ≥ 20)", count, early.Best)
	}
	if !slices.Equal(early.Trees.Feature, full.Trees.Feature[:count*3]) || !slices.Equal(early.Values, full.Values[:len(early.Values)]) {
		t.Fatal("the early-stopped trees are not the first trees of the full run")
	}
	if full.Best != 600 {
		t.Fatalf("without held-out rows Best = %d, want the count fitted", full.Best)
	}
	opt.Valid = &Rows{X: vx[:10], N: 500, Y: vy}
	if _, err := FitModel(xs, n, d, y, 2, cuts, opt); !errors.Is(err, ErrData) {
		t.Fatalf("held-out rows of the wrong shape: %v", err)
	}
}

// BenchmarkFitDense fits 40 depth-2 trees on the shape of the search's
// worst case (docs/BENCHMARKS.md "The default search: time and memory"):
// 18,000 rows of 128 dense features, 6 classes, 128 cuts per feature.
func BenchmarkFitDense(b *testing.B) {
	const n, d = 18000, 128
	xs, y := checkerboard(n, d, 6, 0.05, 21, func(x []float32) int { return xor4(x) % 6 })
	cuts := grid(d, 128)
	opt := &Options{Trees: 40, Depth: 2}
	for b.Loop() {
		if _, err := Fit(xs, n, d, y, 6, cuts, opt); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFitBinary fits 20 depth-6 trees on two classes (one score, the
// histograms' smallest cells): 20,000 rows of 64 features, 128 cuts.
func BenchmarkFitBinary(b *testing.B) {
	const n, d = 20000, 64
	xs, y := checkerboard(n, d, 2, 0.05, 23, func(x []float32) int { return xor4(x) % 2 })
	cuts := grid(d, 128)
	opt := &Options{Trees: 20, Depth: 6}
	for b.Loop() {
		if _, err := Fit(xs, n, d, y, 2, cuts, opt); err != nil {
			b.Fatal(err)
		}
	}
}
