package data

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// ReadSpec records how a file was read: enough to read another file of the
// same kind (a test set, the next day's log) the same way, selecting the
// feature columns by name. Every loader sets Dataset.Spec. Its text form
// (String, ParseReadSpec) is what a model bundle stores, so that
// `tritctl eval model.trit test.csv` needs no flags.
//
// Columns (Label, Times, Ignore) are by name when the file has a header,
// else by 1-based position; a reader fills in both (Column), the text form
// keeps the name when there is one.
type ReadSpec struct {
	Format       Format   // FormatCSV, FormatARFF, FormatLIBSVM or FormatIDX
	Delimiter    rune     // CSV: ',', ';', tab, …, or ' ' for runs of white space
	Decimal      rune     // CSV: ',' when the numbers have a decimal comma, '.' when a point was asked for, else 0 (detect)
	Header       bool     // CSV: the first row names the columns (ARFF files always name them)
	Label        Column   // CSV/ARFF: the label column
	Times        []Column // CSV/ARFF: the time columns, in file order; nil: none
	TimeFeatures bool     // numeric time columns are features too (Options.TimeFeatures)
	Ignore       []Column // CSV/ARFF: columns skipped on request (kept only for positional reads)
	Features     []string // the feature columns' names in order; nil: by position
	NumFeatures  int      // the number of features, D

	// What the reader left out on its own, for people (Describe); not in
	// the text form, because the next file's reader finds them again (by
	// the header) or they are also in Ignore (without a header).
	RowNames   Column   // CSV: the unnamed first column read as row names (R, pandas); zero: none
	RowNumbers []Column // columns left out because they hold just the row number (Options.KeepRowNumbers)
	// Group is the column of the rows' groups (Options.GroupColumn), not a
	// feature; zero: none.
	Group Column
	// GroupDetected: the group column was found by its header name, not
	// given (for people; not in the text form).
	GroupDetected bool
}

// Options returns the Options that read a file as s says: with Features
// set, the feature columns are found by name, so a file with its columns
// in another order, or with extra columns, reads the same.
func (s *ReadSpec) Options() *Options {
	// The spec lists the columns to read (by name, or by position with
	// Ignore): nothing more is left out as a row number.
	o := &Options{Format: s.Format, NumFeatures: s.NumFeatures, Delimiter: s.Delimiter, Decimal: s.Decimal,
		TimeFeatures: s.TimeFeatures, Features: slices.Clone(s.Features), KeepRowNumbers: true}
	switch s.Format {
	case FormatCSV, FormatARFF:
		o.LabelColumn = s.Label
		if s.Label.Name != "" {
			o.LabelColumn.Index = 0
		}
		o.Header = HeaderNo
		if s.Header {
			o.Header = HeaderYes
		}
		o.NoTime = len(s.Times) == 0
		for _, c := range s.Times {
			o.TimeColumns = append(o.TimeColumns, byNameOrIndex(c))
		}
		o.NoGroup = s.Group.IsZero()
		if !o.NoGroup {
			o.GroupColumn = byNameOrIndex(s.Group)
		}
		if s.Features == nil {
			for _, c := range s.Ignore {
				o.Ignore = append(o.Ignore, byNameOrIndex(c))
			}
		}
	case FormatIDX:
		o.NumFeatures = 0 // the header says
	}
	return o
}

func byNameOrIndex(c Column) Column {
	if c.Name != "" {
		return Column{Name: c.Name}
	}
	return c
}

// LoadSpec reads the file at path as spec says (see ReadSpec.Options).
func LoadSpec(path string, spec *ReadSpec) (*Dataset, error) {
	return Load(path, spec.Options())
}

// Describe returns a one-line account of s for people, e.g.
//
//	csv, delimiter ';', header row; label column 19 "Room_Occupancy_Count"; time columns 1 "Date" + 2 "Time"; 16 features
func (s *ReadSpec) Describe() string {
	var b strings.Builder
	b.WriteString(s.Format.String())
	if s.Format == FormatCSV {
		if s.Delimiter == ' ' {
			b.WriteString(", columns separated by white space")
		} else {
			fmt.Fprintf(&b, ", delimiter %q", s.Delimiter)
		}
		if s.Decimal == ',' {
			b.WriteString(", decimal comma")
		}
		if s.Header {
			b.WriteString(", header row")
		} else {
			b.WriteString(", no header row")
		}
	}
	if !s.Label.IsZero() {
		fmt.Fprintf(&b, "; label %s", s.Label.describe())
	}
	if len(s.Times) > 0 {
		parts := make([]string, len(s.Times))
		for i, c := range s.Times {
			parts[i] = strings.TrimPrefix(c.describe(), "column ")
		}
		fmt.Fprintf(&b, "; time column%s %s", plural(len(parts)), strings.Join(parts, " + "))
	}
	if !s.RowNames.IsZero() {
		fmt.Fprintf(&b, "; row names in %s (not a feature)", s.RowNames.describe())
	}
	if !s.Group.IsZero() {
		how := ""
		if s.GroupDetected {
			how = ", found by its name"
		}
		fmt.Fprintf(&b, "; groups in %s (not a feature%s)", s.Group.describe(), how)
	}
	var parts []string
	for _, c := range s.Ignore {
		if !slices.Contains(s.RowNumbers, c) {
			parts = append(parts, strings.TrimPrefix(c.describe(), "column "))
		}
	}
	if len(parts) > 0 {
		fmt.Fprintf(&b, "; ignored column%s %s", plural(len(parts)), strings.Join(parts, ", "))
	}
	for _, c := range s.RowNumbers {
		fmt.Fprintf(&b, "; %s is the row number: left out", c.describe())
	}
	fmt.Fprintf(&b, "; %d feature%s", s.NumFeatures, plural(s.NumFeatures))
	if s.Features == nil && (s.Format == FormatCSV || s.Format == FormatARFF) {
		b.WriteString(" (unnamed: matched by position)")
	}
	return b.String()
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// String returns the compact text form of s, which ParseReadSpec reads
// back: space-separated key=value pairs in a fixed order, keys whose value
// is the zero value left out. Names are Go-quoted strings, positions
// decimal numbers (or last), the delimiter a Go rune literal, lists
// comma-separated:
//
//	format=csv delimiter=';' header=yes label="Room_Occupancy_Count" time="Date","Time" features="S1_Temp","S2_Temp" d=2
func (s *ReadSpec) String() string {
	var b strings.Builder
	b.WriteString("format=")
	b.WriteString(s.Format.String())
	if s.Delimiter != 0 {
		b.WriteString(" delimiter=")
		b.WriteString(strconv.QuoteRune(s.Delimiter))
	}
	if s.Decimal != 0 {
		b.WriteString(" decimal=")
		b.WriteString(strconv.QuoteRune(s.Decimal))
	}
	if s.Header {
		b.WriteString(" header=yes")
	}
	if !s.Label.IsZero() {
		b.WriteString(" label=")
		writeColumn(&b, s.Label)
	}
	writeColumns(&b, "time", s.Times)
	if s.TimeFeatures {
		b.WriteString(" time-features=yes")
	}
	writeColumns(&b, "ignore", s.Ignore)
	if !s.Group.IsZero() {
		b.WriteString(" group=")
		writeColumn(&b, s.Group)
	}
	if s.Features != nil {
		b.WriteString(" features=")
		for i, f := range s.Features {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Quote(f))
		}
	}
	if s.NumFeatures != 0 {
		fmt.Fprintf(&b, " d=%d", s.NumFeatures)
	}
	return b.String()
}

func writeColumn(b *strings.Builder, c Column) {
	switch {
	case c.Name != "":
		b.WriteString(strconv.Quote(c.Name))
	case c.Index == -1:
		b.WriteString("last")
	default:
		b.WriteString(strconv.Itoa(c.Index))
	}
}

func writeColumns(b *strings.Builder, key string, cols []Column) {
	if len(cols) == 0 {
		return
	}
	b.WriteString(" " + key + "=")
	for i, c := range cols {
		if i > 0 {
			b.WriteByte(',')
		}
		writeColumn(b, c)
	}
}

// readSpecKeys is the order of keys in the text form.
var readSpecKeys = []string{"format", "delimiter", "decimal", "header", "label", "time", "time-features", "ignore", "group", "features", "d"}

// ParseReadSpec parses the text form written by ReadSpec.String. Keys must
// appear at most once, in String's order; an unknown key is an error (a
// spec from a newer version is refused rather than misread). Errors wrap
// ErrReadSpec and give the byte offset.
func ParseReadSpec(text string) (*ReadSpec, error) {
	s := &ReadSpec{}
	p := &specParser{s: text}
	next := 0 // index into readSpecKeys: keys must come in order
	for p.i < len(p.s) {
		if p.i > 0 {
			if p.s[p.i] != ' ' {
				return nil, p.errorf("want a space before the next key")
			}
			p.i++
		}
		start := p.i
		eq := strings.IndexByte(p.s[p.i:], '=')
		if eq < 0 {
			return nil, p.errorf("want key=value")
		}
		key := p.s[p.i : p.i+eq]
		k := slices.Index(readSpecKeys, key)
		switch {
		case k < 0:
			return nil, p.errorf("unknown key %q", key)
		case k < next:
			return nil, p.errorf("key %q repeated or out of order", key)
		}
		next = k + 1
		p.i += eq + 1
		var err error
		switch key {
		case "format":
			var f Format
			word := p.word()
			if f, err = ParseFormat(word); err == nil && (f == FormatAuto || word != f.String()) {
				err = fmt.Errorf("format %q", word)
			}
			s.Format = f
		case "delimiter":
			s.Delimiter, err = p.rune()
			if err == nil && (s.Delimiter == 0 || checkDelimiter(s.Delimiter) != nil) {
				err = fmt.Errorf("delimiter %q", s.Delimiter)
			}
		case "decimal":
			s.Decimal, err = p.rune()
			if err == nil && s.Decimal != ',' && s.Decimal != '.' {
				err = fmt.Errorf("decimal %q: want ',' or '.'", s.Decimal)
			}
		case "header":
			err = p.yes()
			s.Header = true
		case "label":
			s.Label, err = p.column()
		case "time":
			s.Times, err = p.columns()
		case "time-features":
			err = p.yes()
			s.TimeFeatures = true
		case "ignore":
			s.Ignore, err = p.columns()
		case "group":
			s.Group, err = p.column()
		case "features":
			s.Features = []string{}
			for {
				var f string
				if f, err = p.quoted(); err != nil {
					break
				}
				if f == "" || slices.Contains(s.Features, f) {
					err = fmt.Errorf("feature name %q empty or repeated", f)
					break
				}
				s.Features = append(s.Features, f)
				if !p.comma() {
					break
				}
			}
		case "d":
			var n int
			n, err = strconv.Atoi(p.word())
			if err == nil && (n <= 0 || n > maxValues) {
				err = fmt.Errorf("d=%d out of range", n)
			}
			s.NumFeatures = n
		}
		if err != nil {
			p.i = start
			return nil, p.errorf("%s: %v", key, err)
		}
	}
	switch {
	case s.Format == FormatAuto:
		return nil, p.errorf("no format")
	case s.Features != nil && len(s.Features) != s.NumFeatures:
		return nil, p.errorf("%d feature names for d=%d", len(s.Features), s.NumFeatures)
	}
	return s, nil
}

type specParser struct {
	s string
	i int
}

func (p *specParser) errorf(format string, args ...any) error {
	return fmt.Errorf("%w: byte %d: %s", ErrReadSpec, p.i, fmt.Sprintf(format, args...))
}

// word returns the bare text up to the next ',' or ' '.
func (p *specParser) word() string {
	j := p.i
	for j < len(p.s) && p.s[j] != ' ' && p.s[j] != ',' {
		j++
	}
	w := p.s[p.i:j]
	p.i = j
	return w
}

func (p *specParser) comma() bool {
	if p.i < len(p.s) && p.s[p.i] == ',' {
		p.i++
		return true
	}
	return false
}

func (p *specParser) yes() error {
	if w := p.word(); w != "yes" {
		return fmt.Errorf("%q, want yes", w)
	}
	return nil
}

func (p *specParser) quoted() (string, error) {
	q, err := strconv.QuotedPrefix(p.s[p.i:])
	if err != nil || q[0] != '"' {
		return "", fmt.Errorf("want a quoted name")
	}
	v, err := strconv.Unquote(q)
	if err != nil {
		return "", err
	}
	p.i += len(q)
	return v, nil
}

func (p *specParser) rune() (rune, error) {
	q, err := strconv.QuotedPrefix(p.s[p.i:])
	if err != nil || q[0] != '\'' {
		return 0, fmt.Errorf("want a rune literal such as ','")
	}
	v, err := strconv.Unquote(q)
	if err != nil {
		return 0, err
	}
	p.i += len(q)
	r := []rune(v)
	if len(r) != 1 {
		return 0, fmt.Errorf("want one character")
	}
	return r[0], nil
}

func (p *specParser) column() (Column, error) {
	if p.i < len(p.s) && p.s[p.i] == '"' {
		n, err := p.quoted()
		if err == nil && n == "" {
			err = fmt.Errorf("empty column name")
		}
		return Column{Name: n}, err
	}
	w := p.word()
	if w == "last" {
		return Column{Index: -1}, nil
	}
	n, err := strconv.Atoi(w)
	if err != nil || n < 1 || strconv.Itoa(n) != w {
		return Column{}, fmt.Errorf("column %q: want a quoted name, a number from 1, or last", w)
	}
	return Column{Index: n}, nil
}

func (p *specParser) columns() ([]Column, error) {
	var cols []Column
	for {
		c, err := p.column()
		if err != nil {
			return nil, err
		}
		cols = append(cols, c)
		if !p.comma() {
			return cols, nil
		}
	}
}
