package data

import (
	"bufio"
	"io"
	"unicode/utf8"
)

// readDense parses dense text: one row per line, the same number of
// columns on every line, one of them (opt.LabelColumn) the label and the
// rest numbers. Columns are separated by opt.Separator; by default by
// commas if the first data line has one, else by runs of white space.
// Blank lines and lines starting with '#' are skipped.
func readDense(r *bufio.Reader, name string, o *Options) (*Dataset, error) {
	lr := &lineReader{r: r, name: name}
	lab := newLabeler()
	var (
		x         []float32
		y         []int32
		toks      [][]byte
		sep       []byte // nil: white space
		ncols     int    // columns per line, set by the first data line
		firstLine int
		labelCol  int
	)
	for o.MaxRows == 0 || len(y) < o.MaxRows {
		line, err := lr.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if t := trimSpace(line); len(t) == 0 || t[0] == '#' {
			continue
		}
		if ncols == 0 {
			sep = separator(o.Separator, line)
		}
		if sep == nil {
			toks = fields(toks[:0], line)
		} else {
			toks = splitFields(toks[:0], line, sep)
		}
		if ncols == 0 {
			ncols, firstLine = len(toks), lr.line
			if ncols < 2 {
				return nil, lr.errorf("%d column: need a label and at least one feature", ncols)
			}
			labelCol = o.LabelColumn
			if labelCol == -1 {
				labelCol = ncols - 1
			}
			if labelCol >= ncols {
				return nil, lr.errorf("label column %d but the line has %d columns", labelCol+1, ncols)
			}
			if o.NumFeatures > 0 && ncols-1 != o.NumFeatures {
				return nil, lr.errorf("%d features, want NumFeatures %d", ncols-1, o.NumFeatures)
			}
		}
		if len(toks) != ncols {
			return nil, lr.errorf("%d columns, want %d as on line %d", len(toks), ncols, firstLine)
		}
		x = grow(x, ncols-1, 0)
		for k, t := range toks {
			if k == labelCol {
				if len(t) == 0 {
					return nil, lr.errorf("column %d: empty label", k+1)
				}
				continue
			}
			v, err := parseValue(t)
			if err != nil {
				return nil, lr.errorf("column %d: %v %s", k+1, err, quote(t))
			}
			x = append(x, v)
		}
		if len(x) > maxValues {
			return nil, &ParseError{File: name, Line: lr.line, Err: tooLarge(len(y)+1, ncols-1)}
		}
		y = append(y, lab.id(toks[labelCol]))
	}
	if len(y) == 0 {
		return nil, &ParseError{File: name, Err: errNoData}
	}
	return &Dataset{Name: name, X: x, N: len(y), D: ncols - 1, Y: y, Classes: lab.finish(y)}, nil
}

// separator returns the column separator for opt (0: guess from the first
// data line), or nil for runs of white space.
func separator(opt rune, first []byte) []byte {
	switch opt {
	case 0:
		for _, c := range first {
			if c == ',' {
				return []byte{','}
			}
		}
		return nil
	case ' ':
		return nil
	}
	return utf8.AppendRune(nil, opt)
}
