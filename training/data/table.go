package data

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// table reads delimited text (CSV, ';', tab or white space) and the data
// section of ARFF files into a Dataset: it decides whether the first row
// is a header, resolves the label, time, ignored and feature columns
// (docs/DATA.md states the rules), and parses the rows.
type table struct {
	name    string
	format  Format
	delim   rune
	decimal rune // the numbers' decimal mark: '.' or ','
	o       *Options
	rs      records
	queue   []row // rows read ahead (header detection), served before rs

	header     bool
	headerLine int
	names      []string  // header names (nil without a header)
	kinds      []colKind // ARFF attribute types (nil for CSV: all unknown)
	nominal    [][]string
	ncols      int

	label    int   // 0-based
	feats    []int // 0-based file columns of the features, in Dataset order
	featName []string
	times    []timeCol
	combine  bool // times[0] is a date and times[1] a time of day: one instant
	ignore   []Column
	group    int  // 0-based column of the rows' groups (Options.GroupColumn), or -1
	detected bool // the group column was found by its name, not given

	// shortHeader: the header names every column but the first, the row
	// names (R's write.table); names then starts with "" for it.
	shortHeader bool
	rowNames    int      // 0-based column of row names (an unnamed first column), or -1
	rowNumbers  []Column // feature columns left out as the row number
}

// colKind is an ARFF attribute's type.
type colKind int

const (
	kindUnknown colKind = iota // CSV
	kindNumeric
	kindNominal
	kindString
	kindDate
)

func (k colKind) String() string {
	return [...]string{"unknown", "numeric", "nominal", "string", "date"}[k]
}

// timeCol is a resolved time column.
type timeCol struct {
	col int // 0-based
	p   timeParser
}

// row is a record with a way to find its fields' lines.
type row struct {
	f     []string
	lines []int   // per field, for rows read ahead
	rs    records // else: the live reader
}

func (r *row) line(i int) int {
	if r.lines != nil {
		return r.lines[i]
	}
	return r.rs.line(i)
}

// next returns the next row: a queued one, else one from the reader.
func (t *table) next() (row, error) {
	if len(t.queue) > 0 {
		r := t.queue[0]
		t.queue = t.queue[1:]
		return r, nil
	}
	f, err := t.rs.next()
	if err != nil {
		return row{}, err
	}
	return row{f: f, rs: t.rs}, nil
}

// readAhead reads a row from the reader and keeps its own copy, so that it
// survives the reader's next call. ok is false at the end of the input.
func (t *table) readAhead() (r row, ok bool, err error) {
	f, err := t.rs.next()
	if err == io.EOF {
		return row{}, false, nil
	}
	if err != nil {
		return row{}, false, err
	}
	r = row{f: slices.Clone(f), lines: make([]int, len(f))}
	for i := range f {
		r.lines[i] = t.rs.line(i)
	}
	return r, true, nil
}

// errorf returns a *ParseError for column col (0-based; -1: none) of a row.
func (t *table) errorf(r *row, col int, format string, args ...any) error {
	e := &ParseError{File: t.name, Err: fmt.Errorf(format, args...)}
	if col >= 0 {
		e.Column = col + 1
		if col < len(t.names) {
			e.ColumnName = t.names[col]
		}
		if r != nil && col < len(r.f) {
			e.Line = r.line(col)
		}
	}
	if e.Line == 0 && r != nil && len(r.f) > 0 {
		e.Line = r.line(0)
	}
	if e.Line == 0 {
		e.Line = t.headerLine
	}
	return e
}

// readTable reads a delimited text file: rs yields its records.
func readTable(rs records, name string, delim rune, o *Options) (*Dataset, error) {
	t := &table{name: name, format: FormatCSV, delim: delim, o: o, rs: rs}
	first, ok, err := t.readAhead()
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, &ParseError{File: name, Err: errNoData}
	}
	// The second row decides the header and the decimal mark with the
	// first: read it ahead.
	second, haveSecond, err := t.readAhead()
	if err != nil {
		return nil, err
	}
	if haveSecond {
		t.queue = append(t.queue, second)
	}
	t.decimal = o.Decimal
	if t.decimal == 0 {
		t.decimal = '.'
		if delim != ',' && (hasCommaNumber(first.f) || haveSecond && hasCommaNumber(second.f)) {
			t.decimal = ','
		}
	}
	switch o.Header {
	case HeaderYes:
		t.header = true
	case HeaderAuto:
		var r1 []string
		if haveSecond {
			r1 = second.f
			if len(r1) == len(first.f)+1 {
				r1 = r1[1:] // a header that does not name the row names (R's write.table)
			}
		}
		t.header = looksLikeHeader(first.f, r1)
		if !t.header && needsNames(o) {
			return nil, &ParseError{File: name, Line: first.line(0), Err: fmt.Errorf(
				"%w: %s, but the first line does not look like a header row (if it is one, say so: header yes)", ErrNoColumn, namedColumn(o))}
		}
	}
	t.ncols = len(first.f)
	if t.header {
		t.headerLine = first.line(0)
		t.names = make([]string, len(first.f))
		for i, s := range first.f {
			t.names[i] = strings.TrimSpace(s)
		}
	} else {
		t.queue = append([]row{first}, t.queue...)
	}
	return t.read()
}

// looksLikeHeader reports whether r0, the first record, is a header: some
// column is neither a number nor a time in r0 but is one in r1, the second
// record. With no second record, r0 is a header when none of its fields is
// a number or a time.
func looksLikeHeader(r0, r1 []string) bool {
	if r1 == nil {
		for _, s := range r0 {
			if isValue(s) {
				return false
			}
		}
		return true
	}
	for i := range min(len(r0), len(r1)) {
		if !isValue(r0[i]) && isValue(r1[i]) {
			return true
		}
	}
	return false
}

// isValue reports whether s is a value rather than a column's name: a
// missing-value mark, a number (with either decimal mark: a header names
// no column "14,03", and a file read with the wrong mark then fails on its
// first number, saying so, not on its header) or a time.
func isValue(s string) bool {
	s = strings.TrimSpace(s)
	if isMissing(s) || isCommaNumber(s) {
		return true
	}
	_, err := parseValue(s)
	return err == nil || sniffTime(s) != 0
}

// parseNumber parses a feature value of delimited text whose decimal mark
// is decimal ('.' or ','). With a decimal comma, a '.' is refused rather
// than guessed at (it may be a thousands separator: "1.234,5").
func parseNumber(s string, decimal rune) (float32, error) {
	if decimal == ',' {
		if strings.IndexByte(s, '.') >= 0 {
			return 0, errSyntax
		}
		s = strings.Replace(s, ",", ".", 1)
	}
	return parseValue(s)
}

// isCommaNumber reports whether s is a number written with a decimal
// comma ("14,03", "-0,5"): not a number as it is, one with its comma read
// as a point.
func isCommaNumber(s string) bool {
	s = strings.TrimSpace(s)
	if strings.Count(s, ",") != 1 || strings.IndexByte(s, '.') >= 0 {
		return false
	}
	if _, err := parseValue(s); err == nil {
		return false
	}
	_, err := parseNumber(s, ',')
	return err == nil
}

func hasCommaNumber(fields []string) bool { return slices.ContainsFunc(fields, isCommaNumber) }

// needsNames reports whether o refers to a column by name.
func needsNames(o *Options) bool { return namedColumn(o) != "" }

func namedColumn(o *Options) string {
	if o.LabelColumn.Name != "" {
		return fmt.Sprintf("the label column is given by name (%q)", o.LabelColumn.Name)
	}
	for _, c := range o.TimeColumns {
		if c.Name != "" {
			return fmt.Sprintf("time column %q is given by name", c.Name)
		}
	}
	for _, c := range o.Ignore {
		if c.Name != "" {
			return fmt.Sprintf("ignored column %q is given by name", c.Name)
		}
	}
	return ""
}

// read resolves the columns against the first data row and reads all rows.
func (t *table) read() (*Dataset, error) {
	first, err := t.next()
	if err == io.EOF {
		return nil, &ParseError{File: t.name, Line: t.headerLine, Err: errNoData}
	}
	if err != nil {
		return nil, err
	}
	if t.ncols == 0 {
		t.ncols = len(first.f)
	}
	if t.header && t.kinds == nil && len(first.f) == t.ncols+1 {
		// R's write.table names every column but the first, which holds
		// the row names: give it the empty name pandas and write.csv give it.
		t.shortHeader = true
		t.names = append([]string{""}, t.names...)
		t.ncols++
	}
	if len(first.f) != t.ncols {
		return nil, t.errorf(&first, -1, "%d columns, want %d as on line %d", len(first.f), t.ncols, t.headerLine)
	}
	if err := t.resolve(&first); err != nil {
		return nil, err
	}
	return t.rows(first)
}

// col resolves a Column against the header (by name) or the column count
// (by number); what names the column's role for messages.
func (t *table) col(c Column, what string, r *row) (int, error) {
	if c.Name != "" {
		if !t.header {
			return 0, t.errorf(r, -1, "%w: %s %q is given by name, but the file has no header row", ErrNoColumn, what, c.Name)
		}
		i := -1
		for j, n := range t.names {
			if n == c.Name {
				if i >= 0 {
					return 0, t.errorf(nil, -1, "%w: %s %q: columns %d and %d both have that name", ErrColumn, what, c.Name, i+1, j+1)
				}
				i = j
			}
		}
		if i < 0 {
			return 0, t.errorf(nil, -1, "%w: %s: no column named %q%s", ErrNoColumn, what, c.Name, t.nameHint(c.Name))
		}
		return i, nil
	}
	switch {
	case c.Index == -1:
		return t.ncols - 1, nil
	case c.Index >= 1 && c.Index <= t.ncols:
		return c.Index - 1, nil
	}
	return 0, t.errorf(r, -1, "%w: %s %d but the line has %d columns", ErrNoColumn, what, c.Index, t.ncols)
}

// nameHint suggests a header name that differs from want only in case, or
// lists the header.
func (t *table) nameHint(want string) string {
	for _, n := range t.names {
		if strings.EqualFold(n, want) {
			return fmt.Sprintf(" (there is %q: names are case-sensitive)", n)
		}
	}
	list := t.names
	more := ""
	if len(list) > 30 {
		list, more = list[:30], ", …"
	}
	return fmt.Sprintf(" (the header has %s%s)", quoteList(list), more)
}

func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}

// labelNames are the header names that make a column the default label.
var labelNames = []string{"label", "class", "target", "y"}

// resolve decides the role of every column (docs/DATA.md): ignored, label,
// time, feature. first is the first data row.
func (t *table) resolve(first *row) error {
	o := t.o
	role := make([]string, t.ncols) // "" means still free
	ignored := make([]bool, t.ncols)
	for _, c := range o.Ignore {
		i, err := t.col(c, "ignored column", first)
		if err != nil {
			return err
		}
		ignored[i], role[i] = true, "ignored"
		t.ignore = append(t.ignore, t.column(i))
	}
	t.label = -1
	if !o.LabelColumn.IsZero() {
		i, err := t.col(o.LabelColumn, "label column", first)
		if err != nil {
			return err
		}
		if ignored[i] {
			return t.errorf(first, i, "%w: the label column is also ignored", ErrColumn)
		}
		t.label, role[i] = i, "label"
	}
	if err := t.resolveTimes(first, role); err != nil {
		return err
	}
	// An unnamed first column (R's write.csv, pandas' to_csv with its
	// index) holds row names: never a feature, unless given a role above.
	t.rowNames = -1
	if t.header && t.kinds == nil && t.names[0] == "" && role[0] == "" {
		t.rowNames, role[0] = 0, "row names"
	}
	if t.label < 0 {
		if o.Features != nil && t.header {
			// The caller's features are not candidates for the label.
			for i, n := range t.names {
				if role[i] == "" && slices.Contains(o.Features, n) {
					role[i] = "feature"
				}
			}
		}
		t.label = t.defaultLabel(role)
		if t.label < 0 {
			return t.errorf(first, -1, "%w: no column left for the label", ErrColumn)
		}
		role[t.label] = "label"
	}
	// After the label: a label named like a group (a room to be told)
	// stays the label.
	if err := t.resolveGroup(first, role); err != nil {
		return err
	}
	if t.kinds != nil && t.kinds[t.label] != kindNominal && t.kinds[t.label] != kindString && t.kinds[t.label] != kindNumeric {
		return t.errorf(first, t.label, "%w: attribute of type %v cannot be the label", ErrColumn, t.kinds[t.label])
	}
	return t.resolveFeatures(first, role)
}

// groupNames are the header names (any case, "_", "-" and spaces
// dropped, optionally followed by "id") that make a free column the rows'
// group, in order of preference when several do: people first, then
// devices, then places.
var groupNames = []string{"subject", "person", "participant", "patient", "user", "device", "phone", "room", "site", "station", "location"}

// groupName returns the preference of header name n as a group column
// (its index in groupNames), or -1.
func groupName(n string) int {
	n = strings.ToLower(strings.NewReplacer("_", "", "-", "", " ", "").Replace(n))
	n = strings.TrimSuffix(n, "id")
	return slices.Index(groupNames, n)
}

// resolveGroup finds the group column: the one given, else a free column
// whose header name says it holds groups (docs/DATA.md, "Groups").
func (t *table) resolveGroup(first *row, role []string) error {
	o := t.o
	t.group = -1
	switch {
	case o.NoGroup:
	case !o.GroupColumn.IsZero():
		i, err := t.col(o.GroupColumn, "group column", first)
		if err != nil {
			return err
		}
		if role[i] != "" {
			return t.errorf(first, i, "%w: the group column is also the %s column", ErrColumn, role[i])
		}
		t.group, role[i] = i, "group"
	case t.header && o.Features == nil:
		best := len(groupNames)
		for i, n := range t.names {
			if k := groupName(n); k >= 0 && role[i] == "" && k < best {
				best, t.group = k, i
			}
		}
		if t.group >= 0 {
			role[t.group], t.detected = "group", true
		}
	}
	return nil
}

// defaultLabel is the one free column named label, class, target or y (any
// case), else the last free column.
func (t *table) defaultLabel(role []string) int {
	named := -1
	for i, n := range t.names {
		if role[i] == "" && slices.ContainsFunc(labelNames, func(l string) bool { return strings.EqualFold(n, l) }) {
			if named >= 0 {
				named = -2 // more than one: fall back to the last column
				break
			}
			named = i
		}
	}
	if named >= 0 {
		return named
	}
	for i := t.ncols - 1; i >= 0; i-- {
		if role[i] == "" {
			return i
		}
	}
	return -1
}

// resolveTimes finds the time columns: those given, else those detected
// (docs/DATA.md, "Time stamps").
func (t *table) resolveTimes(first *row, role []string) error {
	o := t.o
	add := func(i int) error {
		v := t.field(first, i)
		k := sniffTime(v)
		if t.kinds != nil && t.kinds[i] == kindDate && k == timeSeconds {
			k = 0 // an ARFF date attribute holds dates, not numbers
		}
		if k == 0 {
			return t.errorf(first, i, "%s is not a time (want %s, or seconds)", quote(v), timeFormats)
		}
		t.times = append(t.times, timeCol{col: i, p: timeParser{kind: k}})
		role[i] = "time"
		return nil
	}
	switch {
	case o.NoTime:
	case o.TimeColumns != nil:
		for _, c := range o.TimeColumns {
			i, err := t.col(c, "time column", first)
			if err != nil {
				return err
			}
			if role[i] != "" {
				return t.errorf(first, i, "%w: the time column is also the %s column", ErrColumn, role[i])
			}
			if err := add(i); err != nil {
				return err
			}
		}
		slices.SortFunc(t.times, func(a, b timeCol) int { return a.col - b.col })
	default:
		for i := range t.ncols {
			if role[i] != "" {
				continue
			}
			switch {
			case t.kinds != nil && t.kinds[i] == kindDate,
				t.header && isTimeName(t.names[i]):
				if err := add(i); err != nil {
					return err
				}
			case t.kinds == nil || t.kinds[i] == kindString:
				if k := sniffTime(t.field(first, i)); k != 0 && k != timeSeconds {
					if err := add(i); err != nil {
						return err
					}
				}
			}
		}
	}
	t.combine = len(t.times) >= 2 && t.times[0].p.kind == timeDate && t.times[1].p.kind == timeOfDay
	return nil
}

func (t *table) nameOf(i int) string {
	if i < len(t.names) {
		return t.names[i]
	}
	return ""
}

// column returns the Column for 0-based column i, with its name if any.
func (t *table) column(i int) Column { return Column{Name: t.nameOf(i), Index: i + 1} }

// resolveFeatures picks the feature columns: o.Features by name (or by
// position without a header), else every column without another role.
func (t *table) resolveFeatures(first *row, role []string) error {
	o := t.o
	isTime := func(i int) bool { return role[i] == "time" }
	usable := func(i int) bool {
		return role[i] == "" || role[i] == "feature" || isTime(i) && o.TimeFeatures && t.timeKind(i) == timeSeconds
	}
	if o.Features != nil && t.header {
		for k, name := range o.Features {
			i, err := t.col(Column{Name: name}, fmt.Sprintf("feature %d of %d", k+1, len(o.Features)), first)
			if err != nil {
				return err
			}
			if !usable(i) {
				return t.errorf(first, i, "%w: feature %d of %d is the %s column here", ErrColumn, k+1, len(o.Features), role[i])
			}
			t.feats = append(t.feats, i)
		}
	} else {
		for i := range t.ncols {
			if usable(i) {
				t.feats = append(t.feats, i)
			}
		}
	}
	if len(t.feats) == 0 {
		return t.errorf(first, -1, "%d column: need a label and at least one feature", t.ncols)
	}
	if o.Features != nil && !t.header && len(t.feats) != len(o.Features) {
		return t.errorf(first, -1, "%w: %d feature columns, want %d (the file has no header, so features are matched by position)", ErrColumn, len(t.feats), len(o.Features))
	}
	if o.NumFeatures > 0 && len(t.feats) != o.NumFeatures {
		return t.errorf(first, -1, "%d features, want NumFeatures %d", len(t.feats), o.NumFeatures)
	}
	if t.kinds != nil {
		for _, i := range t.feats {
			// A nominal attribute whose values are all numbers (a day of
			// the week {1,…,7}) is read as the numbers it names; one of
			// words ({a,b,c,d} hazard levels, {W,N} shifts) as the
			// position of each word in its declaration, from 0: the order
			// the file declares, as Weka codes it.
			if t.kinds[i] != kindNumeric && t.kinds[i] != kindNominal {
				return t.errorf(first, i, "%w: attribute is %v, and only numeric and nominal attributes can be features (ignore it, or make it the label)", ErrColumn, t.kinds[i])
			}
		}
	}
	switch {
	case t.header:
		// Every column in use must be found again by its name in the
		// next file (ReadSpec): names must be unique in the header.
		at := make(map[string][]int, len(t.names))
		for i, n := range t.names {
			at[n] = append(at[n], i+1)
		}
		used := append(slices.Clone(t.feats), t.label)
		if t.group >= 0 {
			used = append(used, t.group)
		}
		for _, tc := range t.times {
			used = append(used, tc.col)
		}
		for _, i := range used {
			if n := t.names[i]; n != "" && len(at[n]) > 1 {
				return t.errorf(first, i, "%w: columns %d and %d are both named %q", ErrColumn, at[n][0], at[n][1], n)
			}
		}
		t.featName = make([]string, len(t.feats))
		for k, i := range t.feats {
			if t.names[i] == "" {
				return t.errorf(first, i, "%w: the feature column has no name in the header row (name it, or ignore the column)", ErrColumn)
			}
			t.featName[k] = t.names[i]
		}
	case o.Features != nil:
		t.featName = slices.Clone(o.Features)
	}
	return nil
}

// field returns field i of r, trimmed (and unquoted in ARFF, where values
// may be in '…').
func (t *table) field(r *row, i int) string {
	s := strings.TrimSpace(r.f[i])
	if t.kinds != nil {
		s = unquoteARFF(s)
	}
	return s
}

func (t *table) timeKind(col int) timeKind {
	for _, tc := range t.times {
		if tc.col == col {
			return tc.p.kind
		}
	}
	return 0
}

// rows parses every data row, first being the first.
func (t *table) rows(first row) (*Dataset, error) {
	o := t.o
	d := len(t.feats)
	lab := newLabeler()
	var (
		x     []float32
		y     []int32
		times []int64
	)
	if len(t.times) > 0 {
		times = []int64{}
	}
	missing, unlabelled := 0, 0
	var nominal map[string]bool
	if t.nominal != nil && t.nominal[t.label] != nil {
		nominal = make(map[string]bool)
		for _, v := range t.nominal[t.label] {
			nominal[v] = true
		}
	}
	// codes[k]: feature k is a nominal attribute of words, read as each
	// word's position in its declaration.
	codes := make([]map[string]float32, d)
	if t.kinds != nil {
		for k, c := range t.feats {
			if t.kinds[c] == kindNominal && !numericValues(t.nominal[c]) {
				codes[k] = make(map[string]float32, len(t.nominal[c]))
				for j, v := range t.nominal[c] {
					codes[k][v] = float32(j)
				}
			}
		}
	}
	groups := newLabeler()
	var group []int32
	type instant struct {
		at   int64
		line int
		text string
	}
	latest := map[int32]instant{} // per group (-1: all rows): the latest time read
	// step[k]: feature k has held the row number so far (an integer one
	// more than on the row before); only when the reader picks the
	// features, and never for a time column read as a feature.
	var step []bool
	if o.Features == nil && o.NumFeatures == 0 && !o.KeepRowNumbers {
		step = make([]bool, d)
		for k, c := range t.feats {
			step[k] = t.timeKind(c) == 0
		}
	}
	firstLine := first.line(0)
	r := first
	for read := 0; o.MaxRows == 0 || len(y) < o.MaxRows; read++ {
		n := len(y) // this row's index, if it has a label
		if read > 0 {
			var err error
			if r, err = t.next(); err == io.EOF {
				break
			} else if err != nil {
				return nil, err
			}
			if len(r.f) != t.ncols {
				if t.shortHeader {
					return nil, t.errorf(&r, -1, "%d columns, want %d: a row name and the %d columns named on line %d", len(r.f), t.ncols, t.ncols-1, t.headerLine)
				}
				return nil, t.errorf(&r, -1, "%d columns, want %d as on line %d", len(r.f), t.ncols, t.columnsLine(&first))
			}
		}
		x = grow(x, d, 0)
		for k, c := range t.feats {
			s := strings.TrimSpace(r.f[c])
			if isMissing(s) {
				if o.RefuseMissing {
					return nil, t.errorf(&r, c, "%w: %s (read missing values without --refuse-missing: they take the middle of the feature's range)", ErrMissing, quote(s))
				}
				x = append(x, float32(math.NaN()))
				missing++
				if step != nil {
					step[k] = false
				}
				continue
			}
			var v float32
			var err error
			if codes[k] != nil {
				var ok bool
				if v, ok = codes[k][unquoteARFF(s)]; !ok {
					return nil, t.errorf(&r, c, "%s: not among the attribute's values %s", quote(s), quoteList(t.nominal[c]))
				}
			} else {
				v, err = parseNumber(s, t.decimal)
			}
			if err != nil {
				hint := ""
				switch {
				case t.decimal == '.' && isCommaNumber(s):
					hint = " (a decimal comma? read the file with --decimal ,)"
				case t.decimal == ',' && strings.IndexByte(s, '.') >= 0:
					hint = " (the file's numbers have a decimal comma, so a '.' in a number is not read: a thousands separator? give --decimal . if the point is the decimal mark)"
				case n == 0 && errors.Is(err, errSyntax):
					col := strconv.Itoa(c + 1) // a long name: the number
					if c < len(t.names) && t.names[c] != "" && len(t.names[c]) <= 40 {
						col = strconv.Quote(t.names[c])
					}
					hint = fmt.Sprintf(" (if the column is not a feature, skip it: --ignore-column %s; if it is the label: --label-column %s)", col, col)
				}
				return nil, t.errorf(&r, c, "%v %s%s", err, quote(s), hint)
			}
			if step != nil && step[k] {
				if n == 0 {
					step[k] = v == float32(math.Trunc(float64(v)))
				} else {
					step[k] = v == x[(n-1)*d+k]+1
				}
			}
			x = append(x, v)
		}
		if len(x) > maxValues {
			return nil, t.errorf(&r, -1, "%w", tooLarge(len(y)+1, d))
		}
		label := t.field(&r, t.label)
		if isMissing(label) {
			if o.SkipUnlabelled {
				x = x[:len(x)-d]
				unlabelled++
				continue
			}
			what := "empty label"
			if label != "" {
				what = "missing label " + quote(label)
			}
			return nil, t.errorf(&r, t.label, "%s (a missing-value mark is not a class: give the row its label, remove it, or skip such rows with --skip-unlabelled)", what)
		}
		if nominal != nil && !nominal[label] {
			return nil, t.errorf(&r, t.label, "%w %s: not among the attribute's values %s", ErrUnknownLabel, quote(label), quoteList(t.nominal[t.label]))
		}
		y = append(y, lab.idString(label))
		g := int32(-1)
		if t.group >= 0 {
			name := t.field(&r, t.group)
			if isMissing(name) {
				return nil, t.errorf(&r, t.group, "%w: missing group %s (every row needs its group: the person, device or site it was recorded for)", ErrColumn, quote(name))
			}
			g = groups.idString(name)
			group = append(group, g)
		}
		if len(t.times) > 0 {
			at, text, err := t.instant(&r)
			if err != nil {
				return nil, err
			}
			// Time goes forward over the file, or within each group
			// (rows sorted by station, then date).
			last, seen := latest[g]
			if seen && at < last.at {
				in := ""
				if t.group >= 0 {
					in = " of group " + quote(groups.raw[g])
				}
				return nil, t.errorf(&r, t.times[0].col, "%w: %s is earlier than %s on line %d%s; sort the rows by time, or read the file without time columns (--time-column none)",
					ErrTimeOrder, quote(text), quote(last.text), last.line, in)
			}
			latest[g] = instant{at, r.line(t.times[0].col), text}
			times = append(times, at)
		}
	}
	if step != nil && len(y) >= minRowNumberRows {
		var err error
		if x, d, err = t.dropRowNumbers(x, d, step, firstLine); err != nil {
			return nil, err
		}
	}
	if len(y) == 0 {
		return nil, &ParseError{File: t.name, Line: t.headerLine, Err: fmt.Errorf("%w: every row's label is missing", errNoData)}
	}
	ds := &Dataset{Name: t.name, X: x, N: len(y), D: d, Y: y, Classes: lab.finish(y), Features: t.featName,
		Times: times, Ordered: len(t.times) > 0 || o.Ordered, Missing: missing, Unlabelled: unlabelled}
	if t.group >= 0 {
		ds.Groups, ds.GroupNames = group, groups.raw
	}
	ds.Spec = t.spec(d)
	return ds, nil
}

// minRowNumberRows is how many rows it takes to call a column the row
// number: in fewer, a measurement may step by one by chance.
const minRowNumberRows = 10

// dropRowNumbers removes the feature columns k with step[k] (they hold
// just the row number) from x, whose rows have d values, and returns the
// new x and d. line is the first data row's, for the error when no
// feature would be left.
func (t *table) dropRowNumbers(x []float32, d int, step []bool, line int) ([]float32, int, error) {
	var keep []int
	for k, s := range step {
		if s {
			t.rowNumbers = append(t.rowNumbers, t.column(t.feats[k]))
		} else {
			keep = append(keep, k)
		}
	}
	if len(keep) == d {
		return x, d, nil
	}
	if len(keep) == 0 {
		c := t.feats[0]
		return nil, 0, &ParseError{File: t.name, Line: line, Column: c + 1, ColumnName: t.nameOf(c), Err: fmt.Errorf(
			"%w: the only feature column is the row number (each value one more than the one before), so no feature is left (if it is a measurement, keep it: --keep-row-numbers)", ErrColumn)}
	}
	// Compact in place: row i's kept values move to x[i*len(keep):].
	n := len(x) / d
	for i := range n {
		for j, k := range keep {
			x[i*len(keep)+j] = x[i*d+k]
		}
	}
	feats := make([]int, len(keep))
	var names []string
	if t.featName != nil {
		names = make([]string, len(keep))
	}
	for j, k := range keep {
		feats[j] = t.feats[k]
		if names != nil {
			names[j] = t.featName[k]
		}
	}
	t.feats, t.featName = feats, names
	return x[:n*len(keep)], len(keep), nil
}

// columnsLine is the line that set the column count, for messages.
func (t *table) columnsLine(first *row) int {
	if t.header {
		return t.headerLine
	}
	return first.line(0)
}

// instant parses the row's time columns and returns its instant and the
// text it came from.
func (t *table) instant(r *row) (int64, string, error) {
	var at int64
	var text string
	for k := range t.times {
		tc := &t.times[k]
		s := t.field(r, tc.col)
		v, err := tc.p.parse(s)
		if err != nil {
			if errors.Is(err, errNotTime) {
				return 0, "", t.errorf(r, tc.col, "%s is not a %v like the first row's (want %s)", quote(s), tc.p.kind, timeFormats)
			}
			return 0, "", t.errorf(r, tc.col, "%s: %v", quote(s), err)
		}
		switch {
		case k == 0:
			at, text = v, s
		case k == 1 && t.combine:
			at, text = at+v, text+" "+s
		}
	}
	return at, text, nil
}

// spec records how the table was read.
func (t *table) spec(d int) *ReadSpec {
	s := &ReadSpec{Format: t.format, Header: t.header && t.format == FormatCSV, Label: t.column(t.label),
		TimeFeatures: t.o.TimeFeatures, Features: slices.Clone(t.featName), NumFeatures: d}
	if t.format == FormatCSV {
		s.Delimiter = t.delim
		// A decimal point is recorded only when it was asked for: read
		// again with detection, a file whose first rows hold a comma
		// number outside the features (a label "2,5") would be read with
		// a decimal comma.
		if t.decimal == ',' || t.o.Decimal == '.' {
			s.Decimal = t.decimal
		}
	}
	if !t.header {
		s.Label.Name = ""
	}
	for _, tc := range t.times {
		s.Times = append(s.Times, t.column(tc.col))
	}
	if t.o.Features == nil || !t.header {
		s.Ignore = slices.Clone(t.ignore)
	}
	if t.rowNames >= 0 {
		s.RowNames = t.column(t.rowNames)
	}
	if t.group >= 0 {
		s.Group, s.GroupDetected = t.column(t.group), t.detected
		if !t.header {
			s.Group.Name = ""
		}
	}
	s.RowNumbers = t.rowNumbers
	if !t.header {
		// Read by position, the next file must skip them too.
		s.Ignore = append(s.Ignore, t.rowNumbers...)
	}
	return s
}
