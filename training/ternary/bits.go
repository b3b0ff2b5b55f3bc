package ternary

import "fmt"

// Columns is an n×p binary matrix stored column-major as packed bits, the
// layout the coordinate descent streams through: column j is
// Data[j*Words:(j+1)*Words], bit i%64 of word i/64 is sample i, 1 meaning +1.
// Bits past N in the last word of a column are 0.
type Columns struct {
	N, P  int
	Words int // (N+63)/64
	Data  []uint64
}

// NewColumns allocates an all -1 n×p matrix.
func NewColumns(n, p int) *Columns {
	w := (n + 63) / 64
	return &Columns{N: n, P: p, Words: w, Data: make([]uint64, w*p)}
}

// Col returns column j.
func (c *Columns) Col(j int) []uint64 { return c.Data[j*c.Words : (j+1)*c.Words] }

// Bit returns z_ij as 0 or 1.
func (c *Columns) Bit(i, j int) uint64 { return c.Data[j*c.Words+i/64] >> (i % 64) & 1 }

// SetRows64 fills samples [base, base+64) (fewer at the end) of every column
// from rows, where rows[r] holds sample base+r packed row-major
// ((P+63)/64 words, bit j%64 of word j/64 is column j). It transposes a
// 64-row stripe so that each column word is written once.
func (c *Columns) SetRows64(base int, rows [][]uint64) {
	if base%64 != 0 {
		panic(fmt.Sprintf("ternary: stripe base %d is not a multiple of 64", base))
	}
	wi := base / 64
	for j := range c.P {
		var word uint64
		for r, row := range rows {
			word |= (row[j>>6] >> (j & 63) & 1) << r
		}
		c.Data[j*c.Words+wi] = word
	}
}

// Subset returns the matrix restricted to the given samples, in that order.
func (c *Columns) Subset(rows []int) *Columns {
	out := NewColumns(len(rows), c.P)
	for j := range c.P {
		src, dst := c.Col(j), out.Col(j)
		for k, i := range rows {
			dst[k>>6] |= (src[i>>6] >> (i & 63) & 1) << (k & 63)
		}
	}
	return out
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
