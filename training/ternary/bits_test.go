package ternary

import (
	"errors"
	"math/rand/v2"
	"reflect"
	"testing"
)

// sharedProblem returns the same n×p matrix twice — plainly stored, and
// with the columns of same sharing storage — filled through SetRows64 from
// rows where shared columns hold the same bits.
func sharedProblem(t *testing.T, seed uint64, n int, same []int32) (plain, shared *Columns) {
	t.Helper()
	p := len(same)
	rnd := rand.New(rand.NewPCG(seed, 7))
	stored := 0
	for _, s := range same {
		stored = max(stored, int(s)+1)
	}
	bitsOf := make([][]uint64, n) // sample i's bit of each stored column
	for i := range bitsOf {
		bitsOf[i] = make([]uint64, stored)
		for s := range bitsOf[i] {
			bitsOf[i][s] = uint64(rnd.IntN(2))
		}
	}
	plain = NewColumns(n, p)
	shared, err := NewSharedColumns(n, same)
	if err != nil {
		t.Fatal(err)
	}
	for base := 0; base < n; base += 64 {
		rows := make([][]uint64, min(64, n-base))
		for r := range rows {
			rows[r] = make([]uint64, (p+63)/64)
			for j, s := range same {
				rows[r][j>>6] |= bitsOf[base+r][s] << (j & 63)
			}
		}
		plain.SetRows64(base, rows)
		shared.SetRows64(base, rows)
	}
	return plain, shared
}

// twoPlanes shares columns [k, 2k) with [0, k) and keeps the rest apart:
// the layout of tree leaves with two planes followed by other columns.
func twoPlanes(k, rest int) []int32 {
	same := make([]int32, 2*k+rest)
	for j := range same {
		switch {
		case j < k:
			same[j] = int32(j)
		case j < 2*k:
			same[j] = int32(j - k)
		default:
			same[j] = int32(j - k)
		}
	}
	return same
}

func sameBits(t *testing.T, what string, a, b *Columns) {
	t.Helper()
	if a.N != b.N || a.P != b.P {
		t.Fatalf("%s: %d×%d against %d×%d", what, a.N, a.P, b.N, b.P)
	}
	for j := range a.P {
		if !reflect.DeepEqual(a.Col(j), b.Col(j)) {
			t.Fatalf("%s: column %d differs", what, j)
		}
		for i := range a.N {
			if a.Bit(i, j) != b.Bit(i, j) {
				t.Fatalf("%s: bit (%d, %d) differs", what, i, j)
			}
		}
	}
}

// A matrix with shared columns reads, subsets, selects and solves exactly
// as the same bits stored once per column, in less memory.
func TestSharedColumnsAsPlain(t *testing.T) {
	same := twoPlanes(40, 25) // 105 columns, 65 stored
	plain, shared := sharedProblem(t, 3, 300, same)
	if got, want := len(shared.Data), shared.Words*65; got != want || shared.Stored() != 65 {
		t.Fatalf("shared matrix stores %d words (%d columns), want %d (65)", got, shared.Stored(), want)
	}
	sameBits(t, "NewSharedColumns", plain, shared)

	rows := []int{299, 0, 64, 65, 17, 200, 17}
	sameBits(t, "Subset", plain.Subset(rows), shared.Subset(rows))

	cols := []int{0, 41, 40, 1, 104, 80, 79}
	sel := shared.Select(cols)
	if &sel.Data[0] != &shared.Data[0] {
		t.Fatal("Select copied the storage")
	}
	plainSel := NewColumns(plain.N, len(cols))
	for k, j := range cols {
		copy(plainSel.Col(k), plain.Col(j))
	}
	sameBits(t, "Select", plainSel, sel)
	sameBits(t, "Select then Subset", plainSel.Subset(rows), sel.Subset(rows))

	// The solver sees only Col: the same problem gives the same model.
	y := make([]int8, plain.N)
	rnd := rand.New(rand.NewPCG(5, 5))
	for i := range y {
		y[i] = int8(2*int(plain.Bit(i, 0)^plain.Bit(i, 50)) - 1)
		if rnd.IntN(10) == 0 {
			y[i] = -y[i]
		}
	}
	mult := make([]int32, plain.P)
	for j := range mult {
		mult[j] = 1 + int32(j/40%2) // the second plane weighs 2
	}
	for _, binary := range []bool{false, true} {
		o := &Options{Lambda: 1e-3, Mult: mult, Binary: binary, MaxRounds: 20}
		w0 := make([]int8, plain.P)
		a, err := Solve(plain, LabelBits(y), w0, 0.05, o)
		if err != nil {
			t.Fatal(err)
		}
		b, err := Solve(shared, LabelBits(y), w0, 0.05, o)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a.W, b.W) || a.Alpha != b.Alpha || a.Objective != b.Objective {
			t.Fatalf("binary %v: shared storage solved to α %g objective %g, plain to α %g objective %g",
				binary, b.Alpha, b.Objective, a.Alpha, a.Objective)
		}
	}
}

func TestNewSharedColumnsRefusesGaps(t *testing.T) {
	for _, same := range [][]int32{{0, -1}, {1, 0}, {0, 2, 1}} {
		if _, err := NewSharedColumns(10, same); !errors.Is(err, ErrInput) {
			t.Errorf("NewSharedColumns(%v) = %v, want ErrInput", same, err)
		}
	}
	c, err := NewSharedColumns(10, []int32{0, 0, 1, 0})
	if err != nil {
		t.Fatal(err)
	}
	c.Data = c.Data[:1] // one stored column of two
	if _, err := Solve(c, make([]uint64, 1), make([]int8, 4), 1, nil); !errors.Is(err, ErrInput) {
		t.Fatalf("Solve of a truncated shared matrix = %v, want ErrInput", err)
	}
}

// SetRows64 stores exactly what its reference loop, one bit at a time,
// stores: for every column, full and partial stripes, plain and shared
// storage, and after Select (stored columns in another order).
func TestSetRows64MatchesReference(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 3))
	for _, c := range []struct{ n, p int }{{64, 64}, {200, 130}, {1, 7}, {130, 1}, {333, 500}} {
		words := (c.p + 63) / 64
		all := make([][]uint64, c.n)
		for i := range all {
			all[i] = make([]uint64, words)
			for w := range all[i] {
				all[i][w] = rnd.Uint64()
			}
			if rem := c.p % 64; rem != 0 {
				all[i][words-1] &= 1<<rem - 1
			}
		}
		plain := NewColumns(c.n, c.p)
		for base := 0; base < c.n; base += 64 {
			plain.SetRows64(base, all[base:min(base+64, c.n)])
		}
		// Columns in another order, sharing nothing: stored column s
		// filled from column p−1−s.
		cols := make([]int, c.p)
		for j := range cols {
			cols[j] = c.p - 1 - j
		}
		sel := NewColumns(c.n, c.p).Select(cols)
		perm := make([][]uint64, c.n) // the rows in sel's column order
		for i := range perm {
			perm[i] = make([]uint64, words)
			for k, j := range cols {
				perm[i][k>>6] |= (all[i][j>>6] >> (j & 63) & 1) << (k & 63)
			}
		}
		for base := 0; base < c.n; base += 64 {
			sel.SetRows64(base, perm[base:min(base+64, c.n)])
		}
		for j := range c.p {
			want := make([]uint64, plain.Words)
			for i := range c.n {
				want[i>>6] |= (all[i][j>>6] >> (j & 63) & 1) << (i & 63)
			}
			if !reflect.DeepEqual(plain.Col(j), want) {
				t.Fatalf("n %d, p %d: column %d is %x, want %x", c.n, c.p, j, plain.Col(j), want)
			}
		}
		for k, j := range cols {
			if !reflect.DeepEqual(sel.Col(k), plain.Col(j)) {
				t.Fatalf("n %d, p %d: selected column %d (column %d) differs", c.n, c.p, k, j)
			}
		}
	}
}

func BenchmarkSetRows64(b *testing.B) {
	rnd := rand.New(rand.NewPCG(4, 4))
	const p = 10496
	rows := make([][]uint64, 64)
	for r := range rows {
		rows[r] = make([]uint64, p/64)
		for w := range rows[r] {
			rows[r][w] = rnd.Uint64()
		}
	}
	c := NewColumns(64, p)
	for b.Loop() {
		c.SetRows64(0, rows)
	}
}
