package ternary

import "fmt"

// Columns is an n×p binary matrix stored column-major as packed bits, the
// layout the coordinate descent streams through: bit i%64 of word i/64 of
// Col(j) is sample i, 1 meaning +1. Bits past N in the last word of a
// column are 0.
//
// Columns with identical bits may share one stored column (NewSharedColumns,
// Select): a boosted tree's leaf planes are the same bits, and storing them
// once lets twice the trees fit the same memory. Data holds the stored
// columns, Words each; without sharing, column j is Data[j*Words:(j+1)*Words].
type Columns struct {
	N, P  int
	Words int // (N+63)/64
	Data  []uint64
	// same maps column j to the stored column holding its bits; nil means
	// column j is stored column j.
	same []int32
	// owner lists, for each stored column, the column SetRows64 fills it
	// from (the first one stored there; -1 if none is, after Select); nil
	// when same is.
	owner []int32
}

// NewColumns allocates an all -1 n×p matrix.
func NewColumns(n, p int) *Columns {
	w := (n + 63) / 64
	return &Columns{N: n, P: p, Words: w, Data: make([]uint64, w*p)}
}

// NewSharedColumns allocates an all -1 n×len(same) matrix whose column j is
// stored column same[j]: columns mapped to one stored column always have
// the same bits. Every stored column 0..max(same) must be used, and the
// first column of each must appear in stored order (same[j] <= 1 + the
// largest earlier entry), so that no storage is wasted.
func NewSharedColumns(n int, same []int32) (*Columns, error) {
	var owner []int32
	for j, s := range same {
		switch {
		case s < 0 || int(s) > len(owner):
			return nil, fmt.Errorf("%w: column %d is stored at %d, want 0..%d", ErrInput, j, s, len(owner))
		case int(s) == len(owner):
			owner = append(owner, int32(j))
		}
	}
	w := (n + 63) / 64
	return &Columns{N: n, P: len(same), Words: w, Data: make([]uint64, w*len(owner)),
		same: append([]int32(nil), same...), owner: owner}, nil
}

// Stored returns the number of stored columns (P without sharing).
func (c *Columns) Stored() int {
	if c.same == nil {
		return c.P
	}
	return len(c.owner)
}

// storedAt returns the stored column of column j.
func (c *Columns) storedAt(j int) int {
	if c.same == nil {
		return j
	}
	return int(c.same[j])
}

// Col returns column j (shared with the columns stored with it).
func (c *Columns) Col(j int) []uint64 { return c.storedCol(c.storedAt(j)) }

// storedCol returns stored column s.
func (c *Columns) storedCol(s int) []uint64 { return c.Data[s*c.Words : (s+1)*c.Words] }

// Bit returns z_ij as 0 or 1.
func (c *Columns) Bit(i, j int) uint64 { return c.Data[c.storedAt(j)*c.Words+i/64] >> (i % 64) & 1 }

// wellFormed reports whether the matrix's sizes agree with each other.
func (c *Columns) wellFormed() bool {
	if c == nil || c.N < 1 || c.P < 1 || c.Words != (c.N+63)/64 || len(c.Data) != c.Words*c.Stored() {
		return false
	}
	if c.same == nil {
		return true
	}
	if len(c.same) != c.P {
		return false
	}
	for _, s := range c.same {
		if s < 0 || int(s) >= len(c.owner) {
			return false
		}
	}
	return true
}

// SetRows64 fills samples [base, base+64) (fewer at the end) of every column
// from rows, where rows[r] holds sample base+r packed row-major
// ((P+63)/64 words, bit j%64 of word j/64 is column j). It transposes a
// 64-row stripe so that each column word is written once: for column j,
//
//	word := 0; for r, row := range rows { word |= (row[j>>6] >> (j & 63) & 1) << r }
//
// (the reference loop), 64 columns at a time (transpose64). A stored
// column shared by several columns is filled from the first of them.
func (c *Columns) SetRows64(base int, rows [][]uint64) {
	if base%64 != 0 {
		panic(fmt.Sprintf("ternary: stripe base %d is not a multiple of 64", base))
	}
	if len(rows) > 64 {
		panic(fmt.Sprintf("ternary: a stripe of %d rows, at most 64", len(rows)))
	}
	wi := base / 64
	var block [64]uint64 // the stripe's 64 columns of word cur, transposed
	cur := -1
	for s := range c.Stored() {
		j := s
		if c.owner != nil {
			if j = int(c.owner[s]); j < 0 {
				continue // no column uses it (Select)
			}
		}
		if w := j >> 6; w != cur {
			for r, row := range rows {
				block[r] = row[w]
			}
			clear(block[len(rows):])
			transpose64(&block)
			cur = w
		}
		c.Data[s*c.Words+wi] = block[j&63]
	}
}

// transpose64 transposes the 64×64 bit matrix a, bit c of a[r] being
// element (r, c): afterwards bit r of a[c] is. It swaps the off-diagonal
// blocks of halves, then of quarters within them, and so on down to
// single bits (Warren, Hacker's Delight, §7-3): 6 rounds of 32 word
// operations instead of 4,096 bit moves.
func transpose64(a *[64]uint64) {
	m := uint64(0x00000000ffffffff) // the columns whose bit j is clear
	for j := 32; j != 0; j >>= 1 {
		for k := 0; k < 64; k = (k + j + 1) &^ j {
			// Swap columns c+j of row k with columns c of row k+j.
			t := (a[k]>>j ^ a[k+j]) & m
			a[k+j] ^= t
			a[k] ^= t << j
		}
		m ^= m << (j >> 1)
	}
}

// Subset returns the matrix restricted to the given samples, in that order,
// with the same sharing.
func (c *Columns) Subset(rows []int) *Columns {
	out := &Columns{N: len(rows), P: c.P, Words: (len(rows) + 63) / 64, same: c.same, owner: c.owner}
	out.Data = make([]uint64, out.Words*c.Stored())
	for s := range c.Stored() {
		src, dst := c.Data[s*c.Words:(s+1)*c.Words], out.Data[s*out.Words:(s+1)*out.Words]
		for k, i := range rows {
			dst[k>>6] |= (src[i>>6] >> (i & 63) & 1) << (k & 63)
		}
	}
	return out
}

// Select returns the matrix of the given columns, in that order, sharing c's
// storage (nothing is copied; the stored columns no selected column uses
// stay allocated).
func (c *Columns) Select(cols []int) *Columns {
	same := make([]int32, len(cols))
	for k, j := range cols {
		same[k] = int32(c.storedAt(j))
	}
	owner := make([]int32, c.Stored())
	for s := range owner {
		owner[s] = -1
	}
	for k := range cols {
		if s := same[k]; owner[s] < 0 {
			owner[s] = int32(k)
		}
	}
	return &Columns{N: c.N, P: len(cols), Words: c.Words, Data: c.Data, same: same, owner: owner}
}

// LabelBits packs y ∈ {-1, +1}ⁿ as bits (1 for +1).
func LabelBits(y []int8) []uint64 {
	out := make([]uint64, (len(y)+63)/64)
	for i, v := range y {
		if v > 0 {
			out[i>>6] |= 1 << (i & 63)
		}
	}
	return out
}
