package ternary

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"testing"
)

// addWord64AVX2 gives addWord's margins and mask on every word, zone
// bounds at the edges of int32 included.
func TestAddWordAVX2(t *testing.T) {
	if !useAVX2 {
		t.Skip("no AVX2 on this CPU: addWord's Go loop is the only one")
	}
	r := rand.New(rand.NewPCG(3, 4))
	s := &solver{}
	for trial := range 20000 {
		delta := int32(r.IntN(9) - 4)
		if trial%7 == 0 {
			delta = int32(r.Uint32())
		}
		tab := s.incTable(delta)
		var want, got [64]int32
		for i := range want {
			want[i] = int32(r.Uint32() >> r.IntN(32))
			if r.IntN(2) == 0 {
				want[i] = -want[i]
			}
		}
		got = want
		zlo, zw := int32(r.IntN(200)-100), uint32(r.IntN(300))
		switch trial % 5 {
		case 1:
			zlo, zw = math.MinInt32, math.MaxUint32
		case 2:
			zlo, zw = int32(r.Uint32()), r.Uint32()
		}
		c := r.Uint64()
		wm := addWord(want[:], c, tab, zlo, zw)
		gm := addWord64AVX2(&got, c, tab, zlo, zw)
		if wm != gm || want != got {
			t.Fatalf("trial %d (delta %d, zone %d+%d): AVX2 mask %064b margins %v, Go %064b %v", trial, delta, zlo, zw, gm, got, wm, want)
		}
	}
}

// deepAgreeAVX2 counts what lowerTrial's Go loop counts, for every length
// (the four-word loop and the words left over).
func TestDeepAgreeAVX2(t *testing.T) {
	if !useAVX2 {
		t.Skip("no AVX2 on this CPU: lowerTrial's Go loop is the only one")
	}
	rnd := rand.New(rand.NewPCG(3, 4))
	for n := 1; n <= 70; n++ {
		deep, col, y := make([]uint64, n), make([]uint64, n), make([]uint64, n)
		for w := range n {
			deep[w], col[w], y[w] = rnd.Uint64(), rnd.Uint64(), rnd.Uint64()
			if w%7 == 3 {
				deep[w] = ^uint64(0)
			}
		}
		want := 0
		for w := range n {
			want += bits.OnesCount64(deep[w] &^ (col[w] ^ y[w]))
		}
		if got := deepAgreeAVX2(&deep[0], &col[0], &y[0], n); got != want {
			t.Fatalf("%d words: %d, the Go loop %d", n, got, want)
		}
	}
}
