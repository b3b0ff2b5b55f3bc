package linear

import "math/bits"

// rng is splitmix64 (Steele, Lea, Flood 2014). It is integer-only, so the
// permutations it drives are the same on every architecture and Go release,
// which math/rand does not promise.
type rng struct{ state uint64 }

func (r *rng) next() uint64 {
	r.state += 0x9e3779b97f4a7c15
	z := r.state
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// uintn returns a uniform integer in [0, n), n > 0, by Lemire's
// multiply-and-reject method (unbiased).
func (r *rng) uintn(n uint64) uint64 {
	hi, lo := bits.Mul64(r.next(), n)
	if lo < n {
		thresh := -n % n
		for lo < thresh {
			hi, lo = bits.Mul64(r.next(), n)
		}
	}
	return hi
}

// shuffle permutes idx uniformly (Fisher–Yates).
func (r *rng) shuffle(idx []int32) {
	for i := len(idx) - 1; i > 0; i-- {
		j := r.uintn(uint64(i) + 1)
		idx[i], idx[j] = idx[j], idx[i]
	}
}
