// Package splitmix is the one random generator of training: splitmix64
// (Steele, Lea & Flood 2014). It is tiny and integer-only, so what it drives
// — splits, subsets, permutations — is the same on every architecture and
// Go release, which math/rand does not promise. (The transform's generator
// in package inference is a frozen specification of its own.)
package splitmix

import "math/bits"

// Source is a splitmix64 stream; its zero value is a valid stream. The
// state is exported so a stream can be seeded with a struct literal.
type Source struct{ State uint64 }

// New returns a stream seeded with seed.
func New(seed uint64) *Source { return &Source{State: seed} }

// Next returns the next 64 random bits.
func (s *Source) Next() uint64 {
	s.State += 0x9e3779b97f4a7c15
	z := s.State
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// Below returns a uniform integer in [0, n), n > 0, by Lemire's
// multiply-and-reject method (no modulo bias).
func (s *Source) Below(n uint64) uint64 {
	hi, lo := bits.Mul64(s.Next(), n)
	if lo < n {
		thresh := -n % n
		for lo < thresh {
			hi, lo = bits.Mul64(s.Next(), n)
		}
	}
	return hi
}

// Intn is Below for int.
func (s *Source) Intn(n int) int { return int(s.Below(uint64(n))) }

// Float64 returns a uniform value in [0, 1) with 53 random bits.
func (s *Source) Float64() float64 { return float64(s.Next()>>11) / (1 << 53) }

// Sample returns k distinct indexes from [0, n) in ascending order (a
// partial Fisher–Yates shuffle).
func (s *Source) Sample(n, k int) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	for i := range k {
		j := i + s.Intn(n-i)
		idx[i], idx[j] = idx[j], idx[i]
	}
	out := idx[:k]
	sortInts(out)
	return out
}

func sortInts(a []int) {
	for i := 1; i < len(a); i++ {
		for j := i; j > 0 && a[j] < a[j-1]; j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
}
