package inference

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// The tiled blocks (d a multiple of 64) gather with scalar loads or with
// VGATHERDPS depending on the CPU; both against the reference.
func TestEmbedFastPathBothGathers(t *testing.T) {
	saved := vgather
	defer func() { vgather = saved }()
	rnd := rand.New(rand.NewPCG(41, 42))
	for _, g := range []int{0, 1} {
		vgather = g
		for _, d := range []int{5, 16, 24, 33, 64, 100, 256, 784} {
			for _, p := range []int{64, 1000, 3*nextPow2(d) + 5} {
				for _, keep := range []string{"all", "some"} {
					t.Run(fmt.Sprintf("vgather=%d/d=%d/p=%d/%s", g, d, p, keep), func(t *testing.T) {
						testEmbedFastPath(t, rnd, d, p, keep)
					})
				}
			}
		}
	}
}
