package linear

import "github.com/trit-iot/trit/training/internal/splitmix"

// shuffle permutes idx uniformly (Fisher–Yates) with r, which is
// integer-only: the permutations are the same on every architecture.
func shuffle(r *splitmix.Source, idx []int32) {
	for i := len(idx) - 1; i > 0; i-- {
		j := r.Below(uint64(i) + 1)
		idx[i], idx[j] = idx[j], idx[i]
	}
}
