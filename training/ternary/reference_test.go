// This file keeps solve.go's solver as it was at commit 2546d0b, before the
// fast hinge trial, renamed (refSolve, refSolver): TestSolveMatchesReference
// checks that Solve still returns bit-identical results.

package ternary

import (
	"fmt"
	"math"
	"sync"
)

const (
	refChunkWords   = 64
	refParallelMinN = 1 << 15
)

// refSolve is Solve as it was.
func refSolve(z *Columns, y []uint64, w0 []int8, alpha0 float64, opt *Options) (*Result, error) {
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
	s := newRefSolver(z, y, w0, alpha0, &o, int(bound))
	return s.run(), nil
}

type refSolver struct {
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
}

func newRefSolver(z *Columns, y []uint64, w0 []int8, alpha0 float64, o *Options, bound int) *refSolver {
	s := &refSolver{
		z: z, y: y, o: o, bound: bound, maxMult: 1,
		w:     append([]int8(nil), w0...),
		alpha: alpha0,
		m:     make([]int32, z.N),
		table: make([]float64, 2*bound+1),
		part:  make([][2]float64, (z.Words+refChunkWords-1)/refChunkWords),
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
		s.addColumn(j, int32(s.w[j]))
	}
	return s
}

// mult is column j's multiplier.
func (s *refSolver) mult(j int) int32 {
	if s.o.Mult == nil {
		return 1
	}
	return s.o.Mult[j]
}

// addColumn adds delta·mult(j)·y_i·z_ij to every margin, and appends to the
// active set the samples whose margin drops below the activity bound.
func (s *refSolver) addColumn(j int, delta int32) {
	delta *= s.mult(j)
	col := s.z.Col(j)
	m := s.m
	bound := s.zeroFrom + 2*s.maxMult
	track := s.useActive && s.active != nil
	for wi, zw := range col {
		c := ^(zw ^ s.y[wi]) // bit set: y_i z_ij = +1
		base := wi * 64
		end := min(64, len(m)-base)
		mm := m[base : base+end]
		for b := range mm {
			old := mm[b]
			mm[b] = old + (int32(c>>b&1)*2-1)*delta
			if track && old >= bound && mm[b] < bound && !s.isActive[base+b] {
				s.active = append(s.active, int32(base+b))
				s.isActive[base+b] = true
			}
		}
	}
}

// rebuildActive recomputes zeroFrom from the loss table and the active set
// from the margins, in sample order.
func (s *refSolver) rebuildActive() {
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
}

func (s *refSolver) objective() float64 {
	return s.loss/float64(s.z.N) + s.o.Lambda*s.o.Reg.penalty(s.alpha, s.nnz)
}

// setAlpha fixes α, rebuilds the loss table and the loss sum.
func (s *refSolver) setAlpha(alpha float64) {
	s.alpha = alpha
	p := s.bound
	for k := range s.table {
		s.table[k] = s.o.Loss.Value(alpha * float64(k-p))
	}
	var sum float64
	for ci := range s.part {
		lo, hi := ci*refChunkWords*64, min((ci+1)*refChunkWords*64, s.z.N)
		var c float64
		for _, m := range s.m[lo:hi] {
			c += s.table[int(m)+p]
		}
		sum += c
	}
	s.loss = sum
	s.rebuildActive()
}

func (s *refSolver) record(kind string, changed int) {
	s.hist = append(s.hist, Step{Kind: kind, Objective: s.objective(), Changed: changed, NonZero: s.nnz})
}

func (s *refSolver) alphaStep() {
	h := newHistogram(s.m, s.bound)
	s.setAlpha(h.solveAlpha(s.o.Loss, s.o.Reg, s.o.Lambda, s.nnz, s.alpha))
}

func (s *refSolver) run() *Result {
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
func (s *refSolver) sweep() int {
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
		l1, l2 := s.trial(j, d1, d2)
		cur := s.objective()
		nnz0 := s.nnz - int(v0*v0)
		o1 := l1/n + lam*reg.penalty(s.alpha, nnz0+int(cand[0]*cand[0]))
		o2 := l2/n + lam*reg.penalty(s.alpha, nnz0+int(cand[1]*cand[1]))
		best, bestObj, bestLoss, delta := v0, cur, s.loss, int32(0)
		// A move must beat the current value by more than rounding noise, so
		// the objective strictly decreases and the sweep cannot cycle.
		eps := 1e-12 * math.Max(1, math.Abs(cur))
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

// refActiveChunk is the number of active samples per summation chunk.
const refActiveChunk = refChunkWords * 64

// trial returns Σ_i ℓ(α(m_i + d·mult(j)·y_i z_ij)) for d = d1 and d = d2.
func (s *refSolver) trial(j int, d1, d2 int32) (float64, float64) {
	col := s.z.Col(j)
	d1, d2 = d1*s.mult(j), d2*s.mult(j)
	var chunks, size int
	var work func(ci int)
	if s.useActive {
		size = len(s.active)
		chunks = (size + refActiveChunk - 1) / refActiveChunk
		work = func(ci int) {
			lo, hi := ci*refActiveChunk, min((ci+1)*refActiveChunk, size)
			s.part[ci] = s.activeTrial(col, s.active[lo:hi], d1, d2)
		}
	} else {
		size = s.z.N
		chunks = len(s.part)
		work = func(ci int) {
			lo, hi := ci*refChunkWords, min((ci+1)*refChunkWords, len(col))
			s.part[ci] = s.chunkTrial(col, lo, hi, d1, d2)
		}
	}
	if workers := min(s.o.Workers, chunks); workers > 1 && size >= refParallelMinN {
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

// activeTrial is trial over the listed samples of column col.
func (s *refSolver) activeTrial(col []uint64, idx []int32, d1, d2 int32) [2]float64 {
	table := s.table
	off := int32(s.bound)
	var a, b float64
	for _, i := range idx {
		c := ^(col[i>>6] ^ s.y[i>>6]) >> (i & 63) & 1
		sign := int32(c)*2 - 1
		k := s.m[i] + off
		a += table[k+sign*d1]
		b += table[k+sign*d2]
	}
	return [2]float64{a, b}
}

// chunkTrial is trial over the samples of words [lo, hi) of column col.
func (s *refSolver) chunkTrial(col []uint64, lo, hi int, d1, d2 int32) [2]float64 {
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
