package inference

import (
	"errors"
	"fmt"
	"math"
)

// TransformSpec is everything needed to regenerate a transform bit for bit.
// A bundle ships exactly these fields, never the random matrices.
type TransformSpec struct {
	Generator uint32  // generator version, e.g. GeneratorV1
	Seed      uint64  // seed of every random parameter
	Sigma     float64 // Gaussian kernel width σ: k(x, y) = exp(-‖x-y‖²/(2σ²))
	D         int     // input features (before zero-padding)
	P         int     // embedding bits
}

// Limits on transform sizes. They bound what a (possibly hostile) spec can make
// a gateway allocate: P·(4 float32 + 1 int32 + 1 float64) bytes at most.
const (
	MaxD = MaxFWHT // input features
	MaxP = 1 << 17 // embedding bits
)

// ErrTransform reports a TransformSpec that cannot be generated.
var ErrTransform = errors.New("inference: invalid transform")

// Validate checks s without generating anything.
func (s TransformSpec) Validate() error {
	switch {
	case s.Generator != GeneratorV1:
		return fmt.Errorf("%w: unknown generator version %d", ErrTransform, s.Generator)
	case s.D < 1 || s.D > MaxD:
		return fmt.Errorf("%w: %d input features, want 1..%d", ErrTransform, s.D, MaxD)
	case s.P < 1 || s.P > MaxP:
		return fmt.Errorf("%w: p = %d, want 1..%d", ErrTransform, s.P, MaxP)
	case !(s.Sigma > 0) || math.IsInf(s.Sigma, 0):
		return fmt.Errorf("%w: σ = %g, want a finite positive number", ErrTransform, s.Sigma)
	}
	return nil
}

// Transform is the Fastfood-structured random projection of the paper
// (Le, Sarlós & Smola 2013) inside BCSIK (Raginsky & Lazebnik 2009).
// The input x (already scaled, len D) is zero-padded to d = 2^q >= D, and each
// block k = 0, 1, … of d output columns is
//
//	u = V_k x,   V_k = (1/(σ√d)) · S_k H G_k Π_k H B_k,   S_k,ii = s_i/‖G_k‖
//
// with B_k random signs, Π_k a random permutation ((Πv)_i = v[perm_i]), G_k
// standard Gaussian, s_i ~ χ_d, and H the unnormalised Hadamard matrix. Every
// row of V_k then has the norm of a N(0, σ⁻²I_d) vector. Blocks are stacked and
// the last one truncated so that there are P columns. Column j's bit is
//
//	z_j = sign(cos(u_j + b_j) + t_j),  b_j ~ U[0, 2π), t_j ~ U[-1, 1]
//
// with sign(0) = +1, stored as bit 1 for +1.
//
// Generation (GeneratorV1): block k draws from its own stream(seed, k), in
// this order: d signs (one bit of next() each, 64 per draw, LSB first; bit 1
// means -1), the Fisher–Yates permutation (for i = d-1 … 1: swap i with
// intn(i+1)), d Gaussians G, d χ_d values s, d uniforms b·2π, d uniforms
// 2t-1. A truncated last block still draws all d values of each, so column j
// is the same whatever P is.
//
// A Transform is immutable and safe for concurrent use.
type Transform struct {
	spec   TransformSpec
	d      int // padded input size, a power of two
	blocks []block
	// Per column j < P, the interval test of cos(u_j + b_j) >= -t_j in
	// turns (units of 2π): with q = u_j/2π + b_j/2π and f = q - round(q) in
	// [-½, ½], the bit is 1 iff |f| <= half_j = arccos(-t_j)/2π.
	offset []float64 // b_j (radians)
	turn   []float64 // b_j/2π
	half   []float64 // arccos(-t_j)/2π
	t      []float32 // t_j, kept for the reference cos form
	// Every block's sign, perm and gauss, block after block (the blocks'
	// own slices share them).
	sign, gauss []float32
	perm        []int32
	// The same in tile order (tileOrder), for the fast path when d is a
	// multiple of 64 (nil otherwise).
	tsign, tgauss []float32
	tperm, tileX  []int32
	pairs         bool    // the tiles in pair order, for tilesAVX512
	k             kernels // the fast paths it runs, its gather the one the tiles were laid out for
	// For d = 8, the table path (table8.go): per block the offset of its
	// table row, and per value the second transform's gather index and
	// signed Gaussian.
	// For d = 16 (table16.go) the same, p8 and g8 16 a block, and hi16
	// the offset of the block's shifted upper row.
	row8, p8, hi16 []int32
	g8             []float32
}

type block struct {
	sign  []float32 // B: ±1
	perm  []int32   // Π
	gauss []float32 // G
	scale []float32 // s_i / (σ √d ‖G‖)
}

// NewTransform generates the transform described by spec.
func NewTransform(spec TransformSpec) (*Transform, error) {
	return newTransform(spec, cpu)
}

// newTransform is NewTransform with the kernels k, its gather decided
// (kernels.resolved): the tiles' arrays are laid out for it.
func newTransform(spec TransformSpec, k kernels) (*Transform, error) {
	k = k.resolved()
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	d := nextPow2(spec.D)
	nb := (spec.P + d - 1) / d
	tr := &Transform{
		spec:   spec,
		d:      d,
		k:      k,
		blocks: make([]block, nb),
		offset: make([]float64, spec.P),
		turn:   make([]float64, spec.P),
		half:   make([]float64, spec.P),
		t:      make([]float32, spec.P),
	}
	sqrtD := math.Sqrt(float64(d))
	// Every block's parameters are consecutive in one array each, so the
	// fast path can run over several blocks at once.
	tr.sign, tr.perm = make([]float32, nb*d), make([]int32, nb*d)
	tr.gauss = make([]float32, nb*d)
	scale := make([]float32, nb*d)
	for k := range tr.blocks {
		r := stream(spec.Seed, k)
		at := k * d
		b := block{
			sign:  tr.sign[at : at+d : at+d],
			perm:  tr.perm[at : at+d : at+d],
			gauss: tr.gauss[at : at+d : at+d],
			scale: scale[at : at+d : at+d],
		}
		var word uint64
		for i := range d {
			if i%64 == 0 {
				word = r.next()
			}
			b.sign[i] = 1
			if word>>(i%64)&1 == 1 {
				b.sign[i] = -1
			}
		}
		for i := range b.perm {
			b.perm[i] = int32(i)
		}
		for i := d - 1; i > 0; i-- {
			j := r.intn(uint32(i + 1))
			b.perm[i], b.perm[j] = b.perm[j], b.perm[i]
		}
		var norm2 float64
		for i := range d {
			g := r.gauss()
			b.gauss[i] = float32(g)
			g32 := float64(b.gauss[i])
			norm2 += float64(g32 * g32)
		}
		den := float64(float64(spec.Sigma*sqrtD) * math.Sqrt(norm2))
		for i := range d {
			b.scale[i] = float32(r.chi(d) / den)
		}
		first := k * d
		n := min(d, spec.P-first)
		for i := range d {
			u := r.uniform()
			if i < n {
				b := float64(float32(float64(2*math.Pi) * u))
				tr.offset[first+i] = b
				tr.turn[first+i] = b / (2 * math.Pi)
			}
		}
		for i := range d {
			u := r.uniform()
			if i < n {
				t := float32(float64(2*u) - 1)
				tr.t[first+i] = t
				tr.half[first+i] = detAcos(-float64(t)) / (2 * math.Pi)
			}
		}
		tr.blocks[k] = b
	}
	switch d {
	case 8:
		tr.initTable8()
	case 16:
		tr.initTable16()
	}
	if k.tilesFor(d) {
		// Whole units of U = max(d, 64) values (128 with pair tiles): the
		// last one padded with zeros (perm 0 is a valid index); when a unit
		// holds U/d blocks, their perm entries count from the unit's start.
		unit, tiles := 64, 1
		if tr.pairs = k.pairTiles(d); tr.pairs {
			unit, tiles = 128, 2
		}
		n := (nb*d + unit - 1) / unit * unit
		sign, perm, gauss := make([]float32, n), make([]int32, n), make([]float32, n)
		copy(sign, tr.sign)
		copy(gauss, tr.gauss)
		inRegisters := k.pairsInRegisters(d)
		for i, p := range tr.perm {
			perm[i] = p + int32(i%unit/d*d)
			if d == 8 { // a is stored in column order (tilesAVX2)
				perm[i] = 8*p + int32(i%64/d)
			}
			if inRegisters {
				perm[i] = pairRegister(perm[i])
			}
		}
		tr.tsign, tr.tperm, tr.tgauss = tileOrder(nil, sign, tiles), tileOrder(nil, perm, tiles), tileOrder(nil, gauss, tiles)
		// xt[i] = x[tileX[i]]: the input repeated to a unit, in tile order.
		at := make([]int32, max(d, unit))
		for i := range at {
			at[i] = int32(i % d)
		}
		tr.tileX = tileOrder(nil, at, tiles)
	}
	return tr, nil
}

// pairRegister maps position k of a pair unit's first-transform output
// (tile t = k/64, row r, column c) to where tilesAVX512 holds it when it
// keeps the unit in registers: row r of both tiles in one 16-lane
// register, so at 16r + 8t + c.
func pairRegister(k int32) int32 {
	t, r, c := k/64, k%64/8, k%8
	return 16*r + 8*t + c
}

// tileOrder writes v (a multiple of 64k long) into dst (allocated when
// nil) in tile order: in each group of k tiles of 64 (k = 1, or 2 for
// tilesAVX512's pairs), element 8r + c of tile h moves to 8kc + 8h + r,
// so that the group's columns are consecutive.
func tileOrder[T any](dst, v []T, k int) []T {
	if dst == nil {
		dst = make([]T, len(v))
	}
	for t := 0; t < len(v); t += 64 * k {
		src, out := v[t:t+64*k], dst[t:t+64*k]
		for h := range k {
			for r := range 8 {
				for c := range 8 {
					out[8*k*c+8*h+r] = src[64*h+8*r+c]
				}
			}
		}
	}
	return dst
}

// Spec returns the spec the transform was generated from.
func (tr *Transform) Spec() TransformSpec { return tr.spec }

// PaddedD returns d, the input size after zero-padding (a power of two).
func (tr *Transform) PaddedD() int { return tr.d }

// Workspace is the scratch memory of one projection. It lets callers that
// embed many rows (training) or predict in a loop avoid all allocation; a
// Workspace must not be used by two goroutines at once.
type Workspace struct {
	x, a, b []float32 // padded input and two d-sized buffers
	// The fast path's (see embedColumns): every block's transform output
	// (blocks·d), the kept columns' outputs gathered (P), their bits, the
	// padded input in tile order (with tiles).
	u, g, xt []float32
	bits     []uint64
	t8       *[128]float32        // the input's table for d = 8 (table8), 512-byte aligned
	t16      *[table16Len]float32 // for d = 16 (table16)
}

// NewWorkspace returns scratch memory sized for tr.
func (tr *Transform) NewWorkspace() *Workspace {
	ws := &Workspace{
		x: make([]float32, tr.d),
		a: make([]float32, tr.d),
		b: make([]float32, tr.d),
	}
	switch {
	case tr.d == 8:
		ws.t8 = new([128]float32) // its own size class: rows never straddle a cache line
	case tr.d == 16:
		ws.t16 = new([table16Len]float32)
	}
	if tr.k.embedSIMD() && tr.d >= 8 {
		ws.u = make([]float32, (len(tr.blocks)*tr.d+127)&^127) // whole tiles or pairs
		ws.g = make([]float32, tr.spec.P)
		ws.bits = make([]uint64, (tr.spec.P+63)/64)
		if tr.tsign != nil {
			ws.xt = make([]float32, len(tr.tileX))
			ws.a = make([]float32, len(tr.tileX))
		}
	}
	return ws
}

// load copies x into the zero-padded input buffer.
func (ws *Workspace) load(x []float32) {
	n := copy(ws.x, x)
	clear(ws.x[n:])
}

// transformBlock computes w = H G_k Π_k H B_k x for block k into ws.b
// (length d) from the padded input ws.x; the projection is u_i = S_k,ii·w_i
// (see unit). The sign flip is fused into the first transform's first pass
// and the permuted Gaussian gather into the second's: the same operations in
// the same order as the separate loops, so the same bits. Every product that
// feeds an addition is rounded by an explicit float32 conversion so the
// compiler cannot fuse it into an FMA (multiplying by ±1 is exact anyway).
func (tr *Transform) transformBlock(k int, ws *Workspace) []float32 {
	blk := &tr.blocks[k]
	d := tr.d
	a, b, x := ws.a[:d], ws.b[:d], ws.x[:d]
	sign, perm, gauss := blk.sign[:d], blk.perm[:d], blk.gauss[:d]
	if d < 4 {
		for i := range a {
			a[i] = x[i] * sign[i]
		}
		fwht(&tr.k, a)
		for i := range b {
			b[i] = float32(gauss[i] * a[perm[i]])
		}
		fwht(&tr.k, b)
		return b
	}
	for i := 0; i < d; i += 4 {
		xs, ss, v := x[i:i+4:i+4], sign[i:i+4:i+4], a[i:i+4:i+4]
		v[0], v[1], v[2], v[3] = butterfly4(xs[0]*ss[0], xs[1]*ss[1], xs[2]*ss[2], xs[3]*ss[3])
	}
	fwhtUpper(&tr.k, a)
	for i := 0; i < d; i += 4 {
		ps, gs, v := perm[i:i+4:i+4], gauss[i:i+4:i+4], b[i:i+4:i+4]
		v[0], v[1], v[2], v[3] = butterfly4(
			float32(gs[0]*a[ps[0]]), float32(gs[1]*a[ps[1]]),
			float32(gs[2]*a[ps[2]]), float32(gs[3]*a[ps[3]]))
	}
	fwhtUpper(&tr.k, b)
	return b
}

// unit returns u_i = S_k,ii·w_i, the projection of block k's i-th column
// from the output w_i of transformBlock.
func (blk *block) unit(i int, w float32) float32 {
	return float32(w * blk.scale[i])
}

// Project writes the real-valued projection u = R̃ᵀx (len P) into dst, for x
// already scaled (len D). It is what the full-precision Fastfood baseline
// uses; classification uses Embed.
func (tr *Transform) Project(dst, x []float32, ws *Workspace) {
	ws.load(x[:tr.spec.D])
	for k := range tr.blocks {
		w, blk, first := tr.transformBlock(k, ws), &tr.blocks[k], k*tr.d
		for i, v := range w[:min(tr.d, tr.spec.P-first)] {
			dst[first+i] = blk.unit(i, v)
		}
	}
}

// roundMagic is 1.5·2⁵²: for |q| < 2⁵¹, (q + roundMagic) - roundMagic is q
// rounded to the nearest integer, using only two IEEE additions.
const roundMagic = 0x1.8p52

// bit reports the embedding bit of column j for projection value u:
// cos(u + b_j) + t_j >= 0, decided without calling cos, as an interval test
// on the phase in turns. The float64 arithmetic has an explicit rounding
// point after the multiply, so it is the same on every architecture.
// |q| < 2⁵¹ always holds: |u| <= MaxFloat32/2π would need an input of ~10³⁸.
//
// It returns 0 or 1 rather than a bool so callers can pack bits without a
// branch: the bits are random, so a branch would be mispredicted half the time.
func (tr *Transform) bit(j int, u float32) uint64 {
	return intervalBit(u, tr.turn[j], tr.half[j])
}

// intervalBit is bit's arithmetic for a column with turn and half.
func intervalBit(u float32, turn, half float64) uint64 {
	q := float64(float64(u)*(1/(2*math.Pi))) + turn
	f := q - ((q + roundMagic) - roundMagic)
	var b uint64
	if math.Abs(f) <= half {
		b = 1
	}
	return b
}

// Embed writes the p = P embedding bits of x (already scaled, len D) into dst,
// packed LSB-first: bit j is dst[j/64]>>(j%64)&1, 1 meaning +1. dst needs
// (P+63)/64 words; bits past P are cleared.
func (tr *Transform) Embed(dst []uint64, x []float32, ws *Workspace) {
	words := dst[:(tr.spec.P+63)/64]
	clear(words)
	ws.load(x[:tr.spec.D])
	for k := range tr.blocks {
		w, blk, first := tr.transformBlock(k, ws), &tr.blocks[k], k*tr.d
		for i, v := range w[:min(tr.d, tr.spec.P-first)] {
			j := first + i
			words[j>>6] |= tr.bit(j, blk.unit(i, v)) << (j & 63)
		}
	}
}

// embedColumns ORs the bits of the given columns only (ascending, each < P)
// into dst, packed in the order given from bit at on: bit at+i is column
// cols[i]. plan is columnPlan(cols); blocks with no column are not
// computed at all. The caller clears dst (the fast path writes whole
// words of it from bit at on when at is a multiple of 64).
func (tr *Transform) embedColumns(dst []uint64, at int, x []float32, cols []int32, plan *columnPlan, ws *Workspace) {
	ws.load(x[:tr.spec.D])
	if ws.u != nil && plan.scale != nil { // both built with the fast path on (tr.k)
		tr.embedColumnsSIMD(dst, at, cols, plan, ws)
		return
	}
	switch tr.d { // the table paths (table8.go, table16.go)
	case 8:
		table8(ws.t8, ws.x)
	case 16:
		table16(ws.t16, ws.x)
	}
	for _, br := range plan.ranges {
		var w []float32
		switch tr.d {
		case 8:
			w = tr.block8(br.block, ws.t8, ws.b)
		case 16:
			w = tr.block16(br.block, ws.t16, ws.b)
		default:
			w = tr.transformBlock(br.block, ws)
		}
		blk, first := &tr.blocks[br.block], br.block*tr.d
		if br.contiguous {
			tr.embedRun(dst, at+br.from, int(cols[br.from]), w[int(cols[br.from])-first:][:br.to-br.from], blk.scale[int(cols[br.from])-first:])
			continue
		}
		for i := br.from; i < br.to; i++ {
			j, o := int(cols[i]), at+i
			dst[o>>6] |= tr.bit(j, blk.unit(j-first, w[j-first])) << (o & 63)
		}
	}
}

// embedRun is embedColumns' loop for a run of consecutive columns j0, j0+1, …
// (the common case: most models keep every column): output bit at+k is
// column j0+k, from transform output w[k] and scale[k]. It computes exactly
// what bit(j0+k, unit(…)) does — the same operations in the same order, so
// the same bits — but without the column gather, with bounds checks hoisted
// and with each output word assembled in a register.
func (tr *Transform) embedRun(dst []uint64, at, j0 int, w, scale []float32) {
	n := len(w)
	scale, turn, half := scale[:n], tr.turn[j0:j0+n], tr.half[j0:j0+n]
	var acc uint64
	pos := at
	for k, v := range w {
		acc |= intervalBit(float32(v*scale[k]), turn[k], half[k]) << (pos & 63)
		pos++
		if pos&63 == 0 {
			dst[(pos-1)>>6] |= acc
			acc = 0
		}
	}
	if pos&63 != 0 {
		dst[pos>>6] |= acc
	}
}

// blockRange is the slice cols[from:to] of kept columns that lie in block;
// contiguous means they are consecutive columns.
type blockRange struct {
	block, from, to int
	contiguous      bool
}

// columnPlan is how embedColumns computes a set of kept columns cols.
type columnPlan struct {
	ranges []blockRange // cols grouped by the block that computes them
	// The fast path's tables: per kept column i, scale[i], turn[i] and
	// half[i] are column cols[i]'s (bitsGo's); s32, t32 and e32 are
	// bitsSIMD's float32 pass's (see bitsGo): s32 = float32(scale/2π),
	// t32 = float32(turn), e32 = −2¹⁹·float32(half). start is cols[0]
	// when the columns are consecutive (then no gather is needed), else −1.
	start         int
	scale         []float32
	turn, half    []float64
	s32, t32, e32 []float32
}

// edgeScale is 2¹⁹, the scale of the float32 pass's distance to the
// interval's end (see bitsGo).
const edgeScale = 0x1p19

// columnPlan groups ascending columns by the block that computes them and
// gathers their per-column parameters.
func (tr *Transform) columnPlan(cols []int32) *columnPlan {
	plan := &columnPlan{start: -1}
	for i := 0; i < len(cols); {
		k := int(cols[i]) / tr.d
		j := i
		for j < len(cols) && int(cols[j])/tr.d == k {
			j++
		}
		run := int(cols[j-1])-int(cols[i]) == j-1-i // ascending and distinct
		plan.ranges = append(plan.ranges, blockRange{block: k, from: i, to: j, contiguous: run})
		i = j
	}
	if n := len(cols); n > 0 && int(cols[n-1])-int(cols[0]) == n-1 {
		plan.start = int(cols[0])
	}
	if !tr.k.embedSIMD() { // the tables are the fast path's: 32 bytes a column
		return plan
	}
	n := len(cols)
	plan.scale, plan.s32 = make([]float32, n), make([]float32, n)
	plan.turn, plan.half = make([]float64, n), make([]float64, n)
	plan.t32, plan.e32 = make([]float32, n), make([]float32, n)
	for i, c := range cols {
		plan.scale[i] = tr.blocks[int(c)/tr.d].scale[int(c)%tr.d]
		plan.turn[i], plan.half[i] = tr.turn[c], tr.half[c]
		plan.s32[i] = float32(float64(plan.scale[i]) * (1 / (2 * math.Pi)))
		plan.t32[i] = float32(tr.turn[c])
		plan.e32[i] = -edgeScale * float32(tr.half[c])
	}
	return plan
}

// embedColumnsSIMD is embedColumns with the fast paths: each block's
// transform (FWHT), then the interval test of every kept column at once
// (bitsSIMD), then the bits shifted into place. The loaded input is in ws.
func (tr *Transform) embedColumnsSIMD(dst []uint64, at int, cols []int32, plan *columnPlan, ws *Workspace) {
	d := tr.d
	switch tr.d { // the table paths
	case 8:
		tr.k.table8SIMD(ws.t8, ws.x)
	case 16:
		tr.k.table16SIMD(ws.t16, ws.x)
	}
	if ws.xt != nil {
		x, xt := ws.x[:d], ws.xt[:len(tr.tileX)]
		for i, j := range tr.tileX {
			xt[i] = x[j]
		}
	}
	n := len(cols)
	bits := ws.bits[:(n+63)/64]
	if at&63 == 0 { // the bits straight into dst's words, which are clear
		bits = dst[at>>6:][:len(bits)]
	}
	if plan.start == 0 {
		// Columns 0 to n−1 (what most models keep): the blocks chunk by
		// chunk, each chunk's bits taken while its outputs are still in
		// the first-level cache.
		step := max(d, chunkColumns)
		for c0 := 0; c0 < n; c0 += step {
			c1 := min(n, c0+step)
			u := tr.blocksSIMD(c0/d, (c1-c0+d-1)/d, ws)
			tr.intervalBits(bits[c0/64:], u, plan, c0, c1)
		}
		if at&63 != 0 {
			orBitsAt(dst, at, bits, n)
		}
		return
	}
	for i := 0; i < len(plan.ranges); {
		first := plan.ranges[i].block
		j := i + 1
		for j < len(plan.ranges) && plan.ranges[j].block == first+j-i {
			j++
		}
		tr.blocksSIMD(first, j-i, ws)
		i = j
	}
	var g []float32
	if plan.start > 0 {
		g = ws.u[plan.start:][:n]
	} else {
		g = ws.g[:n]
		u := ws.u
		for i, c := range cols {
			g[i] = u[c]
		}
	}
	tr.intervalBits(bits, g, plan, 0, n)
	if at&63 != 0 {
		orBitsAt(dst, at, bits, n)
	}
}

// chunkColumns is how many columns embedColumnsSIMD computes before taking
// their bits: 8 KiB of outputs, which stay in any first-level cache.
const chunkColumns = 2048

// blocksSIMD computes transformBlock's w of nb consecutive blocks from
// block first on with the fast path into ws.u (block k's at k·d) and
// returns them. Tiled blocks are computed in whole tiles, so for d < 64
// a few blocks around them may be too.
func (tr *Transform) blocksSIMD(first, nb int, ws *Workspace) []float32 {
	d := tr.d
	from, to := first*d, (first+nb)*d
	if tr.d == 8 && tr.k.blocks8SIMD(ws.u[from:to], ws.t8, tr.row8[first:first+nb], tr.p8[from:to], tr.g8[from:to]) {
		return ws.u[from:to] // the table path (table8.go); table8SIMD ran
	}
	if tr.d == 16 && tr.k.blocks16SIMD(ws.u[from:to], ws.t16, tr.row8[first:first+nb], tr.hi16[first:first+nb], tr.p8[from:to], tr.g8[from:to]) {
		return ws.u[from:to] // the table path (table16.go); table16SIMD ran
	}
	if ws.xt == nil {
		tr.k.blocksSIMD(ws.u[from:to], ws.a, ws.x[:d], tr.sign[from:to], tr.perm[from:to], tr.gauss[from:to], nb)
		return ws.u[from:to]
	}
	f, t := from&^63, (to+63)&^63 // whole tiles, or pairs of them
	if tr.pairs {
		f, t = from&^127, (to+127)&^127
	}
	tr.k.tilesSIMD(ws.u[f:t], ws.a, ws.xt, tr.tsign[f:t], tr.tperm[f:t], tr.tgauss[f:t], d, tr.pairs)
	return ws.u[from:to]
}

// intervalBits writes the bits of kept columns c0 to c1 (c0 a multiple of
// 64), whose projections before scaling are g, into out from bit 0 on:
// whole words with the fast path, the rest with bitsGo.
func (tr *Transform) intervalBits(out []uint64, g []float32, plan *columnPlan, c0, c1 int) {
	full := (c1 - c0) / 64
	tr.k.bitsSIMD(out[:full], g, plan.scale[c0:c1], plan.turn[c0:c1], plan.half[c0:c1], plan.s32[c0:c1], plan.t32[c0:c1], plan.e32[c0:c1])
	if c := c0 + full*64; c < c1 {
		out[full] = 0
		bitsGo(out[full:], g[full*64:], plan.scale[c:c1], plan.turn[c:c1], plan.half[c:c1])
	}
}

// bitsGo ORs the interval-test bits of len(scale) columns into out, bit i
// of out[i/64] for column i (embedRun's arithmetic, one column at a time):
// with v = float32(u[i]·scale[i]), q = float64(float64(v)/2π) + turn[i]
// and f = q − round(q), the bit is |f| <= half[i]. It is the reference of
// bitsSIMD.
//
// bitsSIMD decides most columns in float32 first, from columnPlan's
// s32 = float32(scale/2π), t32 = float32(turn) and h32 = float32(half)
// (stored as e32 = −2¹⁹·h32): p = float32(u·s32) (one product; v is not
// formed), q' = float32(p + t32), f' = q' − round(q') (exact) and
// e = float32(2¹⁹|f'| + e32) = 2¹⁹·float32(|f'| − h32) (2¹⁹|f'| is exact,
// so fused or not the sum is rounded once). |f| and |f'| are the distances
// of q and q' to the nearest integer, so they differ by at most |q − q'|.
// With ε = 2⁻²⁴: p is within 3ε|p| of v/2π (its own rounding, s32's and
// v's), t32 within 2⁻²⁵ of turn (< 1), q' within ε(|p| + 1) of p + t32,
// and q within float64's 2⁻⁵² terms of v/2π + turn; so
// |q − q'| <= ε(4|p| + 1.5) + tiny < 2⁻²²(|p| + 1), and h32 is within
// 2⁻²⁶ of half. The pass decides a column when |e| > max(|p|, 1): then
// ||f'| − h32| > 2⁻¹⁹·max(|p|, 1) − 2⁻²⁶ (e's rounding) >=
// 2⁻²⁰(|p| + 1) − 2⁻²⁶, about four times the 2⁻²²(|p| + 1) + 2⁻²⁶ by
// which |f| − half and |f'| − h32 can differ, so e < 0 exactly when
// |f| <= half. Every other column is computed in float64: a NaN phase
// (the comparison is false), an infinite one (so is max) and |p| >= 2¹⁸
// (|e| <= 2¹⁸, as |f'|, h32 <= ½) among them.
func bitsGo(out []uint64, u, scale []float32, turn, half []float64) {
	n := len(scale)
	u, turn, half = u[:n], turn[:n], half[:n]
	var acc uint64
	for i := range n {
		acc |= intervalBit(float32(u[i]*scale[i]), turn[i], half[i]) << (i & 63)
		if i&63 == 63 || i == n-1 {
			out[i>>6] |= acc
			acc = 0
		}
	}
}

// orBitsAt ORs the first n bits of src into dst from bit at on.
func orBitsAt(dst []uint64, at int, src []uint64, n int) {
	w, s := at>>6, uint(at&63)
	if s == 0 {
		for i, v := range src {
			dst[w+i] |= v
		}
		return
	}
	last := (at + n - 1) >> 6
	for i, v := range src {
		dst[w+i] |= v << s
		if w+i+1 <= last {
			dst[w+i+1] |= v >> (64 - s)
		}
	}
}

// Offset returns b_j and Threshold returns t_j, the random phase and sign
// threshold of column j. They are for baselines (RFE-style cos features over
// the Fastfood projection) and for tests of the interval form against
// sign(cos(u+b)+t).
func (tr *Transform) Offset(j int) float64 { return tr.offset[j] }

// Threshold returns t_j; see Offset.
func (tr *Transform) Threshold(j int) float32 { return tr.t[j] }
