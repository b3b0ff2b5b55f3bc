package training

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/trit-iot/trit/inference"
	"github.com/trit-iot/trit/training/data"
)

// The search chooses the embedding's structure, σ and C on held-out rows
// (see validation) by successive halving: candidates are first fitted
// small — few random features, a subset of the rows — and only the best
// go on to larger fits, the last round at the final size:
//
//  1. every structure × σ at one C (the grid's middle), small;
//  2. the best few (structure, σ) pairs × every C, small;
//  3. the best few of those with more features and rows;
//  4. the best two at the final size; the best of them is refitted on all
//     rows.
//
// Rounds 3 and 4 also carry the best candidate of every embedding kind
// (kernel, mix, thresholds, projection, trees; see keepBest), since kinds
// scale differently with size. Tree finalists are also fitted on all the
// rows with the first 1/8, 1/4 and 1/2 of their trees (treePrefixes): the
// number of trees is chosen where it matters, on all the rows.
//
// C is carried between sizes as the objective's λ = 1/(2nC): a fit on n'
// rows uses C·n/n', where n is the size of the final training set, so a
// candidate means the same model at every size. Search "grid" instead fits
// every structure × σ × C at the final size (the paper's procedure).

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

// treePrefixes are the fractions of a tree finalist's trees also fitted
// on all the rows.
var treePrefixes = []float64{1.0 / 8, 1.0 / 4, 1.0 / 2}

const (
	screenPairs = 4 // (structure, σ) pairs that go on from round 1
	screenKeep  = 6 // candidates that go on from round 2
	finalists   = 2 // candidates fitted at the final size
)

type candidate struct {
	s        Structure
	sigma, c float64
	sel      selection
	point    SearchPoint
}

// searcher evaluates candidates on the validation folds.
type searcher struct {
	c     *Config
	ds    *data.Dataset
	folds []fold
	preps []*prepared
	res   *Result
	pmax  int // the largest structure's P
	round int
	done  int
	total int
}

// search fills res.Structure, res.Sigma, res.C and the search record.
func search(ds *data.Dataset, c *Config, structures []Structure, res *Result) error {
	folds, how, notes, err := c.validation(ds)
	if err != nil {
		return err
	}
	res.Validation, res.Notes = how, append(res.Notes, notes...)
	sr := &searcher{c: c, ds: ds, folds: folds, res: res, preps: make([]*prepared, len(folds))}
	for _, s := range structures {
		sr.pmax = max(sr.pmax, s.P)
	}
	for i, f := range folds {
		if sr.preps[i], err = prepare(f.train, c.fitScaler(f.train)); err != nil {
			return err
		}
		// Boost each fold's trees once, as many as any structure of that
		// depth asks for: the others and smaller rounds use the first ones.
		most := map[int]int{}
		for _, s := range structures {
			most[s.Depth] = max(most[s.Depth], s.Trees)
		}
		for depth, n := range most {
			if n > 0 {
				if _, err := sr.preps[i].trees(depth, n, c.Seed); err != nil {
					return err
				}
			}
		}
	}
	sigmas, cs := c.SigmaGrid, c.CGrid
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
	grid := func(ss []Structure, sg, cv []float64) []*candidate {
		var out []*candidate
		for _, s := range ss {
			sg := sg
			if s.P == 0 {
				sg = []float64{0} // no random features: σ means nothing
			}
			for _, x := range sg {
				for _, y := range cv {
					out = append(out, &candidate{s: s, sigma: x, c: y})
				}
			}
		}
		return out
	}
	var best *candidate
	if c.Search == "grid" {
		cands := grid(structures, sigmas, cs)
		sr.total = len(cands) * len(folds)
		if err := sr.evaluate(cands, full); err != nil {
			return err
		}
		best = cands[0]
	} else {
		clamp := func(s size) size { return size{p: min(s.p, full.p), rows: min(s.rows, full.rows), trees: s.trees} }
		small := clamp(size{p: 512, rows: 2000, trees: 1.0 / 8})
		mid := clamp(size{p: 2048, rows: 8000, trees: 1.0 / 2})
		// Round 1: σ and structure at the middle C.
		cmid := cs[len(cs)/2]
		screen := grid(structures, sigmas, []float64{cmid})
		nPairs := min(screenPairs, len(screen))
		kinds := map[string]bool{}
		for _, s := range structures {
			kinds[s.Embedding()] = true
		}
		treePairs := 0 // pairs that also fit unsolved trees: at most this many
		for _, cd := range screen {
			if cd.s.Trees > 0 && c.C == 0 {
				treePairs = min(treePairs+1, nPairs)
			}
		}
		sr.total = len(folds) * (len(screen) + nPairs*(len(cs)-1) + treePairs + screenKeep + len(kinds) + (2+len(treePrefixes))*(finalists+len(kinds)))
		if err := sr.evaluate(screen, small); err != nil {
			return err
		}
		// Round 2: every C for the best pairs (the middle C is already
		// scored at this size).
		var round2 []*candidate
		for _, cd := range screen[:nPairs] {
			cv := cs
			if cd.s.Trees > 0 && c.C == 0 {
				// Trees also compete unsolved: the boosting's leaves rounded.
				cv = append([]float64{0}, cs...)
			}
			for _, cv := range cv {
				if cv == cmid {
					continue
				}
				round2 = append(round2, &candidate{s: cd.s, sigma: cd.sigma, c: cv})
			}
		}
		if err := sr.evaluate(round2, small); err != nil {
			return err
		}
		all := append(append([]*candidate(nil), screen...), round2...)
		rank(all)
		pool := keepBest(all, screenKeep)
		// Rounds 3 and 4: more features and rows, then the final size;
		// a round whose size was already scored is skipped. Every fit on
		// all the training rows competes for the final choice, whatever
		// its number of random features: on low-dimensional, noisy data a
		// model with fewer features than the budget allows generalises
		// better, and the bundle is then smaller than the budget.
		var onAllRows []candidate
		last := small
		if small.rows == full.rows {
			for _, cd := range pool {
				onAllRows = append(onAllRows, *cd)
			}
		}
		for _, sz := range []size{mid, full} {
			switch fits := pool; {
			case !sz.same(last):
				if err := sr.evaluate(fits, sz); err != nil {
					return err
				}
			case sz.trees > last.trees:
				// Only the trees grow: refit the tree candidates alone.
				fits = nil
				for _, cd := range pool {
					if cd.s.Trees > 0 {
						fits = append(fits, cd)
					}
				}
				if len(fits) == 0 {
					continue
				}
				if err := sr.evaluate(fits, sz); err != nil {
					return err
				}
				rank(pool)
			default:
				continue
			}
			pool = keepBest(pool, finalists)
			if sz.rows == full.rows {
				for _, cd := range pool {
					onAllRows = append(onAllRows, *cd)
				}
			}
			last = sz
		}
		// Fewer trees on all the rows: the boosting's later trees can fit
		// noise (a9a: 128 trees 85.1%, 515 trees 84.6% on the test rows),
		// and only rounds on fewer rows saw prefixes so far. Each tree
		// finalist is refitted with the first 1/8, 1/4 and 1/2 of its
		// trees — the same boosted sequence, so no boosting is repeated.
		var prefixes []*candidate
		for _, cd := range pool {
			if cd.s.Trees > 0 && last.rows == full.rows {
				prefixes = append(prefixes, cd)
			}
		}
		for _, f := range treePrefixes {
			if len(prefixes) == 0 {
				break
			}
			fits := make([]*candidate, len(prefixes))
			for i, cd := range prefixes {
				fits[i] = &candidate{s: cd.s, sigma: cd.sigma, c: cd.c}
			}
			if err := sr.evaluate(fits, size{p: full.p, rows: full.rows, trees: f}); err != nil {
				return err
			}
			for _, cd := range fits {
				onAllRows = append(onAllRows, *cd)
			}
		}
		best = choose(onAllRows)
		best.s.P, best.s.Trees = best.point.P, best.point.Trees
	}
	if best.sel.Degenerate != "" {
		return fmt.Errorf("%w: every candidate model is degenerate (the best is %s); the data may be too few or carry no signal the model can use", ErrDegenerate, best.sel.Degenerate)
	}
	for _, p := range res.Search {
		if p.Degenerate != "" {
			res.Notes = append(res.Notes, "skipped degenerate candidates (e.g. "+p.Degenerate+")")
			break
		}
	}
	res.Structure, res.Sigma, res.C = best.s, best.sigma, best.c
	sel := best.point
	res.Selected = &sel
	return nil
}

// keepBest returns the first n of the ranked candidates and, after them,
// the best usable candidate of every other embedding kind (see
// Structure.Embedding). Kinds scale differently — random features judged
// at 512 features on 2,000 rows lose to threshold bits, whose size does not
// grow, yet win at full size — so no kind is dropped on small fits alone:
// each kind's best reaches the final size.
func keepBest(ranked []*candidate, n int) []*candidate {
	out := ranked[:min(n, len(ranked)):min(n, len(ranked))]
	seen := map[string]bool{}
	for _, cd := range out {
		seen[cd.s.Embedding()] = true
	}
	for _, cd := range ranked[len(out):] {
		if k := cd.s.Embedding(); !seen[k] && cd.sel.Degenerate == "" {
			seen[k] = true
			out = append(out, cd)
		}
	}
	return out
}

// choose returns the final candidate: the best by balanced accuracy — but
// when threshold bits alone (an additive model, the simplest structure)
// score within one standard error of the best, those, since on a small or
// autocorrelated validation set a difference that size is noise, and the
// simpler model is the one that holds up on later data.
func choose(cands []candidate) *candidate {
	best := &cands[0]
	for i := range cands {
		if cands[i].sel.better(best.sel) {
			best = &cands[i]
		}
	}
	var simple *candidate
	for i := range cands {
		cd := &cands[i]
		if cd.s.Embedding() == "thresholds" && cd.sel.Degenerate == "" && cd.sel.Balanced >= best.sel.Balanced-best.sel.SE &&
			(simple == nil || cd.sel.better(simple.sel)) {
			simple = cd
		}
	}
	if simple != nil {
		return simple
	}
	return best
}

// rank sorts candidates best first. Stable: among equal scores the earlier
// candidate (smaller σ, then smaller C, in grid order) stays ahead.
func rank(cands []*candidate) {
	slices.SortStableFunc(cands, func(a, b *candidate) int {
		switch {
		case a.sel.better(b.sel):
			return -1
		case b.sel.better(a.sel):
			return 1
		}
		return 0
	})
}

// evaluate fits every candidate at size sz on each fold, scores it on the
// fold's held-out rows, records it in the result and ranks cands.
func (sr *searcher) evaluate(cands []*candidate, sz size) error {
	c, ds := sr.c, sr.ds
	sr.round++
	// Candidates sharing a structure and σ share one embedding per fold.
	type group struct {
		s     Structure
		sigma float64
	}
	byGroup := map[group][]*candidate{}
	var order []group
	tallies := make(map[*candidate]*tally, len(cands))
	for _, cd := range cands {
		g := group{cd.s, cd.sigma}
		if _, ok := byGroup[g]; !ok {
			order = append(order, g)
		}
		byGroup[g] = append(byGroup[g], cd)
		tallies[cd] = newTally(len(ds.Classes))
		cd.point = SearchPoint{Structure: cd.s, Sigma: cd.sigma, C: cd.c, Stage: sr.round}
		cd.point.P = roundP(cd.s, sz, sr.pmax)
		cd.point.Trees = roundTrees(cd.s, sz)
	}
	for fi, f := range sr.folds {
		sub := f.train
		if sub.N > sz.rows {
			var err error
			if _, sub, err = data.SplitCount(f.train, sz.rows, c.Seed^0x5ab); err != nil {
				return err
			}
		}
		for _, g := range order {
			s := g.s
			s.P = roundP(s, sz, sr.pmax)
			s.Trees = roundTrees(s, sz)
			t0 := time.Now()
			base, err := sr.preps[fi].features(s, g.sigma, c.Seed)
			if err != nil {
				return err
			}
			cols, err := embedRows(base, sub, c.Workers)
			if err != nil {
				return err
			}
			share := time.Since(t0).Seconds() / float64(len(byGroup[g]))
			for _, cd := range byGroup[g] {
				if err := c.cancelled(); err != nil {
					return err
				}
				t1 := time.Now()
				// Same λ as the final fit on all of ds: C scales with the
				// row count.
				cfit := cd.c * float64(ds.N) / float64(sub.N)
				spec, _, err := fitWeights(base, sr.preps[fi].leafStart(base), cols, sub, cfit, cd.s.Binary, c, "")
				if err != nil {
					return err
				}
				m, err := inference.New(spec)
				if err != nil {
					return err
				}
				tallies[cd].add(m, f.val, c.Workers)
				cd.point.NonZero += countNonZero(spec)
				cd.point.Rows = max(cd.point.Rows, sub.N)
				cd.point.FitSeconds += time.Since(t1).Seconds() + share
				sr.done++
				c.report("search", sr.done, max(sr.total, sr.done))
			}
		}
	}
	for _, cd := range cands {
		cd.sel = tallies[cd].score()
		cd.point.Accuracy, cd.point.Balanced, cd.point.Loss = cd.sel.Accuracy, cd.sel.Balanced, cd.sel.Loss
		cd.point.Degenerate = cd.sel.Degenerate
		sr.res.Search = append(sr.res.Search, cd.point)
	}
	rank(cands)
	return nil
}

// ErrDegenerate reports that no candidate model was better than a constant
// prediction on the held-out rows.
var ErrDegenerate = errors.New("training: no usable model")
