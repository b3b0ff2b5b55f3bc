package training

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/trit-iot/trit/inference"
	"github.com/trit-iot/trit/training/data"
	"github.com/trit-iot/trit/training/internal/splitmix"
)

// The search's mechanics: fitting candidates at a size on validation
// folds, in parallel, and the kernel widths it tries. What it fits in which
// order, and what wins, is selection.go.

// size is how large a round's fits are.
type size struct {
	p     int     // random features of the structure with the largest P; the others in proportion
	rows  int     // training rows at most
	trees float64 // fraction of each tree structure's trees
}

// same reports whether two sizes fit the same models but for the trees
// (a round that would only add trees is not worth a round of its own).
func (a size) same(b size) bool { return a.p == b.p && a.rows == b.rows }

// roundP is structure s's random features in a round of size sz when the
// largest structure has pmax: in proportion, so structures compare at the
// same fraction of their budgets (binary weights get more features than
// ternary ones at every size, as in the final bundle).
func roundP(s Structure, sz size, pmax int) int {
	if s.P == 0 {
		return 0
	}
	if sz.p >= pmax {
		return s.P
	}
	p := (s.P*sz.p/pmax + 63) / 64 * 64
	return min(s.P, max(p, 128))
}

// roundTrees is structure s's trees in a round of size sz: the first
// sz.trees of them (at least 16), the boosted sequence's prefix.
func roundTrees(s Structure, sz size) int {
	if sz.trees >= 1 || s.Trees == 0 {
		return s.Trees
	}
	return min(s.Trees, max(int(float64(s.Trees)*sz.trees), 16))
}

type candidate struct {
	s        Structure
	sigma, c float64
	sel      selection
	point    SearchPoint
	held     [][]heldOut // its last evaluation's held-out predictions, per fold
}

// searcher evaluates candidates on the validation folds.
type searcher struct {
	c     *Config
	ds    *data.Dataset
	folds []fold
	preps []*prepared
	all   []int // every fold's index
	res   *Result
	pmax  int // the largest structure's P
	// shifted: the folds are later periods or unseen groups (choose's
	// one-standard-error rule applies).
	shifted bool
	round   int
	done    int
	total   int
}

// search fills res.Structure, res.Sigma, res.C and the search record.
func search(ds *data.Dataset, c *Config, structures []Structure, res *Result) error {
	folds, pl, err := c.validationPlan(ds)
	if err != nil {
		return err
	}
	how, notes, shifted := pl.how, pl.notes, pl.shifted
	res.Validation, res.Notes = how, append(res.Notes, notes...)
	sr := &searcher{c: c, ds: ds, folds: folds, res: res, preps: make([]*prepared, len(folds)), shifted: shifted}
	for _, s := range structures {
		sr.pmax = max(sr.pmax, s.P)
	}
	for i, f := range folds {
		if sr.preps[i], err = prepare(f.train, c.fitScaler(f.train)); err != nil {
			return err
		}
		sr.preps[i].stopOn = f.val
	}
	most := map[int]int{}
	for _, s := range structures {
		most[s.Depth] = max(most[s.Depth], s.Trees)
	}
	boosted, err := sr.treeCaps(most)
	if err != nil {
		return err
	}
	noted := map[int]bool{}
	for i, s := range structures {
		if s.Trees > boosted[s.Depth] {
			structures[i].Trees = boosted[s.Depth]
			if !noted[s.Depth] {
				noted[s.Depth] = true
				res.Notes = append(res.Notes, fmt.Sprintf("depth-%d trees: boosting stopped early at %d trees, fewer than the budget holds (no lower loss on the validation rows)", s.Depth, boosted[s.Depth]))
			}
		}
	}
	sigmas, cs := c.SigmaGrid, c.CGrid
	if len(sigmas) == 0 {
		if c.Search == "grid" {
			sigmas = PaperSigmaGrid()
		} else {
			xs, n, err := sr.preps[len(folds)-1].scaledSample(c.Seed)
			if err != nil {
				return err
			}
			sigmas = sigmaGrid(medianDistance(xs, n, ds.D, c.Seed))
		}
	}
	if c.Sigma != 0 {
		sigmas = []float64{c.Sigma}
	}
	if c.C != 0 {
		cs = []float64{c.C}
	}
	pmax, rows := 0, 0
	for _, s := range structures {
		pmax = max(pmax, s.P)
	}
	for _, f := range folds {
		rows = max(rows, f.train.N)
	}
	if c.MaxFitRows > 0 {
		rows = min(rows, c.MaxFitRows)
	}
	full := size{p: pmax, rows: rows, trees: 1}
	for i := range folds {
		sr.all = append(sr.all, i)
	}
	var best *candidate
	if c.Search == "grid" {
		var cands []*candidate
		for _, s := range structures {
			for _, sigma := range sigmasOf(s, sigmas) {
				for _, cv := range cs {
					cands = append(cands, &candidate{s: s, sigma: sigma, c: cv})
				}
			}
		}
		sr.total = len(cands) * len(folds)
		if err := sr.evaluate(cands, full, sr.all); err != nil {
			return err
		}
		best = cands[0]
	} else {
		onAll, err := sr.halving(structures, sigmas, cs, full)
		if err != nil {
			return err
		}
		if c.P > 0 {
			// A fixed P is the model asked for: smaller fits do not compete.
			onAll = slices.DeleteFunc(onAll, func(cd candidate) bool { return cd.point.P != c.P })
		}
		maj := majorityOf(folds, ds.Classes)
		res.majority = maj
		best = choose(onAll, shifted, c.Selection, maj)
		best.s.P, best.s.Trees = best.point.P, best.point.Trees
		if best.sel.Accuracy < maj.accuracy {
			gain := best.sel.Balanced - maj.balanced
			if maj.admissible(best.sel) {
				res.Notes = append(res.Notes, fmt.Sprintf("on the validation rows the model is right less often than always answering %q (%.1f%% against %.1f%%), for %.1f points more balanced accuracy: it trades some of the common class for the others",
					maj.class, best.sel.Accuracy, maj.accuracy, gain))
			} else {
				res.Warnings = append(res.Warnings, fmt.Sprintf("on the validation rows the model is right less often than always answering %q (%.1f%% against %.1f%%), and only %.1f points ahead in balanced accuracy (no candidate did better): expect the majority class to be the better guess on later data like these rows",
					maj.class, best.sel.Accuracy, maj.accuracy, gain))
			}
		}
	}
	switch {
	case best.sel.Constant:
		return fmt.Errorf("%w: every candidate model is degenerate (the best is %s); the data may be too few or carry no signal the model can use", ErrDegenerate, best.sel.Degenerate)
	case best.sel.Degenerate != "":
		// Not refused: the user may still want to look at it, and the
		// warning says what to expect.
		res.Warnings = append(res.Warnings, fmt.Sprintf("no candidate beat chance on the validation rows (the best: balanced accuracy %.1f%% on %s): the validation rows were not predictable from the rows before them by any model tried, so expect chance on later data; more rows, other features or a shorter horizon may help",
			best.sel.Balanced, how))
	}
	for _, p := range res.Search {
		if p.Degenerate != "" && best.sel.Degenerate == "" {
			res.Notes = append(res.Notes, "skipped degenerate candidates (e.g. "+p.Degenerate+")")
			break
		}
	}
	res.Structure, res.Sigma, res.C = best.s, best.sigma, best.c
	res.Notes = append(res.Notes, edgeNotes(best, sigmas, cs)...)
	sel := best.point
	res.Selected = &sel
	res.held, res.heldKind = best.held, pl.kind
	for _, f := range folds {
		res.valSets = append(res.valSets, f.val)
	}
	valRows := make([]int, len(ds.Classes))
	for _, f := range folds {
		for _, y := range f.val.Y {
			valRows[y]++
		}
	}
	res.Warnings = append(res.Warnings, validationWarnings(best.sel, ds.Classes, valRows)...)
	return nil
}

// treeCaps boosts the folds' trees of each depth far enough to know the
// most trees any structure may ask for: no structure asks for more trees
// than some fold found worth boosting (stopping early on its held-out
// rows). most[depth] is the most trees of that depth any structure asks
// for; the cap is the most any fold boosts, up to that.
//
// The cap is the same whichever fold is boosted first, and once one gets
// to most[depth] no other fold can raise it: the folds are boosted in
// order of their training rows, fewest first, each only if every one
// before it stopped early. The others then boost only as many trees as
// the rounds use (each round on from the last, so the trees are those of
// one run). The fold with the fewest rows is the cheapest to boost trees
// the rounds may never fit (drift128: the earliest fold's 14,000 rows,
// not the latest's 18,000; weather-aus: its smallest fold gets to 1,024
// depth-2 trees, where the latest stops at 174 and the next at 406).
func (sr *searcher) treeCaps(most map[int]int) (map[int]int, error) {
	order := make([]int, len(sr.folds))
	for k := range order {
		order[k] = k
	}
	slices.SortStableFunc(order, func(a, b int) int { return sr.folds[a].train.N - sr.folds[b].train.N })
	caps := map[int]int{}
	for depth, n := range most {
		if n == 0 {
			continue
		}
		for _, k := range order {
			if _, err := sr.preps[k].trees(depth, n, sr.c.Seed); err != nil {
				return nil, err
			}
			caps[depth] = max(caps[depth], sr.preps[k].boosted(depth))
			if caps[depth] == n {
				break
			}
		}
	}
	return caps, nil
}

// evaluate fits every candidate at size sz on each fold, scores it on the
// fold's held-out rows, records it in the result and ranks cands.
func (sr *searcher) evaluate(cands []*candidate, sz size, folds []int) error {
	c, ds := sr.c, sr.ds
	if len(cands) == 0 {
		return nil
	}
	sr.round++
	// Candidates sharing a structure and σ share one embedding per fold.
	type group struct {
		s     Structure
		sigma float64
	}
	byGroup := map[group][]*candidate{}
	var order []group
	tallies := make(map[*candidate][]*tally, len(cands))
	for _, cd := range cands {
		g := group{cd.s, cd.sigma}
		if _, ok := byGroup[g]; !ok {
			order = append(order, g)
		}
		byGroup[g] = append(byGroup[g], cd)
		for range folds {
			tallies[cd] = append(tallies[cd], newTally(len(ds.Classes)))
		}
		cd.point = SearchPoint{Structure: cd.s, Sigma: cd.sigma, C: cd.c, Stage: sr.round}
		cd.point.P = roundP(cd.s, sz, sr.pmax)
		cd.point.Trees = roundTrees(cd.s, sz)
	}
	// Each (fold, group) is one task: the group's embedding of the fold's
	// rows and a fit per candidate. Tasks run in parallel, each on one
	// core, when their embeddings are small — a two-class fit's linear SVM
	// start runs on one core, so this is what keeps both cores busy; large
	// embeddings go one at a time, each using every core, so memory stays
	// that of one embedding. Every task writes its own slots, so the
	// result does not depend on the schedule.
	type task struct {
		fi   int // fold index
		slot int // its place in folds
		g    group
		sub  *data.Dataset
		size int64 // memory of its fits
	}
	var tasks []task
	var biggest int64
	for slot, fi := range folds {
		f := sr.folds[fi]
		sub := f.train
		if sub.N > sz.rows {
			var err error
			if _, sub, err = data.SplitCount(f.train, sz.rows, c.Seed^seedRoundRows); err != nil {
				return err
			}
		}
		for _, g := range order {
			cols := roundP(g.s, sz, sr.pmax) + g.s.Thresholds*ds.D + roundTrees(g.s, sz)<<g.s.Depth
			// The embedding's bits, and the linear SVM start's dense signs
			// (float32), which models of trees alone do without.
			bytes := int64(sub.N) * int64(cols) / 8
			if g.s.P > 0 || g.s.Thresholds > 0 {
				bytes += int64(min(c.InitRows, sub.N)) * int64(cols) * 4
			}
			t := task{fi: fi, slot: slot, g: g, sub: sub, size: bytes}
			biggest = max(biggest, t.size)
			tasks = append(tasks, t)
		}
	}
	par := 1
	if biggest <= parallelEmbedBytes {
		par = min(c.Workers, len(tasks))
	}
	type result struct {
		bytes, nonzero int
		seconds        float64
	}
	results := make(map[*candidate][]result, len(cands))
	for _, cd := range cands {
		results[cd] = make([]result, len(folds))
	}
	var mu sync.Mutex
	run := func(t task, workers int) error {
		inner := *c
		inner.Workers = workers
		s := t.g.s
		s.P = roundP(s, sz, sr.pmax)
		s.Trees = roundTrees(s, sz)
		t0 := time.Now()
		prep := sr.preps[t.fi]
		base, err := prep.features(s, t.g.sigma, c.Seed)
		if err != nil {
			return err
		}
		cols, err := embedRows(base, t.sub, inner.Workers)
		if err != nil {
			return err
		}
		share := time.Since(t0).Seconds() / float64(len(byGroup[t.g]))
		for _, cd := range byGroup[t.g] {
			if err := c.cancelled(); err != nil {
				return err
			}
			t1 := time.Now()
			// Same λ as the final fit on all of ds: C scales with the
			// row count.
			cfit := cd.c * float64(ds.N) / float64(t.sub.N)
			spec, _, err := fitWeights(base, prep.leafStart(base), cols, t.sub, cfit, cd.s.Binary, &inner, "")
			if err != nil {
				return err
			}
			m, err := inference.New(spec)
			if err != nil {
				return err
			}
			tallies[cd][t.slot].add(m, sr.folds[t.fi].val, inner.Workers)
			r := result{nonzero: countNonZero(spec), seconds: time.Since(t1).Seconds() + share}
			if raw, err := sizingBundle(spec); err == nil {
				r.bytes = len(raw)
			}
			results[cd][t.slot] = r
			mu.Lock()
			sr.done++
			c.report("search", sr.done, max(sr.total, sr.done))
			mu.Unlock()
		}
		return nil
	}
	if par == 1 && biggest > parallelEmbedBytes {
		// Large fits one at a time: collect each one's embedding and dense
		// start before the next allocates its own, so the peak is one fit's
		// memory, not the two or three the collector's default pacing lets
		// pile up (mnist: 1.46 GB peak without).
		if err := parallel(tasks, 1, func(t task) error {
			defer runtime.GC()
			return run(t, c.Workers)
		}); err != nil {
			return err
		}
	} else {
		// par tasks at a time, each on its share of the cores; the tasks
		// left over when they do not divide evenly (3 folds on 2 cores)
		// then share all the cores, rather than one running while the
		// others' cores idle. The fits do not depend on their workers.
		even := len(tasks) - len(tasks)%par
		for _, batch := range [][]task{tasks[:even], tasks[even:]} {
			if len(batch) == 0 {
				continue
			}
			n := min(par, len(batch))
			if err := parallel(batch, n, func(t task) error { return run(t, max(1, c.Workers/n)) }); err != nil {
				return err
			}
		}
	}
	for _, cd := range cands {
		for slot, r := range results[cd] {
			cd.point.Bytes = max(cd.point.Bytes, r.bytes)
			cd.point.NonZero += r.nonzero
			cd.point.FitSeconds += r.seconds
			cd.point.Rows = max(cd.point.Rows, min(sr.folds[folds[slot]].train.N, sz.rows))
		}
	}
	for _, cd := range cands {
		cd.sel = scoreFolds(tallies[cd], c.Selection)
		cd.held = cd.held[:0]
		for _, t := range tallies[cd] {
			cd.held = append(cd.held, t.held)
		}
		cd.point.Accuracy, cd.point.Balanced, cd.point.Loss = cd.sel.Accuracy, cd.sel.Balanced, cd.sel.Loss
		cd.point.Score, cd.point.Spread, cd.point.SE, cd.point.Folds = cd.sel.Score, cd.sel.Spread, cd.sel.SE, cd.sel.Folds
		cd.point.Degenerate = cd.sel.Degenerate
		sr.res.Search = append(sr.res.Search, cd.point)
	}
	rank(cands)
	return nil
}

// edgeNotes says when the chosen σ or C sits on the edge of the grid it
// was chosen from: the best may lie beyond it.
func edgeNotes(best *candidate, sigmas, cs []float64) []string {
	var out []string
	edge := func(name, flag string, v float64, grid []float64) {
		if len(grid) < 2 {
			return
		}
		lo, hi := slices.Min(grid), slices.Max(grid)
		switch v {
		case lo:
			out = append(out, fmt.Sprintf("%s = %g is the smallest value searched; a smaller one may be better (%s)", name, v, flag))
		case hi:
			out = append(out, fmt.Sprintf("%s = %g is the largest value searched; a larger one may be better (%s)", name, v, flag))
		}
	}
	if best.s.P > 0 {
		edge("σ", "--sigma-grid", best.sigma, sigmas)
	}
	if best.c > 0 {
		edge("C", "--c-grid", best.c, cs)
	}
	return out
}

// sigmaGrid returns the kernel widths the search tries around m, the
// median distance between two scaled rows: the powers of two from m/4 to
// 4m (nearest to m in the middle). A Gaussian kernel much narrower than the
// typical distance sees every row as alone, much wider sees all rows as
// one; the paper's grid 2⁻⁵…2⁵ spans both for every data set, and the
// median heuristic (Schölkopf and Smola; Gretton et al.) centres five of
// its octaves where the data are — mnist's 20.5 on 784 pixels, 1.4 on
// electricity's 7 features.
func sigmaGrid(m float64) []float64 {
	if !(m > 0) || math.IsInf(m, 0) {
		return PaperSigmaGrid()
	}
	k := int(math.Round(math.Log2(m)))
	var g []float64
	for e := k - 2; e <= k+2; e++ {
		g = append(g, math.Ldexp(1, e))
	}
	return g
}

// medianDistance is the median Euclidean distance between 1,000 seeded
// random pairs of the n rows of d values in xs (missing values skipped).
func medianDistance(xs []float32, n, d int, seed uint64) float64 {
	if n < 2 {
		return 0
	}
	r := splitmix.New(seed ^ seedSigma)
	dist := make([]float64, 1000)
	for k := range dist {
		i, j := r.Intn(n), r.Intn(n)
		var sum float64
		for f := range d {
			if v := float64(xs[i*d+f] - xs[j*d+f]); v == v {
				sum += v * v
			}
		}
		dist[k] = math.Sqrt(sum)
	}
	slices.Sort(dist)
	return dist[len(dist)/2]
}

// parallelEmbedBytes bounds the memory of a search task's fits (its
// embedding and its start's dense signs) that runs beside others (see
// evaluate): above it, tasks run one at a time.
const parallelEmbedBytes = 32 << 20

// parallel runs f on every item with at most n at a time and returns the
// first error (items not yet started are then skipped).
func parallel[T any](items []T, n int, f func(T) error) error {
	if n <= 1 {
		for _, it := range items {
			if err := f(it); err != nil {
				return err
			}
		}
		return nil
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	next := make(chan T)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range next {
				mu.Lock()
				failed := first != nil
				mu.Unlock()
				if failed {
					continue
				}
				if err := f(it); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	for _, it := range items {
		next <- it
	}
	close(next)
	wg.Wait()
	return first
}

// ErrDegenerate reports that every candidate model predicted one class for
// every held-out row: there is no model to ship.
var ErrDegenerate = errors.New("training: no usable model")
