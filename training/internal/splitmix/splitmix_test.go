package splitmix

import "testing"

// The first outputs for seed 0 are splitmix64's published test vector.
func TestKnownSequence(t *testing.T) {
	s := New(0)
	for i, want := range []uint64{0xe220a8397b1dcdaf, 0x6e789e6aa1b965f4, 0x06c45d188009454f} {
		if got := s.Next(); got != want {
			t.Fatalf("output %d = %#x, want %#x", i, got, want)
		}
	}
}

func TestBelowAndSample(t *testing.T) {
	s := New(7)
	seen := make([]int, 5)
	for range 5000 {
		seen[s.Below(5)]++
	}
	for v, n := range seen {
		if n < 850 || n > 1150 {
			t.Fatalf("value %d drawn %d times of 5000", v, n)
		}
	}
	got := New(3).Sample(100, 10)
	for i := 1; i < len(got); i++ {
		if got[i] <= got[i-1] || got[i] >= 100 {
			t.Fatalf("sample %v not ascending and distinct in [0, 100)", got)
		}
	}
	if len(got) != 10 {
		t.Fatalf("sample of %d", len(got))
	}
}
