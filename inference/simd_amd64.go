package inference

import "math"

// The amd64 fast paths (simd_amd64.s): AVX2 code for FWHT and for the
// interval test that turns projections into bits. Each computes exactly
// what its Go reference loop does — the same float32 and float64
// operations on the same operands in the same order, products rounded
// before they are added — so the bits are the same; simd_test.go checks
// them against the reference on random inputs of every size. Without
// AVX2 (checked once, with CPUID and XGETBV) the pure-Go loops run.

func cpuid(eaxArg, ecxArg uint32) (eax, ebx, ecx, edx uint32)
func xgetbv0() (eax uint32)

//go:noescape
func fwhtAVX2(x []float32)

//go:noescape
func fwhtAVX512(x []float32)

//go:noescape
func bitsAVX512(out []uint64, u, scale []float32, turn, half []float64, s32, t32, e32 []float32, k *simdConsts)

//go:noescape
func blocksAVX2(u, a, x, sign []float32, perm []int32, gauss []float32, nb int)

//go:noescape
func tilesAVX2(u, a, xt, sign []float32, perm []int32, gauss []float32, units, rows, vgather int)

//go:noescape
func threshAVX2(out []uint64, xs []float32, feature []int32, value []float32, vgather int)

//go:noescape
func treeLeavesAVX2(leaf []int32, xs []float32, feat []int32, value []float32, depth, vgather int)

//go:noescape
func tilesAVX512(u, a, xt, sign []float32, perm []int32, gauss []float32, units, rows, upper int, idx *[32]int32, vperm int)

// pairIdx is tilesAVX512's VPERMT2PS indices: row r < 4 of each tile takes
// the low quarter of s_r and of s_{r+4} (the second table, +16), row r + 4
// their high quarters — VPERM2F128 $0x20 and $0x31 in each 256-bit half.
var pairIdx = [32]int32{
	0, 1, 2, 3, 16, 17, 18, 19, 8, 9, 10, 11, 24, 25, 26, 27,
	4, 5, 6, 7, 20, 21, 22, 23, 12, 13, 14, 15, 28, 29, 30, 31,
}

//go:noescape
func projAVX2(acc *[8]float32, x []float32, idx []int32, coef []int8)

//go:noescape
func differAVX2(z, sign, nz []uint64, lut *[32]byte) (differ int)

//go:noescape
func noveltyAVX2(z []uint64, cols, d []int32) int32

//go:noescape
func outsideAVX2(x, lo, k []float32, w uint32) uint32

//go:noescape
func differAVX512(z, sign, nz []uint64) (differ int)

//go:noescape
func differAVX512BW(z, sign, nz []uint64, lut *[32]byte) (differ int)

//go:noescape
func bitsAVX2(out []uint64, u, scale []float32, turn, half []float64, s32, t32, e32 []float32, k *simdConsts)

// simdConsts are bitsAVX2's constants, broadcast to every lane.
type simdConsts struct {
	invTwoPi float64 // 1/(2π) as bit() rounds it
	magic    float64 // roundMagic
	absMask  uint64  // clears the sign bit
	// The float32 first pass's (see bitsGo).
	absMask32 uint32
	one32     float32
	edgeScale float32  // 2¹⁹ (see edgeScale)
	order     [8]int32 // bitsAVX2's VPERMD after its packs (YSIGNS)
}

var bitsConsts = simdConsts{invTwoPi: 1 / (2 * math.Pi), magic: roundMagic, absMask: 1<<63 - 1,
	absMask32: 1<<31 - 1, one32: 1, edgeScale: edgeScale, order: [8]int32{0, 4, 1, 5, 2, 6, 3, 7}}

// haveAVX2 reports whether the CPU and the operating system support AVX2
// (the OS must save the YMM registers: XCR0 bits 1 and 2).
func haveAVX2() bool {
	maxID, _, _, _ := cpuid(0, 0)
	if maxID < 7 {
		return false
	}
	_, _, ecx1, _ := cpuid(1, 0)
	const osxsave, avx = 1 << 27, 1 << 28
	if ecx1&osxsave == 0 || ecx1&avx == 0 || xgetbv0()&6 != 6 {
		return false
	}
	_, ebx7, _, _ := cpuid(7, 0)
	return ebx7&(1<<5) != 0
}

// haveAVX512 reports whether the CPU has AVX-512 F, DQ and BW
// (bitsAVX512's VREDUCEPS and VRANGEPS, its 32- and 64-bit masks) and the
// operating system saves the ZMM registers and mask registers (XCR0 bits
// 5–7).
func haveAVX512() bool {
	if !haveAVX2() {
		return false
	}
	_, ebx7, _, _ := cpuid(7, 0)
	const f, dq, bw = 1 << 16, 1 << 17, 1 << 30
	return ebx7&(f|dq|bw) == f|dq|bw && xgetbv0()&0xe6 == 0xe6
}

// cpu is the fast paths this CPU has (see kernels): AVX2 for all of
// them; AVX-512 F, DQ and BW for the 16-lane interval test, FWHT, pair
// tiles and the table paths' wider loops; VPOPCNTDQ (CPUID 7 ECX bit 14)
// for the scores with VPOPCNTQ, else AVX-512 BW (CPUID 7 EBX bit 30) for
// 64-byte nibble tables; FMA3 (CPUID 1 ECX bit 12) for the table paths.
// The gather is measured the first time it is needed (gather_amd64.go).
var cpu = kernels{
	simd:       haveAVX2(),
	avx512:     haveAVX512(),
	popcnt512:  haveAVX512() && func() bool { _, _, ecx7, _ := cpuid(7, 0); return ecx7&(1<<14) != 0 }(),
	shuffle512: haveAVX512() && func() bool { _, ebx7, _, _ := cpuid(7, 0); return ebx7&(1<<30) != 0 }(),
	fma3:       haveAVX2() && func() bool { _, _, ecx1, _ := cpuid(1, 0); return ecx1&(1<<12) != 0 }(),
	gather:     -1,
}

// simdName names the fast path, for benchmarks and tests.
const simdName = "avx2"

// embedSIMD reports whether the embedding's fast paths (blocksSIMD,
// bitsSIMD, projSIMD) run.
func (k *kernels) embedSIMD() bool { return k.simd }

// fwhtUpperSIMD: on amd64 FWHT and the blocks have whole fast paths.
func (k *kernels) fwhtUpperSIMD(x []float32) bool { return false }

// fwhtSIMD runs FWHT on x (a power of two >= 8 long) with the fast path;
// it returns false, doing nothing, when there is none.
func (k *kernels) fwhtSIMD(x []float32) bool {
	if !k.simd {
		return false
	}
	if k.avx512 && len(x) >= 16 {
		fwhtAVX512(x)
		return true
	}
	fwhtAVX2(x)
	return true
}

// bitsSIMD writes len(out) words of interval-test bits (see bitsAVX2) with
// the fast path; it returns false, doing nothing, when there is none.
func (k *kernels) bitsSIMD(out []uint64, u, scale []float32, turn, half []float64, s32, t32, e32 []float32) bool {
	if !k.simd {
		return false
	}
	n := len(out) * 64
	if k.avx512 {
		bitsAVX512(out, u[:n], scale[:n], turn[:n], half[:n], s32[:n], t32[:n], e32[:n], &bitsConsts)
		return true
	}
	bitsAVX2(out, u[:n], scale[:n], turn[:n], half[:n], s32[:n], t32[:n], e32[:n], &bitsConsts)
	return true
}

// blocksSIMD computes transformBlock's w for nb consecutive blocks into u
// (nb·d) with the fast path; sign, perm and gauss are those blocks'
// parameters, consecutive. It returns false, doing nothing, when there is
// no fast path.
func (k *kernels) blocksSIMD(u, a, x, sign []float32, perm []int32, gauss []float32, nb int) bool {
	if !k.simd {
		return false
	}
	n := nb * len(x)
	blocksAVX2(u[:n], a[:len(x)], x, sign[:n], perm[:n], gauss[:n], nb)
	return true
}

// tilesSIMD computes transformBlock's w of blocks of d inputs, in units of
// U = len(xt) = max(d, 64) values, with xt, sign, perm and gauss in tile
// order (see tileOrder), into u (len(u)/U units); with pairs, U = max(d,
// 128) in pair order (tileOrder with k = 2, tilesAVX512).
func (k *kernels) tilesSIMD(u, a, xt, sign []float32, perm []int32, gauss []float32, d int, pairs bool) bool {
	if !k.simd {
		return false
	}
	n, rows := len(u)/len(xt)*len(xt), 0
	for h := 8; h < min(d, 64); h *= 2 {
		rows++
	}
	if pairs {
		upper := 0
		if d > 64 {
			upper = 1
		}
		vperm := 0
		if k.gather == 2 {
			vperm = 1
		}
		if k.pairsInRegisters(d) {
			vperm = 2
		}
		tilesAVX512(u[:n], a[:len(xt)], xt, sign[:n], perm[:n], gauss[:n], n/len(xt), rows, upper, &pairIdx, vperm)
		return true
	}
	tilesAVX2(u[:n], a[:len(xt)], xt, sign[:n], perm[:n], gauss[:n], n/len(xt), rows, k.gather)
	return true
}

// pairTiles reports whether blocks of d inputs run two tiles per 16-lane
// vector (tilesAVX512, pair order: tileOrder with k = 2): d >= 16 where
// there is AVX-512 and VGATHERDPS is fast, or up to d = 256 with the
// AVX-512 permutes (gather mode 2; larger d would not fit the registers).
func (k *kernels) pairTiles(d int) bool {
	return k.avx512 && d >= 16 && (k.gather == 1 || k.gather == 2 && d <= 256)
}

// pairsInRegisters reports whether pair tiles of d inputs keep the first
// transform's outputs in registers for the permutes (d <= 64: a unit is
// one pair), their perm entries then indexing the registers' layout (see
// pairRegister).
func (k *kernels) pairsInRegisters(d int) bool { return k.pairTiles(d) && k.gather == 2 && d <= 64 }

// tilesFor reports whether transforms of padded size d use tilesSIMD:
// sizes of 32 and up always; 8 and 16, which have in-register paths,
// only where the tiles gather fast (VGATHERDPS, or AVX-512 permutes),
// and only without their table paths (table8_amd64.go).
func (k *kernels) tilesFor(d int) bool {
	table := (d == 8 || d == 16) && k.fma3
	return k.simd && (d >= 32 || d >= 8 && k.gather >= 1 && !table)
}

// threshSIMD ORs the threshold bits of the first len(feature)/64 whole
// words into out with the fast path and returns how many thresholds it
// covered (0 without one). Every feature index must be below len(xs).
func (k *kernels) threshSIMD(out []uint64, xs []float32, feature []int32, value []float32) int {
	if !k.simd {
		return 0
	}
	words := len(feature) / 64
	threshAVX2(out[:words], xs, feature[:words*64], value[:words*64], k.gatherMode())
	return words * 64
}

// treeLeavesSIMD writes the leaves of the first len(feat)/(8·depth)·8
// trees into leaf with the fast path, their tests in groups of eight
// (see treeColumns.gfeat), and returns how many (0 without one). Every
// feature index must be below len(xs).
func (k *kernels) treeLeavesSIMD(leaf []int32, xs []float32, feat []int32, value []float32, depth int) int {
	if !k.simd || depth == 0 {
		return 0
	}
	n := len(feat) / depth / 8 * 8
	treeLeavesAVX2(leaf[:n], xs, feat[:n*depth], value[:n*depth], depth, k.gatherMode())
	return n
}

// projSIMD sums eight projection outputs (see projAVX2); only called when
// simd is on. Every idx entry must be a valid index of x.
func (k *kernels) projSIMD(acc *[8]float32, x []float32, idx []int32, coef []int8) {
	projAVX2(acc, x, idx, coef[:8*len(idx)])
}

// popLUT is the number of bits of each nibble, once per 128-bit lane.
var popLUT = [32]byte{0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4, 0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4}

// differSIMD returns ternaryDiffer's count over the first len(z)/4·4
// words with the fast path, and how many words it covered (0 when there
// is none).
func (k *kernels) differSIMD(z, sign, nz []uint64) (differ, words int) {
	if !k.simd || len(z) < 4 {
		return 0, 0
	}
	if k.popcnt512 && len(z) >= 8 {
		words = len(z) &^ 7
		return differAVX512(z[:words], sign[:words], nz[:words]), words
	}
	if k.shuffle512 && len(z) >= 8 {
		words = len(z) &^ 7
		return differAVX512BW(z[:words], sign[:words], nz[:words], &popLUT), words
	}
	words = len(z) &^ 3
	return differAVX2(z[:words], sign[:words], nz[:words], &popLUT), words
}

// noveltySIMD returns Σ bit_i·d_i (see noveltySum) over the first
// len(cols)/8·8 columns with the fast path, and how many columns it
// covered (0 when there is none). Every column's bit must lie in z.
func (k *kernels) noveltySIMD(z []uint64, cols, d []int32) (sum int32, n int) {
	n = len(cols) &^ 7
	if !k.simd || n == 0 {
		return 0, 0
	}
	return noveltyAVX2(z, cols[:n], d[:n]), n
}

// outsideSIMD returns scaling.outside's sum over the first len(x)/8·8
// features with the fast path (scale is the scaler's k), and how many
// features it covered (0 when there is none). w must be at most
// MaxOutsideWeight.
func (k *kernels) outsideSIMD(x, lo, scale []float32, w uint32) (sum uint32, n int) {
	n = len(x) &^ 7
	if !k.simd || n == 0 {
		return 0, 0
	}
	return outsideAVX2(x[:n], lo[:n], scale[:n], w), n
}
