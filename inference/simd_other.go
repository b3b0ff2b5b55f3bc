//go:build !amd64 && !arm64

package inference

// No fast path on this architecture yet: everything runs its pure-Go loop
// (simd_noamd64.go has the stubs shared with arm64).

// cpu runs the Go loops (see kernels).
var cpu = kernels{}

const simdName = "none"

func (k *kernels) fwhtUpperSIMD(x []float32) bool { return false }
