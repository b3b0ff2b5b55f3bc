package ternary

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"
)

// deepAgreeAVX2 counts what lowerTrial's Go loop counts, for every length
// (the four-word loop and the words left over).
func TestDeepAgreeAVX2(t *testing.T) {
	if !useAVX2 {
		t.Skip("no AVX2 on this CPU: lowerTrial's Go loop is the only one")
	}
	checkDeepAgree(t, deepAgreeAVX2)
}

// deepAgree512 counts the same (the eight-word loop and the words left
// over).
func TestDeepAgree512(t *testing.T) {
	if !usePopcnt512 {
		t.Skip("no AVX-512 VPOPCNTDQ on this CPU")
	}
	checkDeepAgree(t, deepAgree512)
}

func checkDeepAgree(t *testing.T, kernel func(deep, col, y *uint64, n int) int) {
	t.Helper()
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
		if got := kernel(&deep[0], &col[0], &y[0], n); got != want {
			t.Fatalf("%d words: %d, the Go loop %d", n, got, want)
		}
	}
}

// addColumn512 gives addWord's margins and masks word by word, over
// columns of 1 to 9 full words, zone bounds at the edges of int32
// included.
func TestAddColumn512(t *testing.T) {
	if !useAVX512 {
		t.Skip("no AVX-512 on this CPU: addColumn takes the AVX2 or Go loop")
	}
	checkAddColumn(t, addColumn512)
}

// addColumnAVX2 gives addWord's margins and masks as addColumn512 does.
func TestAddColumnAVX2(t *testing.T) {
	if !useAVX2 {
		t.Skip("no AVX2 on this CPU: addColumn takes the Go loop")
	}
	checkAddColumn(t, addColumnAVX2)
}

func checkAddColumn(t *testing.T, kernel func(m *int32, col, y *uint64, words int, delta, zlo int32, zw uint32, hits *uint64)) {
	t.Helper()
	r := rand.New(rand.NewPCG(5, 6))
	s := &solver{}
	for trial := range 5000 {
		words := 1 + r.IntN(9)
		delta := int32(r.IntN(9) - 4)
		if trial%7 == 0 {
			delta = int32(r.Uint32())
		}
		tab := s.incTable(delta)
		want := make([]int32, 64*words)
		for i := range want {
			want[i] = int32(r.Uint32() >> r.IntN(32))
			if r.IntN(2) == 0 {
				want[i] = -want[i]
			}
		}
		got := append([]int32(nil), want...)
		col, y := make([]uint64, words), make([]uint64, words)
		for w := range words {
			col[w], y[w] = r.Uint64(), r.Uint64()
		}
		zlo, zw := int32(r.IntN(200)-100), uint32(r.IntN(300))
		switch trial % 5 {
		case 1:
			zlo, zw = math.MinInt32, math.MaxUint32
		case 2:
			zlo, zw = int32(r.Uint32()), r.Uint32()
		case 3:
			zlo, zw = 0, 0
		}
		hits := make([]uint64, words)
		kernel(&got[0], &col[0], &y[0], words, delta, zlo, zw, &hits[0])
		for w := range words {
			wm := addWord(want[64*w:64*w+64], ^(col[w] ^ y[w]), tab, zlo, zw)
			if wm != hits[w] {
				t.Fatalf("trial %d word %d (delta %d, zone %d+%d): mask %064b, Go %064b", trial, w, delta, zlo, zw, hits[w], wm)
			}
		}
		if !slices.Equal(want, got) {
			t.Fatalf("trial %d (delta %d): margins %v, Go %v", trial, delta, got, want)
		}
	}
}
