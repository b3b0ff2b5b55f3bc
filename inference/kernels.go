package inference

// kernels is a choice of fast paths: which of each step's kernels run —
// its pure-Go loop (the specification) or a fast path that computes the
// same bits (docs/ARCHITECTURE.md "The kernel path"). Every Model,
// Embedder, Transform and projector holds the one it was built with and
// passes it down, so nothing a prediction runs reads a mutable global.
//
// cpu, chosen once at start from what the CPU has (CPUID and XGETBV on
// amd64, NEON on arm64, nothing elsewhere; simd_*.go), is what every
// exported constructor and function uses, and nothing assigns it after
// (TestKernelsImmutable). Tests build other choices — goKernels, or cpu
// with a path switched off — and pass them to the unexported constructors
// (newModel, newTransform, …), so tests of different paths run in
// parallel.
//
// Adding a fast path is a field here when it is a choice, a method on
// *kernels in simd_<arch>.go with its stub in simd_noamd64.go or
// simd_other.go, and its test against the Go loop in simd_test.go.
type kernels struct {
	// simd runs the fast paths at all (AVX2 on amd64, NEON on arm64);
	// false runs every step's Go loop.
	simd bool
	// The rest are amd64's, read only with simd.
	avx512     bool // the interval test and FWHT 16 lanes wide, pair tiles, the table paths' AVX-512 loops
	popcnt512  bool // the scores with VPOPCNTQ (differAVX512)
	shuffle512 bool // without it, the scores with 64-byte nibble tables (differAVX512BW)
	fma3       bool // the table paths of d = 8 and 16 (table8_amd64.go)
	// gather is how the tiles and the threshold and tree tests gather:
	// 0 scalar loads, 1 VGATHERDPS, 2 the AVX-512 permutes (see
	// gather_amd64.go); −1 measures it, once per process, the first time
	// it is needed (cpu's, until resolved).
	gather int
}

// goKernels runs every step's pure-Go loop.
var goKernels = kernels{}

// resolved returns k with its gather setting decided: measured once per
// process when k leaves it to the measurement (gather −1).
func (k kernels) resolved() kernels {
	k.gather = k.gatherMode()
	return k
}

// gatherMode returns k's gather setting, measured once per process when
// k leaves it to the measurement.
func (k *kernels) gatherMode() int {
	if k.gather >= 0 {
		return k.gather
	}
	return measuredGather()
}
