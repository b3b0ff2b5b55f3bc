package trees

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/trit-iot/trit/inference"
	"github.com/trit-iot/trit/training/internal/splitmix"
)

// Fit learns opt.Trees oblivious trees by gradient boosting on n rows of d
// scaled features xs (row-major) with labels y in [0, classes). cuts[f]
// holds feature f's candidate thresholds (finite, ascending; e.g. quantiles
// of the scaled training values): a split of f is always x' > cuts[f][k]
// for some k, and the returned Value is exactly that float32 — so pass the
// cuts in the precision the model ships them in, and the shipped tests are
// the learned ones. A feature
// without cuts is never split. NaN values compare false, as in
// inference.Trees. Level l's test of tree t is bit l of its leaf.
//
// A level whose best split gains nothing (all gradients already fitted)
// repeats the previous level's test, or at level 0 tests feature f's
// largest cut for the first f that has cuts, so the trees are always valid
// for d features.
func Fit(xs []float32, n, d int, y []int32, classes int, cuts [][]float32, opt *Options) (*inference.Trees, error) {
	m, err := FitModel(xs, n, d, y, classes, cuts, opt)
	if err != nil {
		return nil, err
	}
	return m.Trees, nil
}

// Model is the boosted trees with their leaf values: what a caller that
// re-learns the leaves' weights starts from (trit's ternary solver starts
// from their signs).
type Model struct {
	Trees *inference.Trees
	// K is the number of scores: 1 for two classes (positive means class
	// 1), else one per class.
	K int
	// Values[(t<<Depth+leaf)*K+c] is tree t's leaf value for score c.
	Values []float64
	// Base is the initial score of each of the K scores (the log prior;
	// log-odds for two classes): a row's score c is Base[c] plus its leaves'
	// values.
	Base []float64
	// Best is the number of trees at which Options.Valid's log-loss was
	// lowest; the count fitted without Valid.
	Best int

	loss []float64 // the training loss before each tree and after the last (Options.From)
}

// FitModel is Fit that also returns the leaf values.
func FitModel(xs []float32, n, d int, y []int32, classes int, cuts [][]float32, opt *Options) (*Model, error) {
	e, err := fit(xs, n, d, y, classes, cuts, opt)
	if err != nil {
		return nil, err
	}
	return &Model{Trees: e.trees, K: e.k, Values: e.values, Base: e.base, Best: e.best, loss: e.loss}, nil
}

// ensemble is the boosted model itself: the trees with their leaf values,
// kept for tests of the boosting (the embedding uses only the trees).
type ensemble struct {
	trees *inference.Trees
	k     int       // score dimensions: 1 for two classes, else classes
	base  []float64 // initial scores (log prior)
	// values[(t<<Depth+leaf)*k+c] is tree t's leaf value for score c.
	values []float64
	// loss[r] is the mean training log-loss before round r; loss[Trees]
	// after the last (zeros unless Options.trackLoss).
	loss []float64
	// train holds the training rows' final scores (n×k) as boosting
	// computed them from its own leaf assignment.
	train []float64
	// best is the tree count at the lowest held-out loss (Options.Valid),
	// else the count fitted.
	best int
}

// scores sets dst (len k) to the ensemble's scores of the scaled row x.
func (e *ensemble) scores(dst []float64, x []float32) {
	copy(dst, e.base)
	for t := range e.trees.Count() {
		o := (t<<e.trees.Depth + e.trees.Leaf(t, x)) * e.k
		for c := range dst {
			dst[c] += e.values[o+c]
		}
	}
}

// predict returns the ensemble's class of the scaled row x.
func (e *ensemble) predict(x []float32) int {
	s := make([]float64, e.k)
	e.scores(s, x)
	if e.k == 1 {
		if s[0] > 0 {
			return 1
		}
		return 0
	}
	best := 0
	for c := range s {
		if s[c] > s[best] {
			best = c
		}
	}
	return best
}

func fit(xs []float32, n, d int, y []int32, classes int, cuts [][]float32, opt *Options) (*ensemble, error) {
	o, err := opt.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := checkData(xs, n, d, y, classes, cuts); err != nil {
		return nil, err
	}
	if v := o.Valid; v != nil {
		if v.N < 0 || len(v.X) != v.N*d || len(v.Y) != v.N {
			return nil, fmt.Errorf("%w: held-out rows: %d values and %d labels for %d rows of %d features", ErrData, len(v.X), len(v.Y), v.N, d)
		}
		for i, c := range v.Y {
			if c < 0 || int(c) >= classes {
				return nil, fmt.Errorf("%w: held-out row %d has label %d, want 0..%d", ErrData, i, c, classes-1)
			}
		}
	}
	maxBins := 0
	for _, c := range cuts {
		maxBins = max(maxBins, len(c)+1)
	}
	if maxBins <= 1<<8 {
		return grow[uint8](xs, n, d, y, classes, cuts, &o)
	}
	return grow[uint16](xs, n, d, y, classes, cuts, &o)
}

// bin returns #{c in cuts : x > c}, so x > cuts[k] ⇔ bin > k (cuts
// ascending); NaN gets 0.
func bin(x float32, cuts []float32) int {
	lo, hi := 0, len(cuts) // cuts[:lo] are < x, cuts[hi:] are not
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if x > cuts[m] {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// booster holds the state of one Fit.
type booster[T uint8 | uint16] struct {
	o        *Options
	n, d, k  int
	y        []int32
	cuts     [][]float32
	bins     []T         // column-major: bins[f*n+i]
	scores   []float64   // n×k
	gh       []float64   // n×2k: gradient and Hessian of score c at 2c, 2c+1
	leaf     []uint8     // current leaf of every row
	rows     []int32     // the rows of the current tree, ascending
	counts   [][]int32   // per feature: sampled rows per bin
	hists    [][]float64 // per feature, kept across levels; nil if too big
	hist     [][]float64 // per worker, when hists is nil
	scratch  [][]float64 // per worker
	batch    [][]float64 // per worker: cuts scored together (bestSplit)
	sideBuf  []int32
	maxBins  int
	workers  int
	chunkSum []float64
}

// chunk is the row block of parallel row passes; sums over rows are taken
// per block and then in block order, so they do not depend on Workers.
const chunk = 4096

// overlapRows is the least work (rows, or held-out rows × scores) for
// which a serial pass runs beside the parallel ones, or a pass of bit
// operations is split among the workers: below it a goroutine costs more
// than it saves.
const overlapRows = 2 * chunk

func grow[T uint8 | uint16](xs []float32, n, d int, y []int32, classes int, cuts [][]float32, o *Options) (*ensemble, error) {
	k := classes
	if classes == 2 {
		k = 1
	}
	b := &booster[T]{o: o, n: n, d: d, k: k, y: y, cuts: cuts, workers: o.Workers}
	for _, c := range cuts {
		b.maxBins = max(b.maxBins, len(c)+1)
	}
	b.bins = make([]T, n*d)
	parallel(b.workers, d, func(_, f int) {
		col := b.bins[f*n : (f+1)*n]
		for i := range col {
			col[i] = T(bin(xs[i*d+f], cuts[f]))
		}
	})

	e := &ensemble{
		trees:  &inference.Trees{Depth: o.Depth, Feature: make([]uint16, o.Trees*o.Depth), Value: make([]float32, o.Trees*o.Depth)},
		k:      k,
		base:   make([]float64, k),
		values: make([]float64, (o.Trees<<o.Depth)*k),
		loss:   make([]float64, o.Trees+1),
	}
	// Initial scores: the smoothed log prior (log-odds for two classes).
	freq := make([]float64, classes)
	for _, c := range y {
		freq[c]++
	}
	for c := range freq {
		freq[c] = (freq[c] + 1) / float64(n+classes)
	}
	if k == 1 {
		e.base[0] = math.Log(freq[1] / freq[0])
	} else {
		for c := range k {
			e.base[c] = math.Log(freq[c])
		}
	}
	b.scores = make([]float64, n*k)
	for i := range n {
		copy(b.scores[i*k:(i+1)*k], e.base)
	}
	b.gh = make([]float64, n*2*k)
	b.leaf = make([]uint8, n)
	b.rows = make([]int32, 0, n)
	b.counts = make([][]int32, d)
	for f := range d {
		b.counts[f] = make([]int32, len(cuts[f])+1)
	}
	b.hist = make([][]float64, b.workers)
	b.scratch = make([][]float64, b.workers)
	b.batch = make([][]float64, b.workers)
	cells := 0
	for _, c := range cuts {
		cells += (len(c) + 1) << (o.Depth - 1) * 2 * k
	}
	if cells*8 <= keepBytes {
		b.hists = make([][]float64, d)
		for f, c := range cuts {
			b.hists[f] = make([]float64, (len(c)+1)<<(o.Depth-1)*2*k)
		}
	}
	b.sideBuf = make([]int32, 0, n)
	b.chunkSum = make([]float64, (n+chunk-1)/chunk)

	rng := splitmix.New(o.Seed)
	stop := newStopper(o, e, classes)
	count := o.Trees
	start := 0
	if m := o.From; m != nil {
		var stopped bool
		var err error
		if start, stopped, err = b.resume(m, e, stop, rng); err != nil {
			return nil, err
		}
		if stopped {
			count = start
		}
	}
	loss, ready := 0.0, false // the next tree's gradients' loss, when computed already
	for t := start; t < count; t++ {
		if !ready {
			loss = b.gradients()
		}
		e.loss[t], ready = loss, false
		b.sample(rng)
		b.tree(t, e)
		if stop == nil {
			continue
		}
		if b.workers > 1 && o.Valid.N*k >= overlapRows {
			// The held-out rows are scored beside the next tree's
			// gradients, which do not depend on them (and are the final
			// loss if boosting stops here).
			stopped := make(chan bool, 1)
			go func() { stopped <- stop.after(t) }()
			loss, ready = b.gradients(), true
			if <-stopped {
				count = t + 1
				break
			}
		} else if stop.after(t) {
			count = t + 1
			break
		}
	}
	if !ready {
		loss = b.gradients()
	}
	e.loss[count] = loss
	e.train = b.scores
	e.best = count
	if stop != nil {
		e.best = stop.best
		e.trees.Feature, e.trees.Value = e.trees.Feature[:count*o.Depth], e.trees.Value[:count*o.Depth]
		e.values = e.values[:(count<<o.Depth)*k]
		e.loss = e.loss[:count+1]
	}
	return e, nil
}

// resume takes m's trees as the first ones of e (Options.From) and
// replays what boosting them changed: the rows' scores, tree by tree in
// boosting's order; the subsampling's draws; the held-out rows' scores
// and the early stopping's decisions. It returns the count of m's trees,
// and whether the early stopping stops there.
func (b *booster[T]) resume(m *Model, e *ensemble, stop *stopper, rng *splitmix.Source) (int, bool, error) {
	c := m.Trees.Count()
	if m.K != b.k {
		return 0, false, fmt.Errorf("%w: From has %d scores a row, want %d (other classes)", ErrOptions, m.K, b.k)
	}
	for j := range e.base {
		if math.Float64bits(m.Base[j]) != math.Float64bits(e.base[j]) {
			return 0, false, fmt.Errorf("%w: From was fitted on other labels (its initial scores differ)", ErrOptions)
		}
	}
	depth, k := b.o.Depth, b.k
	copy(e.trees.Feature, m.Trees.Feature)
	copy(e.trees.Value, m.Trees.Value)
	copy(e.values, m.Values)
	copy(e.loss, m.loss)
	// A test x > Value is bin > the cut's index, whatever the float form
	// of the cut (bin's contract).
	feat := make([]int, c*depth)
	cut := make([]T, c*depth)
	for i := range feat {
		f := int(m.Trees.Feature[i])
		if f >= b.d {
			return 0, false, fmt.Errorf("%w: From tests feature %d of %d", ErrOptions, f, b.d)
		}
		k, ok := b.cutIndex(f, m.Trees.Value[i])
		if !ok {
			return 0, false, fmt.Errorf("%w: From tests feature %d at %g, not one of its cuts", ErrOptions, f, m.Trees.Value[i])
		}
		feat[i], cut[i] = f, T(k)
	}
	parallel(b.workers, len(b.chunkSum), func(_, ch int) {
		for i := ch * chunk; i < min((ch+1)*chunk, b.n); i++ {
			s := b.scores[i*k : (i+1)*k]
			for t := range c {
				leaf := 0
				for l := range depth {
					if b.bins[feat[t*depth+l]*b.n+i] > cut[t*depth+l] {
						leaf |= 1 << l
					}
				}
				v := m.Values[(t<<depth+leaf)*k : (t<<depth+leaf+1)*k]
				for j := range s {
					s[j] += v[j]
				}
			}
		}
	})
	if b.o.Subsample < 1 {
		// The same draws as the c trees' (sample then counts their rows).
		for range c {
			b.drawRows(rng)
		}
	}
	if stop != nil {
		for t := range c {
			if stop.after(t) {
				return t + 1, true, nil
			}
		}
	}
	return c, false, nil
}

// stopper scores the held-out rows of Options.Valid after every tree and
// says when to stop (early stopping).
type stopper struct {
	o        *Options
	e        *ensemble
	scores   []float64 // N×k held-out scores
	best     int       // trees at the lowest loss
	bestLoss float64
}

func newStopper(o *Options, e *ensemble, classes int) *stopper {
	v := o.Valid
	if v == nil || v.N == 0 {
		return nil
	}
	s := &stopper{o: o, e: e, scores: make([]float64, v.N*e.k), bestLoss: math.Inf(1)}
	for i := range v.N {
		copy(s.scores[i*e.k:(i+1)*e.k], e.base)
	}
	return s
}

// after adds tree t to the held-out scores and reports whether boosting
// should stop: no lower loss for Patience trees.
func (s *stopper) after(t int) bool {
	v, e, k := s.o.Valid, s.e, s.e.k
	d := len(v.X) / max(v.N, 1)
	loss := 0.0
	for i := range v.N {
		sc := s.scores[i*k : (i+1)*k]
		o := (t<<e.trees.Depth + e.trees.Leaf(t, v.X[i*d:(i+1)*d])) * k
		for c := range sc {
			sc[c] += e.values[o+c]
		}
		loss += logLoss(sc, int(v.Y[i]))
	}
	loss /= float64(v.N)
	if loss < s.bestLoss {
		s.bestLoss, s.best = loss, t+1
	}
	patience := s.o.Patience
	if patience == 0 {
		patience = max(20, s.best/2)
	}
	return t+1-s.best >= patience
}

// logLoss is the log-loss of scores s (one log-odds for two classes,
// softmax scores otherwise) for label y.
func logLoss(s []float64, y int) float64 {
	if len(s) == 1 {
		m := s[0]
		if y == 1 {
			m = -m
		}
		return softplus(m)
	}
	top := s[0]
	for _, v := range s[1:] {
		top = max(top, v)
	}
	z := 0.0
	for _, v := range s {
		z += math.Exp(v - top)
	}
	return top + math.Log(z) - s[y]
}

// gradients sets gh from the current scores and returns the mean
// log-loss (0 unless Options.trackLoss).
func (b *booster[T]) gradients() float64 {
	k, track := b.k, b.o.trackLoss
	parallel(b.workers, len(b.chunkSum), func(_, ch int) {
		lo, hi := ch*chunk, min((ch+1)*chunk, b.n)
		p := make([]float64, k)
		loss := 0.0
		for i := lo; i < hi; i++ {
			s := b.scores[i*k : (i+1)*k]
			g := b.gh[i*2*k : (i+1)*2*k]
			yi := int(b.y[i])
			if k == 1 {
				// p = σ(s); log-loss = log(1+e^{−s}) for y = 1, log(1+e^{s}) for y = 0
				pr := 1 / (1 + math.Exp(-s[0]))
				g[0] = pr - float64(yi)
				g[1] = max(pr*(1-pr), 1e-16)
				if track {
					m := s[0]
					if yi == 1 {
						m = -m
					}
					loss += softplus(m)
				}
				continue
			}
			m := slices.Max(s)
			z := 0.0
			for c := range s {
				p[c] = math.Exp(s[c] - m)
				z += p[c]
			}
			for c := range s {
				pc := p[c] / z
				g[2*c] = pc
				g[2*c+1] = max(pc*(1-pc), 1e-16)
			}
			g[2*yi]--
			if track {
				loss += m + math.Log(z) - s[yi]
			}
		}
		b.chunkSum[ch] = loss
	})
	sum := 0.0
	for _, v := range b.chunkSum {
		sum += v
	}
	return sum / float64(b.n)
}

// softplus returns log(1+e^x) without overflow.
func softplus(x float64) float64 {
	if x > 0 {
		return x + math.Log1p(math.Exp(-x))
	}
	return math.Log1p(math.Exp(x))
}

// sample sets rows to this tree's rows and counts to their bin counts.
// Without subsampling every tree has every row, so both are set once.
func (b *booster[T]) sample(rng *splitmix.Source) {
	if b.o.Subsample >= 1 && len(b.rows) == b.n {
		return
	}
	b.drawRows(rng)
	parallel(b.workers, b.d, func(_, f int) {
		cnt := b.counts[f]
		clear(cnt)
		col := b.bins[f*b.n : (f+1)*b.n]
		for _, i := range b.rows {
			cnt[col[i]]++
		}
	})
}

// drawRows sets rows to this tree's rows, drawn from rng: every row
// without subsampling (no draw), else each row with probability
// Subsample, and one at random if none was drawn.
func (b *booster[T]) drawRows(rng *splitmix.Source) {
	b.rows = b.rows[:0]
	if b.o.Subsample >= 1 {
		for i := range b.n {
			b.rows = append(b.rows, int32(i))
		}
		return
	}
	for i := range b.n {
		if rng.Float64() < b.o.Subsample {
			b.rows = append(b.rows, int32(i))
		}
	}
	if len(b.rows) == 0 {
		b.rows = append(b.rows, int32(rng.Intn(b.n)))
	}
}

// split is one feature's best cut at a level.
type split struct {
	score float64 // Σ over children and scores of G²/(H+λ); −1 if none
	cut   int
}

// tree grows tree t and adds it to e and to the scores.
func (b *booster[T]) tree(t int, e *ensemble) {
	n, k, lambda := b.n, b.k, b.o.Lambda
	clear(b.leaf)
	best := make([]split, b.d)
	leafSum := make([]float64, (1<<b.o.Depth)*2*k)
	for l := range b.o.Depth {
		leaves := 1 << l
		// The current leaves' score, the baseline of every split's gain.
		sums := leafSum[:leaves*2*k]
		parent := 0.0
		score := func() {
			clear(sums)
			b.sumLeaves(sums)
			for j := 0; j < len(sums); j += 2 {
				parent += sums[j] * sums[j] / (sums[j+1] + lambda)
			}
		}
		// The parent's score is needed only after the splits are scored:
		// with more than one worker it is summed beside them, so that its
		// pass over the rows does not leave the other cores idle.
		scored := make(chan struct{})
		if b.workers > 1 && len(b.rows) >= overlapRows {
			go func() { score(); close(scored) }()
		} else {
			score()
			close(scored)
		}
		sd := b.levelSide(l, b.sideBuf)
		if b.blocked() {
			parallel(b.workers, (b.d+3)/4, func(w, blk int) {
				b.bestSplits(w, 4*blk, min(4*blk+4, b.d), leaves, sd, best)
			})
		} else {
			parallel(b.workers, b.d, func(w, f int) {
				best[f] = b.bestSplit(w, f, leaves, sd)
			})
		}
		<-scored
		bf, bs := -1, split{score: math.Inf(-1)}
		for f, s := range best {
			if s.cut >= 0 && s.score > bs.score {
				bf, bs = f, s
			}
		}
		i := t*b.o.Depth + l
		if bf < 0 || !(bs.score-parent > 1e-9*parent) {
			// No gain: a harmless test (see Fit).
			if l > 0 {
				bf = int(e.trees.Feature[i-1])
				bs.cut, _ = b.cutIndex(bf, e.trees.Value[i-1])
			} else {
				for f := range b.cuts {
					if len(b.cuts[f]) > 0 {
						bf, bs.cut = f, len(b.cuts[f])-1
						break
					}
				}
			}
		}
		e.trees.Feature[i] = uint16(bf)
		e.trees.Value[i] = b.cuts[bf][bs.cut]
		col := b.bins[bf*n : (bf+1)*n]
		cut, bit := T(bs.cut), uint8(1)<<l
		workers := b.workers
		if n < overlapRows {
			workers = 1
		}
		parallel(workers, len(b.chunkSum), func(_, ch int) {
			lo, hi := ch*chunk, min((ch+1)*chunk, n)
			for r, c := range col[lo:hi] {
				if c > cut {
					b.leaf[lo+r] |= bit
				}
			}
		})
	}
	// Leaf values: Newton steps on the sampled rows, shrunk by η.
	sums := leafSum
	clear(sums)
	b.sumLeaves(sums)
	vals := e.values[(t<<b.o.Depth)*k : ((t+1)<<b.o.Depth)*k]
	for j := range vals {
		vals[j] = -b.o.LearningRate * sums[2*j] / (sums[2*j+1] + lambda)
	}
	parallel(b.workers, len(b.chunkSum), func(_, ch int) {
		for i := ch * chunk; i < min((ch+1)*chunk, n); i++ {
			v := vals[int(b.leaf[i])*k : (int(b.leaf[i])+1)*k]
			s := b.scores[i*k : (i+1)*k]
			for c := range s {
				s[c] += v[c]
			}
		}
	})
}

// cutIndex returns the index of value v in feature f's cuts (the first, if
// repeated), and whether v is one of them.
func (b *booster[T]) cutIndex(f int, v float32) (int, bool) {
	return slices.BinarySearch(b.cuts[f], v)
}

// sumLeaves adds the sampled rows' gradients and Hessians into sums, per
// leaf (leaf-major, 2k per leaf), in row order.
func (b *booster[T]) sumLeaves(sums []float64) {
	k2 := 2 * b.k
	for _, i := range b.rows {
		o := int(b.leaf[i]) * k2
		g := b.gh[int(i)*k2 : int(i)*k2+k2]
		s := sums[o : o+k2]
		for j := range g {
			s[j] += g[j]
		}
	}
}

// Histograms: feature f's sums of gradients and Hessians per (bin, leaf),
// bin-major with a fixed stride of leaf slots per bin, cell (bn, leaf) at
// (bn·stride + leaf)·2k. When they fit in keepBytes, every feature keeps
// its histogram from level to level (stride 2^(Depth−1)) and a level sums
// only the rows of the smaller side of the previous level's split, getting
// the other side by subtracting from the parent cell (LightGBM's trick):
// half the row passes or fewer. Otherwise each worker rebuilds the
// histogram from all rows at every level (stride = the level's leaves).
var keepBytes = 256 << 20

// side is the row set a level's histograms are summed over.
type side struct {
	rows  []int32
	delta bool // rows are one side of the last split: complete by subtraction
	right bool // rows are the right (bit set) side
}

// levelSide returns the rows level l sums over, with buf as storage.
func (b *booster[T]) levelSide(l int, buf []int32) side {
	if b.hists == nil || l == 0 {
		return side{rows: b.rows}
	}
	bit := uint8(1) << (l - 1)
	set := 0
	for _, i := range b.rows {
		if b.leaf[i]&bit != 0 {
			set++
		}
	}
	right := 2*set <= len(b.rows)
	buf = buf[:0]
	for _, i := range b.rows {
		if (b.leaf[i]&bit != 0) == right {
			buf = append(buf, i)
		}
	}
	return side{rows: buf, delta: true, right: right}
}

// histogram fills feature f's histogram h for a level of the given leaves,
// sets tot (leaves·2k cells) to its sums over the bins (each leaf's
// totals, summed bin by bin in order), and returns the stride.
func (b *booster[T]) histogram(f, leaves int, sd side, h, tot []float64) int {
	stride, lo, hi := b.slots(leaves, sd)
	b.clearHist(f, h, stride, lo, hi)
	b.addRows(f, h, sd, stride, lo)
	b.totals(f, h, tot, sd, stride, lo)
	return stride
}

// slots returns the stride of a level's histograms and the slots [lo,
// hi) of each bin its rows are summed into.
func (b *booster[T]) slots(leaves int, sd side) (stride, lo, hi int) {
	stride = leaves
	if b.hists != nil {
		stride = 1 << (b.o.Depth - 1)
	}
	lo, hi = 0, leaves
	if sd.delta {
		lo = leaves / 2
	}
	return stride, lo, hi
}

// clearHist zeroes slots [lo, hi) of every bin of feature f's histogram.
func (b *booster[T]) clearHist(f int, h []float64, stride, lo, hi int) {
	nb := len(b.cuts[f]) + 1
	k2 := 2 * b.k
	if useAVX2 && !b.o.goLoops {
		_ = h[((nb-1)*stride+hi)*k2-1] // the bound clearCells relies on
		clearCells(h, nb, stride*k2, lo*k2, (hi-lo)*k2)
		return
	}
	for bn := range nb {
		clear(h[(bn*stride+lo)*k2 : (bn*stride+hi)*k2])
	}
}

// addRows adds the rows of sd into feature f's histogram, at slot
// leaf | lo of each row's bin (delta rows of either side go to the upper
// slots). This is the reference loop of histAVX2 and histAVX2x4.
func (b *booster[T]) addRows(f int, h []float64, sd side, stride, lo int) {
	k2 := 2 * b.k
	col := b.bins[f*b.n : (f+1)*b.n]
	slot := uint8(lo)
	if c8, ok := any(col).([]uint8); ok && useAVX2 && !b.o.goLoops {
		histAVX2(h, b.gh, sd.rows, c8, b.leaf, int(slot), stride, k2)
	} else if k2 == 2 {
		for _, i := range sd.rows {
			o := (int(col[i])*stride + int(b.leaf[i]|slot)) * 2
			h[o] += b.gh[2*i]
			h[o+1] += b.gh[2*i+1]
		}
	} else {
		for _, i := range sd.rows {
			o := (int(col[i])*stride + int(b.leaf[i]|slot)) * k2
			g := b.gh[int(i)*k2 : int(i)*k2+k2]
			hh := h[o : o+k2]
			for j := range g {
				hh[j] += g[j]
			}
		}
	}
}

// totals completes a delta level's histogram by subtraction and sets tot
// to the sums of its cells over the bins.
func (b *booster[T]) totals(f int, h, tot []float64, sd side, stride, lo int) {
	nb := len(b.cuts[f]) + 1
	k2 := 2 * b.k
	clear(tot)
	switch {
	case sd.delta && useAVX2 && !b.o.goLoops:
		_ = h[nb*stride*k2-1] // the bound subTotal relies on
		subTotal(h, tot, nb, stride*k2, lo*k2, sd.right)
	case sd.delta:
		subTotalGo(h, tot, nb, stride*k2, lo*k2, sd.right)
	default:
		for bn := range nb {
			for j, v := range h[bn*stride*k2 : bn*stride*k2+len(tot)] {
				tot[j] += v
			}
		}
	}
}

// blocked reports whether a level's histograms are summed four features
// at a time (histAVX2x4): kept histograms of byte bins, in AVX2, for the
// widths the kernel has.
func (b *booster[T]) blocked() bool {
	if b.hists == nil || !useAVX2 || b.o.goLoops {
		return false
	}
	if _, ok := any(b.bins).([]uint8); !ok {
		return false
	}
	switch 2 * b.k {
	case 2, 4, 6, 8, 12, 20:
		return true
	}
	return false
}

// bestSplits sets best[f] to bestSplit(w, f, leaves, sd) for the features
// f in [lo, hi) (at most 4), their histograms summed in one pass over the
// rows: the same sums, so the same splits.
func (b *booster[T]) bestSplits(w, lo, hi, leaves int, sd side, best []split) {
	var hs [4][]float64
	var cols [4][]uint8
	var fs [4]int
	n := 0
	for f := lo; f < hi; f++ {
		if len(b.cuts[f]) == 0 {
			best[f] = split{cut: -1}
			continue
		}
		fs[n], hs[n], cols[n] = f, b.hists[f], any(b.bins[f*b.n:(f+1)*b.n]).([]uint8)
		n++
	}
	stride, slo, shi := b.slots(leaves, sd)
	for _, f := range fs[:n] {
		b.clearHist(f, b.hists[f], stride, slo, shi)
	}
	if n == 4 {
		histAVX2x4(&hs, b.gh, sd.rows, &cols, b.leaf, slo, stride, 2*b.k)
	} else {
		for _, f := range fs[:n] {
			b.addRows(f, b.hists[f], sd, stride, slo)
		}
	}
	tot, cum := b.sums(w, leaves)
	for _, f := range fs[:n] {
		b.totals(f, b.hists[f], tot, sd, stride, slo)
		best[f] = b.scan(w, f, leaves, b.hists[f], tot, cum, stride)
	}
}

// subTotalGo completes a delta level's histogram by subtraction and sums
// its cells over the bins into tot (see histogram): for each of bins bins,
// at h[bn·pitch:], the parent cells par = [0, half) and the summed side's
// sub = [half, 2·half) become the left and right children's,
//
//	right side summed: par[j] −= sub[j]
//	left side summed:  par[j], sub[j] = sub[j], par[j] − sub[j]
//
// and tot[j] += cell j of the bin's 2·half cells, bins in order.
func subTotalGo(h, tot []float64, bins, pitch, half int, right bool) {
	for bn := range bins {
		par := h[bn*pitch : bn*pitch+half]
		sub := h[bn*pitch+half : bn*pitch+2*half]
		if right {
			for j, v := range sub {
				par[j] -= v
			}
		} else {
			for j, v := range sub {
				par[j], sub[j] = v, par[j]-v
			}
		}
		for j, v := range h[bn*pitch : bn*pitch+2*half] {
			tot[j] += v
		}
	}
}

// bestSplit returns feature f's best cut for a level of the given leaves,
// using worker w's buffers.
func (b *booster[T]) bestSplit(w, f, leaves int, sd side) split {
	nb := len(b.cuts[f]) + 1
	if nb < 2 {
		return split{cut: -1}
	}
	k2 := 2 * b.k
	var h []float64
	if b.hists != nil {
		h = b.hists[f]
	} else {
		if need := nb * leaves * k2; cap(b.hist[w]) < need {
			b.hist[w] = make([]float64, b.maxBins<<(b.o.Depth-1)*k2)
		}
		h = b.hist[w]
	}
	tot, cum := b.sums(w, leaves)
	stride := b.histogram(f, leaves, sd, h, tot)
	return b.scan(w, f, leaves, h, tot, cum, stride)
}

// sums returns worker w's buffers for a level's totals and running left
// sums per (leaf, score).
func (b *booster[T]) sums(w, leaves int) (tot, cum []float64) {
	k2 := 2 * b.k
	width := leaves * k2
	if cap(b.scratch[w]) < 2*width {
		b.scratch[w] = make([]float64, 2<<(b.o.Depth-1)*k2)
	}
	return b.scratch[w][:width], b.scratch[w][width : 2*width]
}

// scan returns feature f's best cut from its level histogram h (with the
// given stride) and the level's totals tot; cum is scratch.
func (b *booster[T]) scan(w, f, leaves int, h, tot, cum []float64, stride int) split {
	nb := len(b.cuts[f]) + 1
	k2 := 2 * b.k
	width := leaves * k2
	clear(cum)
	lambda, minLeaf := b.o.Lambda, int32(b.o.MinLeaf)
	cnt := b.counts[f]
	total := int32(len(b.rows))
	left := int32(0)
	best := split{score: math.Inf(-1), cut: -1}
	// The cuts that may split are scored lanes at a time: each lane holds
	// one cut's running left sums, interleaved (cell j of lane l at
	// j·lanes+l), and is scored by splitScores exactly as on its own.
	if cap(b.batch[w]) < lanes*width {
		b.batch[w] = make([]float64, lanes<<(b.o.Depth-1)*k2)
	}
	batch := b.batch[w][:lanes*width]
	fast := useAVX2 && !b.o.goLoops
	var at [lanes]int  // the cut of each lane
	var off [lanes]int // the offset in h of each lane's bin cells
	var score [lanes]float64
	// Lanes [0, used) are in batch; [used, used+pend) are only noted, to
	// be summed four at a time by cumLanes.
	used, pend := 0, 0
	sum := func() { // the noted lanes into batch, one at a time
		for l := used; l < used+pend; l++ {
			for j, v := range h[off[l] : off[l]+width] {
				c := cum[j] + v
				cum[j] = c
				batch[j*lanes+l] = c
			}
		}
		used, pend = used+pend, 0
	}
	flush := func() {
		if fast {
			splitScores(&score, batch, tot, used, lambda)
		} else {
			splitScoresGo(&score, batch, tot, used, lambda)
		}
		for l := range used { // in cut order: the first of equal scores wins
			if score[l] > best.score {
				best = split{score: score[l], cut: at[l]}
			}
		}
		used = 0
	}
	for bn := range nb - 1 {
		left += cnt[bn]
		if cnt[bn] == 0 {
			continue // same sums as the previous cut
		}
		o := bn * stride * k2
		cells := h[o : o+width] // also the bound cumLanes relies on
		if left < minLeaf || total-left < minLeaf {
			sum() // the lanes before this cut first
			for j, v := range cells {
				cum[j] += v
			}
			continue
		}
		l := used + pend
		at[l], off[l] = bn, o
		if pend++; l+1 == lanes {
			if used == 0 && fast {
				cumLanes(batch, cum, h, &off, width)
				used, pend = lanes, 0
			} else {
				sum()
			}
			flush()
		}
	}
	sum()
	if used > 0 {
		flush()
	}
	return best
}

// lanes is how many cuts splitScores scores at once (four float64 lanes
// of an AVX2 register).
const lanes = 4

// splitScoresGo is the reference loop of a split's score, for each of the
// first used lanes l of batch (see bestSplit: cell j of lane l at
// batch[j·lanes+l], gradient and Hessian sums at even and odd j, left of
// the cut) against the level's totals tot:
//
//	s[l] = Σ_j (gl²·hr + gr²·hl) / (hl·hr)   over even j, in order, where
//	gl, hl = batch[j·lanes+l], max(batch[(j+1)·lanes+l], 0) + λ
//	gr, hr = tot[j] − gl, max(tot[j+1] − batch[(j+1)·lanes+l], 0) + λ
//
// that is Σ gl²/hl + gr²/hr over leaves and scores with one division
// per term. The conversions round each product as its own operation, so no
// compiler fuses them and every platform computes the same bits.
func splitScoresGo(s *[lanes]float64, batch, tot []float64, used int, lambda float64) {
	for l := range used {
		sum := 0.0
		for j := 0; j < len(tot); j += 2 {
			gl, hl := batch[j*lanes+l], max(batch[(j+1)*lanes+l], 0)+lambda
			gr, hr := tot[j]-gl, max(tot[j+1]-batch[(j+1)*lanes+l], 0)+lambda
			sum += float64(float64(float64(gl*gl)*hr)+float64(float64(gr*gr)*hl)) / float64(hl*hr)
		}
		s[l] = sum
	}
}

// parallel calls fn(w, i) for i in [0, n) on up to workers goroutines; w is
// the worker's index, for per-worker buffers. Which worker runs which i
// varies, so fn's result must not depend on w.
func parallel(workers, n int, fn func(w, i int)) {
	workers = min(workers, n)
	if workers <= 1 {
		for i := range n {
			fn(0, i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				fn(w, i)
			}
		}()
	}
	wg.Wait()
}
