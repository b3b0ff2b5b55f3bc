package training

// splitMix is a tiny deterministic generator (splitmix64) for choosing
// subsets: integer-only, so the same on every architecture.
type splitMix struct{ x uint64 }

func newSplitMix(seed uint64) *splitMix { return &splitMix{x: seed} }

func (s *splitMix) next() uint64 {
	s.x += 0x9e3779b97f4a7c15
	z := s.x
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// intn returns a value in [0, n); the modulo bias is below 2⁻⁴⁰ for the
// sizes used here and irrelevant to choosing subsets.
func (s *splitMix) intn(n int) int { return int(s.next() % uint64(n)) }

// sample returns k distinct indexes from [0, n) in ascending order (a
// partial Fisher–Yates shuffle).
func (s *splitMix) sample(n, k int) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	for i := range k {
		j := i + s.intn(n-i)
		idx[i], idx[j] = idx[j], idx[i]
	}
	out := idx[:k]
	sortInts(out)
	return out
}

func sortInts(a []int) {
	// Insertion sort is enough for the few thousand init rows, and keeps
	// this file free of imports.
	for i := 1; i < len(a); i++ {
		for j := i; j > 0 && a[j] < a[j-1]; j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
}
