package inference

import "math"

// Generator versions. A transform is defined by (generator version, seed,
// σ, d, p); a version, once released, never changes what it produces, so a
// bundle only needs to ship those five numbers. A new algorithm gets a new
// version number and the old one stays available.
const (
	// GeneratorV1 is xoshiro256** seeded through splitmix64, one independent
	// stream per Fastfood block; Gaussians by Marsaglia's polar method;
	// χ by Marsaglia–Tsang gamma sampling; permutations by Fisher–Yates with
	// Lemire's unbiased bounded integers. See stream and Generate.
	GeneratorV1 uint32 = 1
)

// rng is xoshiro256** (Blackman & Vigna). Integer-only, so its output is
// identical on every architecture.
type rng struct {
	s [4]uint64
	// spare holds the second Gaussian of a polar-method pair.
	spare    float64
	hasSpare bool
}

func splitmix64(x *uint64) uint64 {
	*x += 0x9e3779b97f4a7c15
	z := *x
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// stream returns the generator for one Fastfood block: seeded from
// (seed, block) so a block's parameters do not depend on p, and a model with
// a larger p shares the first columns of a smaller one.
func stream(seed uint64, block int) *rng {
	x := seed ^ (uint64(block)+1)*0xd1b54a32d192ed03
	r := &rng{}
	for i := range r.s {
		r.s[i] = splitmix64(&x)
	}
	return r
}

func rotl(x uint64, k uint) uint64 { return x<<k | x>>(64-k) }

func (r *rng) next() uint64 {
	s := &r.s
	result := rotl(s[1]*5, 7) * 9
	t := s[1] << 17
	s[2] ^= s[0]
	s[3] ^= s[1]
	s[1] ^= s[2]
	s[0] ^= s[3]
	s[2] ^= t
	s[3] = rotl(s[3], 45)
	return result
}

// uniform returns a float64 in [0, 1) with 53 random bits.
func (r *rng) uniform() float64 {
	return float64(r.next()>>11) * (1.0 / (1 << 53))
}

// intn returns an unbiased integer in [0, n) (Lemire, "Fast random integer
// generation in an interval", 2019), n > 0.
func (r *rng) intn(n uint32) uint32 {
	m := (r.next() >> 32) * uint64(n)
	if low := uint32(m); low < n {
		thresh := -n % n
		for low < thresh {
			m = (r.next() >> 32) * uint64(n)
			low = uint32(m)
		}
	}
	return uint32(m >> 32)
}

// gauss returns a standard normal variate (Marsaglia's polar method).
func (r *rng) gauss() float64 {
	if r.hasSpare {
		r.hasSpare = false
		return r.spare
	}
	for {
		u := float64(2*r.uniform()) - 1
		v := float64(2*r.uniform()) - 1
		s := float64(u*u) + float64(v*v)
		if s >= 1 || s == 0 {
			continue
		}
		f := math.Sqrt(float64(-2*detLog(s)) / s)
		r.spare, r.hasSpare = float64(v*f), true
		return float64(u * f)
	}
}

// chi returns a χ variate with k degrees of freedom, the length of a
// k-dimensional standard normal vector, as √(2·Gamma(k/2, 1)) with
// Marsaglia & Tsang's gamma sampler (2000). k >= 2, so the shape is >= 1.
func (r *rng) chi(k int) float64 {
	d := float64(k)/2 - 1.0/3
	c := 1 / math.Sqrt(float64(9*d))
	for {
		x := r.gauss()
		v := float64(c*x) + 1
		if v <= 0 {
			continue
		}
		v = float64(float64(v*v) * v)
		u := r.uniform()
		x2 := float64(x * x)
		if u < 1-float64(0.0331*float64(x2*x2)) ||
			detLog(u) < float64(0.5*x2)+float64(d*(float64(1-v)+detLog(v))) {
			return math.Sqrt(float64(2 * float64(d*v)))
		}
	}
}
