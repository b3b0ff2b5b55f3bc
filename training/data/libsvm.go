package data

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// libsvmProbeRows is how many lines may pass without one index:value pair
// before a file read as LIBSVM is refused as not being LIBSVM.
const libsvmProbeRows = 1000

// Without opt.NumFeatures, the dense matrix a LIBSVM file makes is
// bounded by what the file holds: past libsvmDenseFree values, at most
// libsvmDensePerValue values per value in the file (a row's label, an
// index:value pair). One line "1 268435455:1" is within maxValues and
// would take 1 GiB; the sparsest standard set, w8a, holds one value in
// 24 of its 49,749 × 300 matrix, a9a one in 8. A file sparser than the
// bound (a bag of words) reads with NumFeatures (--features), which says
// how wide the data is. Tests lower libsvmDenseFree.
var libsvmDenseFree = 1 << 22 // 16 MiB of float32

const libsvmDensePerValue = 64

// readLIBSVM parses LIBSVM/svmlight text:
//
//	label idx:val idx:val ... [# comment]
//
// with 1-based, strictly increasing indices. Blank and comment-only lines
// are skipped and qid:N tokens ignored. D is opt.NumFeatures if set (an
// index beyond it is an error), else the largest index seen, within
// libsvmDensePerValue values per value the file holds. Entries are
// collected sparsely and densified at the end, once D is known.
func readLIBSVM(r *bufio.Reader, name string, o *Options) (*Dataset, error) {
	lr := &lineReader{r: r, name: name}
	lab := newLabeler()
	var (
		y      []int32
		start  = []int{0} // row i's entries are idx/val[start[i]:start[i+1]]
		idx    []int32
		val    []float32
		maxIdx int
		// Where maxIdx is, for an error about the width it makes.
		maxLine, maxCol int
		toks            [][]byte
	)
	for o.MaxRows == 0 || len(y) < o.MaxRows {
		line, err := lr.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if i := bytes.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		toks = fields(toks[:0], line)
		if len(toks) == 0 {
			continue
		}
		label := toks[0]
		if bytes.IndexByte(label, ':') >= 0 {
			return nil, lr.errorf("column 1: missing label before %s", quote(label))
		}
		prev, lastCol := 0, 0
		for k, t := range toks[1:] {
			col := k + 2
			if bytes.HasPrefix(t, []byte("qid:")) {
				continue
			}
			c := bytes.IndexByte(t, ':')
			if c < 0 {
				return nil, lr.errorf("column %d: %s is not index:value", col, quote(t))
			}
			j, err := parseIndex(t[:c])
			switch {
			case errors.Is(err, ErrTooLarge):
				return nil, lr.errorf("column %d: index %s: %w", col, quote(t[:c]), err)
			case err != nil:
				return nil, lr.errorf("column %d: invalid index %s", col, quote(t[:c]))
			case j <= 0:
				return nil, lr.errorf("column %d: index %d: indices start at 1", col, j)
			case j <= prev:
				return nil, lr.errorf("column %d: index %d after %d: indices must increase", col, j, prev)
			case o.NumFeatures > 0 && j > o.NumFeatures:
				return nil, lr.errorf("column %d: index %d beyond NumFeatures %d", col, j, o.NumFeatures)
			}
			v, err := parseValue(t[c+1:])
			if err != nil {
				return nil, lr.errorf("column %d: index %d: %v %s", col, j, err, quote(t[c+1:]))
			}
			prev, lastCol = j, col
			idx = append(idx, int32(j-1))
			val = append(val, v)
		}
		if prev > maxIdx {
			maxIdx, maxLine, maxCol = prev, lr.line, lastCol
		}
		y = append(y, lab.id(label))
		start = append(start, len(idx))
		// Bounded as it reads, not after: a large file that is not
		// LIBSVM (or too large for memory) stops early, saying so.
		switch {
		case len(y) == libsvmProbeRows && maxIdx == 0:
			return nil, lr.errorf("%d lines and not one index:value pair: this is not LIBSVM data (read as libsvm; give the file's format with --format)", libsvmProbeRows)
		case maxIdx > 0 && len(y) > maxValues/maxIdx:
			return nil, &ParseError{File: name, Line: lr.line, Err: fmt.Errorf("%w (read as libsvm)", tooLarge(len(y), maxIdx))}
		}
	}
	n, d := len(y), maxIdx
	if o.NumFeatures > 0 {
		d = o.NumFeatures
	}
	if n == 0 {
		return nil, &ParseError{File: name, Err: errNoData}
	}
	if d > 0 && n > maxValues/d {
		return nil, &ParseError{File: name, Err: tooLarge(n, d)}
	}
	if held := n + len(idx); o.NumFeatures == 0 && n*d > libsvmDenseFree && n*d > libsvmDensePerValue*held {
		return nil, &ParseError{File: name, Line: maxLine, Column: maxCol, Err: fmt.Errorf(
			"%w: index %d makes %d row%s × %d features (%s as float32) of the %d values the file holds (%d row%s, %d index:value pair%s); if the data has %d features, give --features %d (read as libsvm)",
			ErrTooLarge, d, n, plural(n), d, floatBytes(n*d), held, n, plural(n), len(idx), plural(len(idx)), d, d)}
	}
	x := make([]float32, n*d)
	for i := range n {
		row := x[i*d : (i+1)*d]
		for e := start[i]; e < start[i+1]; e++ {
			row[idx[e]] = val[e]
		}
	}
	return &Dataset{Name: name, X: x, N: n, D: d, Y: y, Classes: lab.finish(y),
		Spec: &ReadSpec{Format: FormatLIBSVM, NumFeatures: d}}, nil
}

// floatBytes formats the size of n float32 values: "458 MiB", "1.0 GiB".
func floatBytes(n int) string {
	b := 4 * float64(n)
	if b >= 1023.5*(1<<20) {
		return fmt.Sprintf("%.1f GiB", b/(1<<30))
	}
	return fmt.Sprintf("%.0f MiB", b/(1<<20))
}
