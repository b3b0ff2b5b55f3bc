package wire

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestBackoffBounds: every wait lies in the upper half of its nominal
// delay, and the nominal delay doubles from Min up to Max and starts again
// at Min after Reset.
func TestBackoffBounds(t *testing.T) {
	for _, c := range []struct {
		name     string
		min, max time.Duration
		nominal  []time.Duration
	}{
		{"1s to 60s", time.Second, time.Minute, []time.Duration{1, 2, 4, 8, 16, 32, 60, 60}},
		{"Max not a power of two of Min", 3 * time.Second, 10 * time.Second, []time.Duration{3, 6, 10, 10}},
		{"Min equals Max", 5 * time.Second, 5 * time.Second, []time.Duration{5, 5, 5}},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, r := range []float64{0, 0.5, 0.999999} {
				b := &Backoff{Min: c.min, Max: c.max, Rand: func() float64 { return r }}
				for round := range 2 {
					for i, n := range c.nominal {
						want := n * time.Second
						wait, nominal := b.Next()
						if nominal != want {
							t.Fatalf("rand %v, round %d, attempt %d: nominal %v, want %v", r, round, i, nominal, want)
						}
						if wait < want/2 || wait > want {
							t.Fatalf("rand %v, attempt %d: wait %v outside [%v, %v]", r, i, wait, want/2, want)
						}
					}
					b.Reset()
				}
			}
		})
	}
}

// TestBackoffSpread: a thousand gateways that lost the broker at the same
// moment do not come back together. Their first waits (drawn from a seeded
// source, so the test is deterministic) cover the whole jitter interval
// [Min/2, Min] and no value repeats often.
func TestBackoffSpread(t *testing.T) {
	src := rand.New(rand.NewPCG(1, 2))
	const n = 1000
	lo, hi := time.Hour, time.Duration(0)
	counts := map[time.Duration]int{}
	var buckets [10]int
	for range n {
		b := &Backoff{Min: time.Second, Max: time.Minute, Rand: src.Float64}
		w, _ := b.Next()
		lo, hi = min(lo, w), max(hi, w)
		counts[w.Truncate(time.Millisecond)]++
		buckets[min(int((w-500*time.Millisecond)*10/(500*time.Millisecond)), 9)]++
	}
	if lo < 500*time.Millisecond || hi > time.Second {
		t.Fatalf("waits span [%v, %v], outside [500ms, 1s]", lo, hi)
	}
	if lo > 510*time.Millisecond || hi < 990*time.Millisecond {
		t.Errorf("waits span only [%v, %v] of [500ms, 1s]", lo, hi)
	}
	for ms, k := range counts {
		if k > 10 {
			t.Errorf("%d of %d gateways wait %v", k, n, ms)
		}
	}
	// Roughly uniform: every tenth of the interval gets a fair share.
	for i, k := range buckets {
		if k < n/10/2 || k > n/10*2 {
			t.Errorf("bucket %d of the jitter interval has %d of %d waits: %v", i, k, n, buckets)
		}
	}
}

// TestBackoffDefaultRand: without Rand the waits still vary.
func TestBackoffDefaultRand(t *testing.T) {
	seen := map[time.Duration]bool{}
	for range 50 {
		b := &Backoff{Min: time.Second, Max: time.Minute}
		w, _ := b.Next()
		if w < 500*time.Millisecond || w > time.Second {
			t.Fatalf("wait %v outside [500ms, 1s]", w)
		}
		seen[w] = true
	}
	if len(seen) < 2 {
		t.Error("50 backoffs all wait the same time: no jitter")
	}
}
