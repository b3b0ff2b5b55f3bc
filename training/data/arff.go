package data

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strings"
)

// readARFF reads a Weka ARFF file: @RELATION, @ATTRIBUTE lines (numeric,
// real, integer, nominal {a,b}, string, date) and dense @DATA rows,
// comma-separated, '%' comments, LF or CRLF. Numeric attributes are the
// features, under their names; the label is chosen as in CSV files (by
// default the attribute named label, class, target or y, else the last);
// date attributes are time columns. Sparse rows ({index value, …}) and
// relational attributes are not supported.
func readARFF(r *bufio.Reader, name string, o *Options) (*Dataset, error) {
	lr := &lineReader{r: r, name: name}
	t := &table{name: name, format: FormatARFF, delim: ',', o: o, header: true}
	relation := false
	seen := map[string]int{}
	for {
		line, err := lr.next()
		if err == io.EOF {
			return nil, &ParseError{File: name, Line: lr.line, Err: fmt.Errorf("no @DATA line")}
		}
		if err != nil {
			return nil, err
		}
		line = trimSpace(line)
		if len(line) == 0 || line[0] == '%' {
			continue
		}
		kw, rest := line, []byte(nil)
		if i := bytes.IndexFunc(line, func(r rune) bool { return r == ' ' || r == '\t' }); i >= 0 {
			kw, rest = line[:i], trimSpace(line[i+1:])
		}
		switch strings.ToLower(string(kw)) {
		case "@relation":
			if relation {
				return nil, lr.errorf("a second @RELATION")
			}
			relation = true
			continue
		case "@attribute":
			if !relation {
				return nil, lr.errorf("@ATTRIBUTE before @RELATION")
			}
			n, kind, values, err := parseAttribute(rest)
			if err != nil {
				return nil, lr.errorf("attribute %d: %v", len(t.names)+1, err)
			}
			if j, dup := seen[n]; dup {
				return nil, lr.errorf("%v: attributes %d and %d are both named %q", ErrColumn, j+1, len(t.names)+1, n)
			}
			if len(t.names) >= maxValues {
				return nil, lr.errorf("%w: more than %d attributes", ErrTooLarge, maxValues)
			}
			seen[n] = len(t.names)
			t.names = append(t.names, n)
			t.kinds = append(t.kinds, kind)
			t.nominal = append(t.nominal, values)
			continue
		case "@data":
			if len(t.names) == 0 {
				return nil, lr.errorf("@DATA before any @ATTRIBUTE")
			}
		default:
			return nil, lr.errorf("%s where @RELATION, @ATTRIBUTE or @DATA was expected", quote(kw))
		}
		break
	}
	t.headerLine = lr.line
	t.ncols = len(t.names)
	t.rs = &arffRecords{newCSVRecords(r, name, ',', '%', lr.line)}
	return t.read()
}

// arffRecords refuses sparse rows, which would otherwise be misread.
type arffRecords struct{ *csvRecords }

func (a *arffRecords) next() ([]string, error) {
	rec, err := a.csvRecords.next()
	if err == nil && strings.HasPrefix(strings.TrimSpace(rec[0]), "{") {
		return nil, &ParseError{File: a.name, Line: a.line(0), Err: fmt.Errorf("sparse ARFF rows ({index value, …}) are not supported")}
	}
	return rec, err
}

// parseAttribute parses the rest of an @ATTRIBUTE line: a name (quoted
// with ' or " if it has spaces) and a type.
func parseAttribute(b []byte) (name string, kind colKind, values []string, err error) {
	s := string(b)
	if s == "" {
		return "", 0, nil, fmt.Errorf("no name")
	}
	if q := s[0]; q == '\'' || q == '"' {
		end := strings.IndexByte(s[1:], q)
		if end < 0 {
			return "", 0, nil, fmt.Errorf("unterminated quoted name")
		}
		name, s = s[1:1+end], s[2+end:]
	} else {
		end := strings.IndexAny(s, " \t{")
		if end < 0 {
			return "", 0, nil, fmt.Errorf("attribute %q has no type", s)
		}
		name, s = s[:end], s[end:]
	}
	if name == "" {
		return "", 0, nil, fmt.Errorf("empty name")
	}
	s = strings.TrimSpace(s)
	typ := strings.ToLower(s)
	if i := strings.IndexAny(typ, " \t"); i >= 0 {
		typ = typ[:i]
	}
	switch {
	case typ == "numeric" || typ == "real" || typ == "integer":
		return name, kindNumeric, nil, nil
	case typ == "string":
		return name, kindString, nil, nil
	case typ == "date":
		return name, kindDate, nil, nil
	case strings.HasPrefix(s, "{"):
		if !strings.HasSuffix(s, "}") {
			return "", 0, nil, fmt.Errorf("%q: nominal values without a closing }", name)
		}
		for _, v := range strings.Split(s[1:len(s)-1], ",") {
			if v = unquoteARFF(strings.TrimSpace(v)); v != "" {
				values = append(values, v)
			}
		}
		if len(values) == 0 {
			return "", 0, nil, fmt.Errorf("%q: no nominal values", name)
		}
		return name, kindNominal, values, nil
	case typ == "":
		return "", 0, nil, fmt.Errorf("%q has no type", name)
	}
	return "", 0, nil, fmt.Errorf("%q: type %s is not supported (numeric, real, integer, string, date or {nominal values})", name, quote(typ))
}

// unquoteARFF removes the single or double quotes around an ARFF value.
func unquoteARFF(s string) string {
	if len(s) >= 2 && (s[0] == '\'' || s[0] == '"') && s[len(s)-1] == s[0] {
		return s[1 : len(s)-1]
	}
	return s
}

// numericValues reports whether every nominal value is a number.
func numericValues(values []string) bool {
	for _, v := range values {
		if _, err := parseValue(v); err != nil {
			return false
		}
	}
	return len(values) > 0
}
