package inference

// The arm64 fast path (simd_arm64.s): FWHT's stages h >= 4 with NEON,
// used by FWHT and by the transform's blocks. Like every fast path it
// computes exactly what the Go loop does; simd_test.go checks it bit for
// bit under qemu (scripts/test-arm.sh). The interval test, the projection
// and the popcounts run their Go loops on arm64.

//go:noescape
func fwhtUpperNEON(x []float32)

// cpu is the fast path arm64 has (see kernels): NEON, always there.
var cpu = kernels{simd: true}

const simdName = "neon"

// fwhtUpperSIMD runs fwhtUpper with NEON when k.simd is on.
func (k *kernels) fwhtUpperSIMD(x []float32) bool {
	if !k.simd {
		return false
	}
	fwhtUpperNEON(x)
	return true
}
