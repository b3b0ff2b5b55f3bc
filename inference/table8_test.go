package inference

import (
	"math"
	"math/rand/v2"
	"testing"
)

// special8 draws an input value: ordinary, huge, tiny, subnormal, ±0,
// ±∞ or NaN, or small integers whose sums cancel exactly.
func special8(rnd *rand.Rand, mode int) float32 {
	switch mode {
	case 0:
		return float32(rnd.NormFloat64())
	case 1: // small integers: exact cancellations, zeros of both signs
		return float32(rnd.IntN(3) - 1)
	case 2: // wide magnitudes, up to overflow in the sums
		return float32(rnd.NormFloat64() * math.Exp(rnd.NormFloat64()*30))
	}
	sp := []float32{0, float32(math.Copysign(0, -1)), float32(math.NaN()), float32(-math.NaN()),
		float32(math.Inf(1)), float32(math.Inf(-1)), math.MaxFloat32, -math.MaxFloat32,
		math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32, 0x1p-126, 1, -1, 0x1p100}
	if rnd.IntN(2) == 0 {
		return sp[rnd.IntN(len(sp))]
	}
	return float32(rnd.NormFloat64() * math.Exp(rnd.NormFloat64()*30))
}

// equivalent8 reports a ≅ b: equal bits, or both zeros, or both NaNs.
func equivalent8(a, b float32) bool {
	return math.Float32bits(a) == math.Float32bits(b) || a == 0 && b == 0 || a != a && b != b
}

// Every block of d = 8 transforms through the table (block8) against
// transformBlock: ≅ (see table8.go) on inputs with NaN, ±∞, ±0, huge,
// tiny and subnormal values.
func TestBlock8MatchesTransformBlock(t *testing.T) {
	rnd := rand.New(rand.NewPCG(81, 82))
	for seed := range 30 {
		for _, D := range []int{5, 7, 8} {
			tr, err := NewTransform(TransformSpec{Generator: GeneratorV1, Seed: uint64(seed), Sigma: 0.3 + 3*rnd.Float64(), D: D, P: 64 * (1 + rnd.IntN(40))})
			if err != nil {
				t.Fatal(err)
			}
			ws := tr.NewWorkspace()
			x := make([]float32, D)
			var tab [128]float32
			b := make([]float32, 8)
			for trial := range 12 {
				for i := range x {
					x[i] = special8(rnd, (trial+rnd.IntN(2))%4)
				}
				ws.load(x)
				table8(&tab, ws.x)
				for k := range tr.blocks {
					got := tr.block8(k, &tab, b)
					want := tr.transformBlock(k, ws)
					for i := range 8 {
						if !equivalent8(got[i], want[i]) {
							t.Fatalf("seed %d D %d trial %d block %d: w[%d] = %g (%#x), transformBlock %g (%#x); x = %v", seed, D, trial, k, i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]), x)
						}
					}
				}
			}
		}
	}
}

// The prepared table indices: every one of the 16·8·2 sign vectors with
// its own i, m and β, against H(B∘x) computed directly.
func TestTable8EverySign(t *testing.T) {
	rnd := rand.New(rand.NewPCG(83, 84))
	tr := &Transform{d: 8, blocks: make([]block, 256)}
	for k := range tr.blocks {
		blk := &tr.blocks[k]
		blk.sign, blk.perm, blk.gauss = make([]float32, 8), make([]int32, 8), make([]float32, 8)
		for j := range 8 {
			blk.sign[j] = float32(1 - 2*(k>>j&1))
			blk.perm[j] = int32(j)
			blk.gauss[j] = 1
		}
	}
	tr.initTable8()
	x := make([]float32, 8)
	var tab [128]float32
	for trial := range 50 {
		for i := range x {
			x[i] = special8(rnd, trial%4)
		}
		table8(&tab, x)
		for k, blk := range tr.blocks {
			a := make([]float32, 8)
			for j := range a {
				a[j] = x[j] * blk.sign[j]
			}
			naiveFWHT(a)
			for j := range 8 {
				got := tr.g8[8*k+j] * tab[tr.row8[k]+tr.p8[8*k+j]&7]
				if !equivalent8(got, a[j]) {
					t.Fatalf("trial %d sign pattern %#x: a[%d] = %g from the table, %g directly", trial, k, j, got, a[j])
				}
			}
		}
	}
}

// BenchmarkBlock8Go times the 256 blocks of a d = 8, p = 2048 transform
// with the Go loops: transformBlock against the table (block8).
func BenchmarkBlock8Go(b *testing.B) {
	tr, err := newTransform(TransformSpec{Generator: GeneratorV1, Seed: 5, Sigma: 1, D: 8, P: 2048}, goKernels)
	if err != nil {
		b.Fatal(err)
	}
	ws := tr.NewWorkspace()
	x := []float32{1, -2, 0.5, 3, -1, 0, 2, 1.5}
	ws.load(x)
	out := make([]float32, 2048)
	b.Run("reference", func(b *testing.B) {
		for b.Loop() {
			for k := range tr.blocks {
				copy(out[8*k:], tr.transformBlock(k, ws))
			}
		}
	})
	b.Run("table", func(b *testing.B) {
		for b.Loop() {
			table8(ws.t8, ws.x)
			for k := range tr.blocks {
				tr.block8(k, ws.t8, out[8*k:])
			}
		}
	})
}

// Transforms of d = 8 and 16 (D = 5…16) embed kept columns
// (embedColumns: the table paths, the fast path's or the Go loop's) with
// exactly the bits of Embed (transformBlock, the reference), on inputs
// with NaN, ±∞, ±0, huge, tiny and subnormal values, all columns, a run
// and a subset, at unaligned offsets.
func TestEmbed8MatchesReference(t *testing.T) {
	t.Parallel()
	rnd := rand.New(rand.NewPCG(85, 86))
	testEmbed8(t, cpu, rnd)
	testEmbed8(t, goKernels, rnd)
}

// testEmbed8 checks embedColumns with the kernels k against Embed.
func testEmbed8(t *testing.T, k kernels, rnd *rand.Rand) {
	t.Helper()
	for i, p := range []int{1, 8, 63, 64, 65, 200, 1000, 2048, 2051, 5000, 1, 16, 64, 100, 1000, 4096, 4099, 7000} {
		D := 5 + rnd.IntN(4)
		if i >= 10 {
			D = 9 + rnd.IntN(8)
		}
		spec := TransformSpec{Generator: GeneratorV1, Seed: rnd.Uint64(), Sigma: 0.1 + 3*rnd.Float64(), D: D, P: p}
		tr, err := newTransform(spec, k)
		if err != nil {
			t.Fatal(err)
		}
		all := allColumns(p)
		lo := rnd.IntN(p)
		hi := lo + 1 + rnd.IntN(p-lo)
		var some []int32
		for i := range p {
			if rnd.IntN(3) == 0 {
				some = append(some, int32(i))
			}
		}
		if len(some) == 0 {
			some = all[:1]
		}
		x := make([]float32, spec.D)
		ref := make([]uint64, (p+63)/64)
		wsRef := tr.NewWorkspace()
		for _, cols := range [][]int32{all, all[lo:hi], some} {
			plan, ws := tr.columnPlan(cols), tr.NewWorkspace()
			at := rnd.IntN(130)
			got := make([]uint64, (at+len(cols)+63)/64)
			for trial := range 16 {
				for i := range x {
					x[i] = special8(rnd, (trial+rnd.IntN(2))%4)
				}
				tr.Embed(ref, x, wsRef)
				clear(got)
				tr.embedColumns(got, at, x, cols, plan, ws)
				for i, c := range cols {
					o := at + i
					if got[o/64]>>(o%64)&1 != ref[c/64]>>(c%64)&1 {
						t.Fatalf("D %d p %d trial %d, %d columns from %d: column %d's bit differs from Embed's; x = %v", spec.D, p, trial, len(cols), cols[0], c, x)
					}
				}
			}
		}
	}
}

// BenchmarkBlocks8 times the table and the 256 blocks of a d = 8,
// p = 2048 transform with the fast path (embedColumnsSIMD's part).
func BenchmarkBlocks8(b *testing.B) {
	tr, err := NewTransform(TransformSpec{Generator: GeneratorV1, Seed: 5, Sigma: 1, D: 8, P: 2048})
	if err != nil {
		b.Fatal(err)
	}
	ws := tr.NewWorkspace()
	ws.load([]float32{1, -2, 0.5, 3, -1, 0, 2, 1.5})
	if !cpu.embedSIMD() {
		b.Skip("no fast path")
	}
	for b.Loop() {
		tr.k.table8SIMD(ws.t8, ws.x)
		tr.blocksSIMD(0, 256, ws)
	}
}

// Every block of d = 16 transforms through the table (block16) against
// transformBlock: ≅, on the same inputs as for d = 8.
func TestBlock16MatchesTransformBlock(t *testing.T) {
	rnd := rand.New(rand.NewPCG(89, 90))
	for seed := range 30 {
		for _, D := range []int{9, 13, 16} {
			tr, err := NewTransform(TransformSpec{Generator: GeneratorV1, Seed: uint64(seed), Sigma: 0.3 + 3*rnd.Float64(), D: D, P: 64 * (1 + rnd.IntN(40))})
			if err != nil {
				t.Fatal(err)
			}
			ws := tr.NewWorkspace()
			x := make([]float32, D)
			tab := new([table16Len]float32)
			b := make([]float32, 16)
			for trial := range 12 {
				for i := range x {
					x[i] = special8(rnd, (trial+rnd.IntN(2))%4)
				}
				ws.load(x)
				table16(tab, ws.x)
				for k := range tr.blocks {
					got := tr.block16(k, tab, b)
					want := tr.transformBlock(k, ws)
					for i := range 16 {
						if !equivalent8(got[i], want[i]) {
							t.Fatalf("seed %d D %d trial %d block %d: w[%d] = %g (%#x), transformBlock %g (%#x); x = %v", seed, D, trial, k, i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]), x)
						}
					}
				}
			}
		}
	}
}

// BenchmarkBlock16Go is BenchmarkBlock8Go for d = 16, p = 4096.
func BenchmarkBlock16Go(b *testing.B) {
	tr, err := newTransform(TransformSpec{Generator: GeneratorV1, Seed: 5, Sigma: 1, D: 16, P: 4096}, goKernels)
	if err != nil {
		b.Fatal(err)
	}
	ws := tr.NewWorkspace()
	x := []float32{1, -2, 0.5, 3, -1, 0, 2, 1.5, 1, 2, 3, 4, -5, 6, 7, 8}
	ws.load(x)
	out := make([]float32, 4096)
	b.Run("reference", func(b *testing.B) {
		for b.Loop() {
			for k := range tr.blocks {
				copy(out[16*k:], tr.transformBlock(k, ws))
			}
		}
	})
	b.Run("table", func(b *testing.B) {
		for b.Loop() {
			table16(ws.t16, ws.x)
			for k := range tr.blocks {
				tr.block16(k, ws.t16, out[16*k:])
			}
		}
	})
}

// The fast path's blocks (blocksSIMD: table8 or table16 loops, every
// unrolled step and remainder, odd and even first blocks) against block8
// and block16 for every count of blocks up to 40, writing nothing outside
// their own outputs.
func TestTableBlocksEveryCount(t *testing.T) {
	t.Parallel()
	testTableBlocks(t, cpu)
}

// testTableBlocks checks blocksSIMD with the kernels k against block8 and
// block16.
func testTableBlocks(t *testing.T, k kernels) {
	rnd := rand.New(rand.NewPCG(91, 92))
	for _, d := range []int{8, 16} {
		tr, err := newTransform(TransformSpec{Generator: GeneratorV1, Seed: 9, Sigma: 1, D: d, P: 48 * d}, k)
		if err != nil {
			t.Fatal(err)
		}
		ws := tr.NewWorkspace()
		if ws.u == nil {
			t.Skip("no fast path")
		}
		x := make([]float32, d)
		b := make([]float32, d)
		for trial := range 4 {
			for i := range x {
				x[i] = special8(rnd, trial)
			}
			ws.load(x)
			if d == 8 {
				table8(ws.t8, ws.x)
			} else {
				table16(ws.t16, ws.x)
			}
			for first := range 5 {
				for nb := range 41 {
					if first+nb > len(tr.blocks) {
						continue
					}
					for i := range ws.u {
						ws.u[i] = 12345
					}
					tr.blocksSIMD(first, nb, ws) // from the table built above
					for i, v := range ws.u[:48*d] {
						k := i / d
						if k < first || k >= first+nb {
							if v != 12345 {
								t.Fatalf("d %d first %d nb %d: u[%d] written", d, first, nb, i)
							}
							continue
						}
						var want []float32
						if d == 8 {
							want = tr.block8(k, ws.t8, b)
						} else {
							want = tr.block16(k, ws.t16, b)
						}
						if !equivalent8(v, want[i%d]) {
							t.Fatalf("d %d first %d nb %d trial %d: u[%d] = %g, block%d %g", d, first, nb, trial, i, v, d, want[i%d])
						}
					}
				}
			}
		}
	}
}
