package ternary

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"slices"
	"sync"
)

// Options configures Solve. A nil *Options means the defaults.
type Options struct {
	Lambda    float64 // λ > 0; default 1e-4
	Loss      Loss    // default Hinge
	Reg       Reg     // default L2
	Tol       float64 // stop when a round lowers the objective by less than Tol·|objective|; default 1e-5
	MaxRounds int     // α-steps at most; default 30
	MaxSweeps int     // coordinate sweeps per α-step at most; default 10
	// Workers bounds the goroutines used within one problem (large n only);
	// 0 means GOMAXPROCS. The result does not depend on it.
	Workers int
	// Binary restricts the weights to {-1, +1} (no 0), the binary-coefficient
	// variant the paper compares against: a zero in w0 starts as +1 and a
	// sweep only tries the opposite sign.
	Binary bool
	// Mult, if not nil, weighs column j's contribution to every score by the
	// integer Mult[j] >= 1: scores are α·Σ_j Mult[j]·w_j·z_j, still integers
	// times α. Models use it to give threshold bits more weight than random
	// features (inference.ModelSpec.ThresholdWeight). nil means all 1.
	Mult []int32
}

func (o *Options) withDefaults() Options {
	var v Options
	if o != nil {
		v = *o
	}
	if v.Lambda == 0 {
		v.Lambda = 1e-4
	}
	if v.Tol == 0 {
		v.Tol = 1e-5
	}
	if v.MaxRounds == 0 {
		v.MaxRounds = 30
	}
	if v.MaxSweeps == 0 {
		v.MaxSweeps = 10
	}
	if v.Workers <= 0 {
		v.Workers = runtime.GOMAXPROCS(0)
	}
	return v
}

// Step records the objective after one step of the solver.
type Step struct {
	Kind      string  // "init", "alpha" or "sweep"
	Objective float64 // the full objective after the step
	Changed   int     // coordinates changed (sweeps)
	NonZero   int     // non-zero weights after the step
}

// Result is a solved problem.
type Result struct {
	W         []int8
	Alpha     float64
	Objective float64
	History   []Step // one entry per step, in order: the objective never increases
	Sweeps    int
	Converged bool // stopped by Tol rather than by MaxRounds
}

// ErrInput reports arguments Solve cannot work with.
var ErrInput = errors.New("ternary: invalid input")

// maxBound bounds Σ_j Mult[j], the largest |margin|: the loss table has
// 2·bound+1 entries.
const maxBound = 1 << 24

// chunkWords is the number of 64-sample words per summation chunk. Sums are
// formed per chunk and then added in chunk order, so the result is the same
// whether chunks run on one goroutine or many.
const chunkWords = 64

// parallelMinN is the sample count from which a coordinate's sums are split
// across goroutines; below it the hand-off costs more than it saves.
const parallelMinN = 1 << 15

// Solve minimises the objective for binary features z (column-major, see
// Columns) and labels y (bit i set means y_i = +1), starting from w0 and α0
// (w0 is copied). The paper initialises w0 = sign(w_full), α0 = ‖w_full‖₁/p
// from a linear SVM on a subset of the data; any start works.
func Solve(z *Columns, y []uint64, w0 []int8, alpha0 float64, opt *Options) (*Result, error) {
	o := opt.withDefaults()
	switch {
	case !z.wellFormed():
		return nil, fmt.Errorf("%w: malformed feature matrix", ErrInput)
	case len(y) != z.Words:
		return nil, fmt.Errorf("%w: %d label words for %d samples", ErrInput, len(y), z.N)
	case len(w0) != z.P:
		return nil, fmt.Errorf("%w: %d initial weights for p = %d", ErrInput, len(w0), z.P)
	case !(alpha0 > 0) || math.IsInf(alpha0, 0):
		return nil, fmt.Errorf("%w: initial α = %g", ErrInput, alpha0)
	case !(o.Lambda > 0) || math.IsInf(o.Lambda, 0):
		return nil, fmt.Errorf("%w: λ = %g", ErrInput, o.Lambda)
	case o.Loss < Hinge || o.Loss > Square || o.Reg < L2 || o.Reg > L1:
		return nil, fmt.Errorf("%w: unknown loss or regulariser", ErrInput)
	case o.Mult != nil && len(o.Mult) != z.P:
		return nil, fmt.Errorf("%w: %d column multipliers for p = %d", ErrInput, len(o.Mult), z.P)
	}
	bound := int64(z.P)
	if o.Mult != nil {
		bound = 0
		for j, m := range o.Mult {
			if m < 1 {
				return nil, fmt.Errorf("%w: column %d has multiplier %d, want >= 1", ErrInput, j, m)
			}
			bound += int64(m)
		}
		if bound > maxBound {
			return nil, fmt.Errorf("%w: multipliers sum to %d, above %d", ErrInput, bound, maxBound)
		}
	}
	s := newSolver(z, y, w0, alpha0, &o, int(bound))
	return s.run(), nil
}

type solver struct {
	z       *Columns
	bound   int   // the largest possible |margin|: Σ_j mult(j)
	maxMult int32 // the largest mult(j): a move changes a margin by at most 2·maxMult
	y       []uint64
	o       *Options
	w       []int8
	alpha   float64
	nnz     int
	m       []int32   // margins y_i·wᵀz_i
	table   []float64 // table[m+bound] = ℓ(α m)
	loss    float64   // Σ_i ℓ(α m_i), a fresh chunked sum
	hist    []Step
	// Per-chunk partial sums for the two candidate moves of a coordinate.
	part [][2]float64

	// Active set, for losses that are exactly 0 beyond a margin (hinge and
	// squared hinge). zeroFrom is the smallest margin from which the loss
	// table is 0; a sample with m_i >= zeroFrom+2 adds exactly 0 to every
	// trial (a move changes a margin by at most 2), so trials sum over
	// active only: the samples below that bound, plus any that were below it
	// at some point since the last rebuild (they add 0 too).
	useActive bool
	zeroFrom  int32
	active    []int32
	isActive  []bool // membership of active, so no sample is listed twice

	// The hinge filter (see lowerTrial). With D = 2·maxMult, a move shifts
	// a margin by at most D: a "deep" sample (m_i < zeroFrom-D) stays on the
	// linear part of the hinge whatever the move, a "band" sample
	// (zeroFrom-D <= m_i < zeroFrom+D) may cross the hinge, and the others
	// add 0. deep and band are bit sets of samples, nDeep the number of deep
	// samples and sumDeep the sum of their margins. rebuildActive computes
	// them and addColumn keeps them up to date; deep is nil when the filter
	// is off (losses other than hinge).
	deep    []uint64
	band    []uint64
	nDeep   int64
	sumDeep int64
	// bandList lists the band's samples for lowerTrial, so that its pass
	// over the words has no branch on band membership; it is rebuilt from
	// band when stale (after a move or a rebuild).
	bandList  []int32
	bandStale bool
	// bandPairs holds, for each move size |d| lowerTrial met since the
	// band was last rebuilt, the two table entries each band sample can
	// add (bandPairs.p); valid is false once the band or the margins
	// changed, and the buffer is reused.
	bandPairs []bandPairs

	inc  []incTable // addColumn's increment tables, by delta
	hits []uint64   // addColumnBatched's zone masks, a word each
}

// bandPairs are the band samples' loss table entries for a move of size
// d > 0, indexed by the column's bit: p[2t+b] = table[m_i + bound +
// (2b-1)·d·y_i] for the t-th sample i of bandList, where b is z_ij's bit
// and y_i = ±1 its label. The label is folded in when the pairs are made,
// so bandSum reads one bit of the column per band sample and nothing else.
type bandPairs struct {
	d     int32
	valid bool
	p     []float64
}

type incTable struct {
	delta int32
	tab   *[256][8]int32
}

func newSolver(z *Columns, y []uint64, w0 []int8, alpha0 float64, o *Options, bound int) *solver {
	s := &solver{
		z: z, y: y, o: o, bound: bound, maxMult: 1,
		w:     append([]int8(nil), w0...),
		alpha: alpha0,
		m:     make([]int32, z.N),
		table: make([]float64, 2*bound+1),
		part:  make([][2]float64, (z.Words+chunkWords-1)/chunkWords),
		// Hinge-type losses vanish beyond a margin; the others never do.
		useActive: o.Loss == Hinge || o.Loss == SquaredHinge,
	}
	for _, m := range o.Mult {
		s.maxMult = max(s.maxMult, m)
	}
	for j, v := range s.w {
		if v == 0 && o.Binary {
			v = 1
		}
		if v == 0 {
			continue
		}
		if v > 0 {
			s.w[j] = 1
		} else {
			s.w[j] = -1
		}
		s.nnz++
	}
	s.initMargins()
	return s
}

// initBlock is the number of 64-sample words initMargins counts at once.
const initBlock = 8

// initMargins sets every margin from w, as addColumn(j, w_j) for every
// column would from zero margins: m_i = y_i·Σ_j e_j·(2·z_ij − 1) with
// e_j = mult(j)·w_j and z_ij the stored bit. Columns that share storage
// (a leaf's planes) are summed first into one weight per stored column,
// e_s. Each |e_s| is split into its binary digits: a stored column joins
// group (d, sign) for every digit d set in |e_s|, so that
// Σ_s e_s·z_is = Σ_(d,sign) ±2^d·count_(d,sign),i. The counts are kept 64
// samples at once in bit-sliced counters (plane b holds bit b of 64
// counts), so a column costs a few word operations per 64 samples
// instead of one update per sample as addColumn would; the margins are
// the same integers.
func (s *solver) initMargins() {
	z := s.z
	eff := make([]int32, z.Stored())
	var sumE int32
	for j, v := range s.w {
		if v == 0 {
			continue
		}
		e := int32(v) * s.mult(j)
		eff[z.storedAt(j)] += e
		sumE += e
	}
	var maxAbs int32
	for _, e := range eff {
		maxAbs = max(maxAbs, e, -e)
	}
	digits := bits.Len32(uint32(maxAbs))
	groups := 2 * digits // group g = 2·digit + sign (0: e > 0, 1: e < 0)
	planes := bits.Len(uint(z.Stored()))
	// cnt[(k*groups+g)*planes+b] is plane b of word k's counter for group g.
	cnt := make([]uint64, initBlock*groups*planes)
	for w0 := 0; w0 < z.Words; w0 += initBlock {
		w1 := min(w0+initBlock, z.Words)
		clear(cnt)
		for st, e := range eff {
			if e == 0 {
				continue
			}
			sign := 0
			if e < 0 {
				sign, e = 1, -e
			}
			col := z.storedCol(st)[w0:w1]
			for ; e != 0; e &= e - 1 {
				g := 2*bits.TrailingZeros32(uint32(e)) + sign
				for k, x := range col {
					c := cnt[(k*groups+g)*planes : (k*groups+g+1)*planes]
					for b := 0; x != 0; b++ {
						c[b], x = c[b]^x, c[b]&x
					}
				}
			}
		}
		for k := range w1 - w0 {
			base := (w0 + k) * 64
			yw := s.y[w0+k]
			for i := range min(64, z.N-base) {
				var d int32
				for g := range groups {
					c := cnt[(k*groups+g)*planes : (k*groups+g+1)*planes]
					var n int32
					for b := range planes {
						n += int32(c[b]>>i&1) << b
					}
					if g&1 == 1 {
						n = -n
					}
					d += n << (g / 2)
				}
				h := 2*d - sumE
				if yw>>i&1 == 0 {
					h = -h
				}
				s.m[base+i] = h
			}
		}
	}
}

// mult is column j's multiplier.
func (s *solver) mult(j int) int32 {
	if s.o.Mult == nil {
		return 1
	}
	return s.o.Mult[j]
}

// addColumn adds delta·mult(j)·y_i·z_ij to every margin, appends to the
// active set the samples whose margin drops below the activity bound, and
// keeps the hinge filter's sets up to date.
func (s *solver) addColumn(j int, delta int32) {
	delta *= s.mult(j)
	col := s.z.Col(j)
	m := s.m
	y := s.y[:len(col)]
	if (useAVX512 || useAVX2) && len(m) >= 64 {
		s.addColumnBatched(col, y, delta)
		return
	}
	if !s.useActive || s.active == nil {
		for wi, zw := range col {
			c := ^(zw ^ y[wi]) // bit set: y_i z_ij = +1
			base := wi * 64
			mm := m[base:min(base+64, len(m))]
			for b := range mm {
				mm[b] += (int32(c>>b&1)*2 - 1) * delta
			}
		}
		return
	}
	// Only a sample whose old margin is within |delta| of the filter's
	// or the active set's bounds can change membership: the zone
	// [deepLo-|delta|, bound+|delta|).
	ad := max(delta, -delta)
	zlo := s.zeroFrom - 2*s.maxMult - ad
	zw := uint32(4*s.maxMult + 2*ad)
	filter := s.deep != nil
	var deep []uint64
	if filter {
		deep = s.deep[:len(col)]
		s.bandStale = true
	}
	tab := s.incTable(delta)
	for wi, zw0 := range col {
		c := ^(zw0 ^ y[wi])
		base := wi * 64
		if filter && deep[wi] != 0 {
			// Every deep sample's margin moves by ±delta; cross corrects
			// for those that leave.
			dw := deep[wi]
			s.sumDeep += int64(delta) * int64(2*bits.OnesCount64(dw&c)-bits.OnesCount64(dw))
		}
		mm := m[base:min(base+64, len(m))]
		// The samples in the zone are handled after the word, so that
		// addWord makes no call and keeps its state in registers.
		hit := addWord(mm, c, tab, zlo, zw)
		for ; hit != 0; hit &= hit - 1 {
			b := bits.TrailingZeros64(hit)
			nw := mm[b]
			old := nw + delta
			if c>>b&1 == 1 {
				old = nw - delta
			}
			s.cross(base+b, old, nw)
		}
	}
}

// addColumnBatched is addColumn's loops with addColumn512 (AVX-512) or
// addColumnAVX2 for the full words: first every word's change to sumDeep,
// then the margins and zone masks of all full words in one call, then the
// last word's in Go, then the zone's samples word by word, in the order
// addColumn's loop takes them. A word's deep bits change only when its
// own zone samples cross, so counting them first sees what the loop saw;
// sumDeep is an integer sum. The same margins, sets and sums (TestSolveMatchesReference
// runs whichever path the CPU takes; TestAddColumn512 and
// TestAddColumnAVX2 compare each kernel with addWord).
func (s *solver) addColumnBatched(col, y []uint64, delta int32) {
	m := s.m
	full := len(m) / 64
	if cap(s.hits) < len(col) {
		s.hits = make([]uint64, len(col))
	}
	hits := s.hits[:len(col)]
	var zlo int32
	var zw uint32
	if s.useActive && s.active != nil {
		ad := max(delta, -delta)
		zlo = s.zeroFrom - 2*s.maxMult - ad
		zw = uint32(4*s.maxMult + 2*ad)
		if s.deep != nil {
			deep := s.deep[:len(col)]
			s.bandStale = true
			for wi, dw := range deep {
				if dw != 0 {
					c := ^(col[wi] ^ y[wi])
					s.sumDeep += int64(delta) * int64(2*bits.OnesCount64(dw&c)-bits.OnesCount64(dw))
				}
			}
		}
	}
	if useAVX512 {
		addColumn512(&m[0], &col[0], &y[0], full, delta, zlo, zw, &hits[0])
	} else {
		addColumnAVX2(&m[0], &col[0], &y[0], full, delta, zlo, zw, &hits[0])
	}
	if full < len(col) {
		c := ^(col[full] ^ y[full])
		hits[full] = addWord(m[full*64:], c, s.incTable(delta), zlo, zw)
	}
	if zw == 0 {
		return
	}
	for wi, hit := range hits {
		base := wi * 64
		c := ^(col[wi] ^ y[wi])
		for ; hit != 0; hit &= hit - 1 {
			b := bits.TrailingZeros64(hit)
			nw := m[base+b]
			old := nw + delta
			if c>>b&1 == 1 {
				old = nw - delta
			}
			s.cross(base+b, old, nw)
		}
	}
}

// addWord adds tab's increments for sign bits c to the margins mm of one
// word (at most 64) and returns the mask of the samples whose old margin
// was in the zone [zlo, zlo+zw).
func addWord(mm []int32, c uint64, tab *[256][8]int32, zlo int32, zw uint32) uint64 {
	var hit uint64
	q := 0
	for ; q+8 <= len(mm); q += 8 {
		g := (*[8]int32)(mm[q : q+8])
		t := &tab[byte(c>>q)]
		for b := range 8 {
			old := g[b]
			g[b] = old + t[b]
			if uint32(old-zlo) < zw {
				hit |= 1 << (q + b)
			}
		}
	}
	for ; q < len(mm); q++ {
		old := mm[q]
		mm[q] = old + tab[byte(c>>(q&^7))][q&7]
		if uint32(old-zlo) < zw {
			hit |= 1 << q
		}
	}
	return hit
}

// incTable returns the increments of delta by byte of sign bits:
// tab[c][b] is delta if bit b of c is set, else -delta. The tables are
// built on first use; a solve needs at most four per distinct multiplier.
func (s *solver) incTable(delta int32) *[256][8]int32 {
	for _, t := range s.inc {
		if t.delta == delta {
			return t.tab
		}
	}
	tab := new([256][8]int32)
	for c := range tab {
		for b := range tab[c] {
			tab[c][b] = -delta
			if c>>b&1 == 1 {
				tab[c][b] = delta
			}
		}
	}
	s.inc = append(s.inc, incTable{delta, tab})
	return tab
}

// cross updates the active set and the filter's sets for sample i, whose
// margin moved from old to nw.
func (s *solver) cross(i int, old, nw int32) {
	bound := s.zeroFrom + 2*s.maxMult
	if old >= bound && nw < bound && !s.isActive[i] {
		s.active = append(s.active, int32(i))
		s.isActive[i] = true
	}
	if s.deep == nil {
		return
	}
	deepLo := s.zeroFrom - 2*s.maxMult
	bit := uint64(1) << (i & 63)
	was, is := old < deepLo, nw < deepLo
	switch {
	case was && !is:
		s.deep[i>>6] &^= bit
		s.nDeep--
		s.sumDeep -= int64(nw)
	case !was && is:
		s.deep[i>>6] |= bit
		s.nDeep++
		s.sumDeep += int64(nw)
	}
	if !is && nw < bound {
		s.band[i>>6] |= bit
	} else {
		s.band[i>>6] &^= bit
	}
}

// rebuildActive recomputes zeroFrom from the loss table and the active set
// from the margins, in sample order.
func (s *solver) rebuildActive() {
	if !s.useActive {
		return
	}
	k := len(s.table)
	for k > 0 && s.table[k-1] == 0 {
		k--
	}
	s.zeroFrom = int32(k - s.bound)
	bound := s.zeroFrom + 2*s.maxMult
	if s.active == nil {
		s.active = make([]int32, 0, len(s.m))
		s.isActive = make([]bool, len(s.m))
	}
	s.active = s.active[:0]
	for i, m := range s.m {
		s.isActive[i] = m < bound
		if s.isActive[i] {
			s.active = append(s.active, int32(i))
		}
	}
	if s.o.Loss != Hinge {
		return
	}
	if s.deep == nil {
		s.deep = make([]uint64, s.z.Words)
		s.band = make([]uint64, s.z.Words)
	}
	clear(s.deep)
	clear(s.band)
	s.bandStale = true
	s.nDeep, s.sumDeep = 0, 0
	deepLo := s.zeroFrom - 2*s.maxMult
	for i, m := range s.m {
		switch {
		case m < deepLo:
			s.deep[i>>6] |= 1 << (i & 63)
			s.nDeep++
			s.sumDeep += int64(m)
		case m < bound:
			s.band[i>>6] |= 1 << (i & 63)
		}
	}
}

func (s *solver) objective() float64 {
	return s.loss/float64(s.z.N) + s.o.Lambda*s.o.Reg.penalty(s.alpha, s.nnz)
}

// setAlpha fixes α, rebuilds the loss table and the loss sum.
func (s *solver) setAlpha(alpha float64) {
	s.alpha = alpha
	p := s.bound
	for k := range s.table {
		s.table[k] = s.o.Loss.Value(alpha * float64(k-p))
	}
	var sum float64
	for ci := range s.part {
		lo, hi := ci*chunkWords*64, min((ci+1)*chunkWords*64, s.z.N)
		var c float64
		for _, m := range s.m[lo:hi] {
			c += s.table[int(m)+p]
		}
		sum += c
	}
	s.loss = sum
	s.rebuildActive()
}

func (s *solver) record(kind string, changed int) {
	s.hist = append(s.hist, Step{Kind: kind, Objective: s.objective(), Changed: changed, NonZero: s.nnz})
}

func (s *solver) alphaStep() {
	h := newHistogram(s.m, s.bound)
	s.setAlpha(h.solveAlpha(s.o.Loss, s.o.Reg, s.o.Lambda, s.nnz, s.alpha))
}

func (s *solver) run() *Result {
	s.setAlpha(s.alpha)
	s.record("init", 0)
	sweeps, converged := 0, false
	for range s.o.MaxRounds {
		before := s.objective()
		s.alphaStep()
		s.record("alpha", 0)
		for range s.o.MaxSweeps {
			start := s.objective()
			changed := s.sweep()
			sweeps++
			s.record("sweep", changed)
			if changed == 0 || start-s.objective() < s.o.Tol*math.Abs(start) {
				break
			}
		}
		if before-s.objective() < s.o.Tol*math.Abs(before) {
			converged = true
			break
		}
	}
	return &Result{
		W: s.w, Alpha: s.alpha, Objective: s.objective(),
		History: s.hist, Sweeps: sweeps, Converged: converged,
	}
}

// sweep runs one pass of bit-by-bit coordinate descent over j = 0..p-1 and
// returns how many weights changed. For w_j = v0 it evaluates the two other
// values v exactly, with Δ = v - v0:
//
//	L(v) = (1/n) Σ_i ℓ(α(m_i + Δ y_i z_ij)) + λ R(α, nnz - |v0| + |v|)
//
// in O(n) through the loss table, and moves to the best one if it lowers the
// objective.
func (s *solver) sweep() int {
	s.rebuildActive() // drop samples that left the active range
	changed := 0
	n := float64(s.z.N)
	lam, reg := s.o.Lambda, s.o.Reg
	for j := range s.z.P {
		v0 := s.w[j]
		var cand [2]int8
		switch v0 {
		case -1:
			cand = [2]int8{0, 1}
		case 0:
			cand = [2]int8{-1, 1}
		default:
			cand = [2]int8{-1, 0}
		}
		if s.o.Binary {
			// Only the sign flip is allowed: both candidates are -v0.
			cand = [2]int8{-v0, -v0}
		}
		d1, d2 := int32(cand[0]-v0), int32(cand[1]-v0)
		cur := s.objective()
		nnz0 := s.nnz - int(v0*v0)
		// A move must beat the current value by more than rounding noise, so
		// the objective strictly decreases and the sweep cannot cycle.
		eps := 1e-12 * math.Max(1, math.Abs(cur))
		if s.deep != nil {
			// The filter bounds l1 and l2 from below; the objective is
			// monotone in them, so if even the bounds do not beat cur-eps,
			// the exact sums would not either, and w_j stays. (Written so
			// that a NaN bound falls through to the exact sums.)
			lo1, lo2 := s.lowerTrial(j, d1, d2)
			o1 := lo1/n + lam*reg.penalty(s.alpha, nnz0+int(cand[0]*cand[0]))
			o2 := lo2/n + lam*reg.penalty(s.alpha, nnz0+int(cand[1]*cand[1]))
			if o1 >= cur-eps && o2 >= cur-eps {
				continue
			}
		}
		l1, l2 := s.trial(j, d1, d2)
		o1 := l1/n + lam*reg.penalty(s.alpha, nnz0+int(cand[0]*cand[0]))
		o2 := l2/n + lam*reg.penalty(s.alpha, nnz0+int(cand[1]*cand[1]))
		best, bestObj, bestLoss, delta := v0, cur, s.loss, int32(0)
		if o1 < bestObj-eps {
			best, bestObj, bestLoss, delta = cand[0], o1, l1, d1
		}
		if o2 < bestObj-eps {
			best, bestObj, bestLoss, delta = cand[1], o2, l2, d2
		}
		if best == v0 {
			continue
		}
		s.addColumn(j, delta)
		s.w[j] = best
		s.nnz = nnz0 + int(best*best)
		s.loss = bestLoss
		changed++
	}
	return changed
}

// activeChunk is the number of active samples per summation chunk.
const activeChunk = chunkWords * 64

// trial returns Σ_i ℓ(α(m_i + d·mult(j)·y_i z_ij)) for d = d1 and d = d2.
func (s *solver) trial(j int, d1, d2 int32) (float64, float64) {
	col := s.z.Col(j)
	d1, d2 = d1*s.mult(j), d2*s.mult(j)
	var chunks, size int
	var work func(ci int)
	if s.useActive {
		size = len(s.active)
		chunks = (size + activeChunk - 1) / activeChunk
		work = func(ci int) {
			lo, hi := ci*activeChunk, min((ci+1)*activeChunk, size)
			s.part[ci] = s.activeTrial(col, s.active[lo:hi], d1, d2)
		}
	} else {
		size = s.z.N
		chunks = len(s.part)
		work = func(ci int) {
			lo, hi := ci*chunkWords, min((ci+1)*chunkWords, len(col))
			s.part[ci] = s.chunkTrial(col, lo, hi, d1, d2)
		}
	}
	if workers := min(s.o.Workers, chunks); workers > 1 && size >= parallelMinN {
		var wg sync.WaitGroup
		for g := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ci := g; ci < chunks; ci += workers {
					work(ci)
				}
			}()
		}
		wg.Wait()
	} else {
		for ci := range chunks {
			work(ci)
		}
	}
	var a, b float64
	for _, p := range s.part[:chunks] {
		a += p[0]
		b += p[1]
	}
	return a, b
}

// lowerTrial returns lower bounds of the two sums trial(j, d1, d2) returns,
// from O(n/64) popcounts and the band samples instead of a pass over the
// active set. For hinge loss the table is ℓ_k = fl(1 - fl(α·k)) > 0 below
// zeroFrom, within u·(1 + 2α|k|)·(1+u) of 1 - α·k (u = 2^-53, whether or
// not the compiler fuses the two operations). A deep sample's new margin
// m_i + d·y_i z_ij stays below zeroFrom, so the deep samples add up to
// about nDeep - α·(sumDeep + d·Σ_deep y_i z_ij), an exact integer scaled
// once; the band samples are summed from the table; the other samples add
// exactly 0. Bounding the error of that estimate, and that of the
// reference's own float summation over the active set (at most γ_{A+2}
// times the true sum, whatever the chunking), gives an interval around the
// value trial returns; the lower end, with the error doubled for margin,
// is returned.
func (s *solver) lowerTrial(j int, d1, d2 int32) (float64, float64) {
	col := s.z.Col(j)
	y := s.y[:len(col)]
	deep := s.deep[:len(col)]
	pos := 0
	switch {
	case usePopcnt512 && len(col) > 0:
		pos = deepAgree512(&deep[0], &col[0], &y[0], len(col))
	case useAVX2 && len(col) > 0:
		pos = deepAgreeAVX2(&deep[0], &col[0], &y[0], len(col))
	default:
		for w, zw := range col {
			pos += bits.OnesCount64(deep[w] &^ (zw ^ y[w])) // deep, y_i z_ij = +1
		}
	}
	sumS := 2*int64(pos) - s.nDeep // Σ_deep y_i z_ij
	if s.bandStale {
		s.bandList = s.bandList[:0]
		for w, bw := range s.band {
			for ; bw != 0; bw &= bw - 1 {
				s.bandList = append(s.bandList, int32(w*64+bits.TrailingZeros64(bw)))
			}
		}
		s.bandStale = false
		for k := range s.bandPairs {
			s.bandPairs[k].valid = false
		}
	}
	d1, d2 = d1*s.mult(j), d2*s.mult(j)
	nb := len(s.bandList)
	b1 := s.bandSum(col, d1)
	if d1 == d2 {
		// Binary weights: one move, one band sum.
		lo := s.lowerBound(d1, sumS, b1, nb)
		return lo, lo
	}
	return s.lowerBound(d1, sumS, b1, nb), s.lowerBound(d2, sumS, s.bandSum(col, d2), nb)
}

// bandSum returns the band samples' loss after a move d of column col:
//
//	Σ_i table[m_i + bound + d·y_i z_ij]   over i in bandList
//
// It reads the terms from the band's pairs for |d| (pairsFor), indexed by
// the column's bit (flipped for d < 0), so a band sample costs a bit and a
// load, with no branch on how the band falls in the words, and adds them
// in four running sums, so that the additions do not wait on one another.
// The terms are positive and lowerBound allows for any order of their
// summation (γ_n times the sum), so the bound holds and the solver takes
// the same steps.
func (s *solver) bandSum(col []uint64, d int32) float64 {
	flip := uint64(0)
	if d < 0 {
		// table[k - |d|·y_i z_ij] is the pair's other entry.
		d, flip = -d, 1
	}
	p := s.pairsFor(d)
	list := s.bandList
	p = p[:2*len(list)]
	bit := func(i int32) int { return int((col[uint32(i)>>6]>>(uint32(i)&63) ^ flip) & 1) }
	var s0, s1, s2, s3 float64
	t := 0
	for ; t+4 <= len(list); t += 4 {
		q := p[2*t : 2*t+8 : 2*t+8]
		s0 += q[bit(list[t])]
		s1 += q[2+bit(list[t+1])]
		s2 += q[4+bit(list[t+2])]
		s3 += q[6+bit(list[t+3])]
	}
	for ; t < len(list); t++ {
		s0 += p[2*t+bit(list[t])]
	}
	return (s0 + s1) + (s2 + s3)
}

// pairsFor returns the band's pairs for a move of size d > 0 (see
// bandPairs), computing them if the band or the margins changed since.
// An entry whose index falls outside the table is never read: a term
// table[m_i + bound ± d] that bandSum reads is the loss at a margin the
// move makes, and every margin is within ±bound; it is set to the
// table's end.
func (s *solver) pairsFor(d int32) []float64 {
	k := slices.IndexFunc(s.bandPairs, func(bp bandPairs) bool { return bp.d == d })
	if k < 0 {
		s.bandPairs = append(s.bandPairs, bandPairs{d: d})
		k = len(s.bandPairs) - 1
	}
	bp := &s.bandPairs[k]
	if !bp.valid {
		bp.p = slices.Grow(bp.p[:0], 2*len(s.bandList))[:2*len(s.bandList)]
		last := int32(len(s.table) - 1)
		off := int32(s.bound)
		for t, i := range s.bandList {
			k := s.m[i] + off
			yb := int(s.y[i>>6] >> (i & 63) & 1) // y_i = +1: z_ij's bit 1 moves the margin up
			bp.p[2*t+1-yb] = s.table[min(max(k-d, 0), last)]
			bp.p[2*t+yb] = s.table[min(max(k+d, 0), last)]
		}
		bp.valid = true
	}
	return bp.p
}

// lowerBound is lowerTrial's bound for one move d (times mult(j)), given
// Σ_deep y_i z_ij and the band samples' sum.
func (s *solver) lowerBound(d int32, sumS int64, band float64, nBand int) float64 {
	const u = 0x1p-53
	x := s.sumDeep + int64(d)*sumS // Σ_deep of the new margins, exact
	lin := float64(s.nDeep) - s.alpha*float64(x)
	est := lin + band
	// The estimate's error: the deep table entries against 1 - α·k (with
	// |k| <= bound), rounding α·x and the subtraction, the band's sum and
	// the final addition.
	nd, nb := float64(s.nDeep), float64(nBand)
	e := 1.01 * u * (nd*(1+2.01*s.alpha*float64(s.bound)) + s.alpha*math.Abs(float64(x)) + math.Abs(lin) +
		(nb+1)*math.Abs(band) + math.Abs(est))
	// The reference's summation error over the active set.
	a := float64(len(s.active) + 2)
	g := a * u / (1 - a*u)
	return est - 2*(e+g*(math.Abs(est)+e))
}

// activeTrial is trial over the listed samples of column col.
func (s *solver) activeTrial(col []uint64, idx []int32, d1, d2 int32) [2]float64 {
	table := s.table
	off := int32(s.bound)
	y, m := s.y, s.m
	if d1 == d2 {
		// Binary weights: both sums are the same, one pass suffices.
		var a float64
		for _, i := range idx {
			c := ^(col[i>>6] ^ y[i>>6]) >> (i & 63) & 1
			sign := int32(c)*2 - 1
			a += table[m[i]+off+sign*d1]
		}
		return [2]float64{a, a}
	}
	var a, b float64
	for _, i := range idx {
		c := ^(col[i>>6] ^ y[i>>6]) >> (i & 63) & 1
		sign := int32(c)*2 - 1
		k := m[i] + off
		a += table[k+sign*d1]
		b += table[k+sign*d2]
	}
	return [2]float64{a, b}
}

// chunkTrial is trial over the samples of words [lo, hi) of column col.
func (s *solver) chunkTrial(col []uint64, lo, hi int, d1, d2 int32) [2]float64 {
	table := s.table
	off := int32(s.bound)
	var a, b float64
	for wi := lo; wi < hi; wi++ {
		c := ^(col[wi] ^ s.y[wi])
		base := wi * 64
		mm := s.m[base:min(base+64, len(s.m))]
		for bit, m := range mm {
			sign := int32(c>>bit&1)*2 - 1
			k := m + off
			a += table[k+sign*d1]
			b += table[k+sign*d2]
		}
	}
	return [2]float64{a, b}
}
