package data

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Format selects the parser for an input file.
type Format int

// Supported formats.
const (
	FormatAuto   Format = iota // detect: IDX by name or magic, ARFF by @RELATION, LIBSVM by index:value tokens, else CSV
	FormatLIBSVM               // LIBSVM/svmlight sparse text
	FormatIDX                  // MNIST IDX images (uint8) plus a labels file
	FormatCSV                  // delimited text, one row per line: ',', ';', tab or white space; optional header row
	FormatARFF                 // Weka ARFF (dense @DATA rows)
)

// FormatDense is FormatCSV under its earlier name (dense text).
const FormatDense = FormatCSV

// String returns the format's name, as ParseFormat reads it.
func (f Format) String() string {
	switch f {
	case FormatAuto:
		return "auto"
	case FormatLIBSVM:
		return "libsvm"
	case FormatIDX:
		return "idx"
	case FormatCSV:
		return "csv"
	case FormatARFF:
		return "arff"
	}
	return fmt.Sprintf("Format(%d)", int(f))
}

// ParseFormat parses a format name: auto, libsvm, idx, csv (or dense) or
// arff.
func ParseFormat(s string) (Format, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "auto":
		return FormatAuto, nil
	case "libsvm", "svmlight":
		return FormatLIBSVM, nil
	case "idx":
		return FormatIDX, nil
	case "csv", "dense":
		return FormatCSV, nil
	case "arff":
		return FormatARFF, nil
	}
	return 0, fmt.Errorf("%w: format %q: want auto, libsvm, idx, csv or arff", ErrOptions, s)
}

// Options controls loading. A nil *Options means the zero value, which
// means defaults throughout. Columns are numbered from 1 (see Column).
// docs/DATA.md states the rules for headers, labels and time stamps.
type Options struct {
	Format Format
	// NumFeatures: LIBSVM: force D (a test file must match its training
	// file, or a file sparser than 1 value in 64 of its dense matrix,
	// docs/DATA.md "Sparse files"); 0 = the largest index seen.
	// CSV/ARFF: if > 0, the number of feature columns must be this.
	NumFeatures int

	// The options below apply to CSV and (except Header and Delimiter)
	// ARFF.

	// Header says whether the first row names the columns; HeaderAuto
	// detects it.
	Header Header
	// Delimiter separates the columns: 0 detects ',', ';' or tab from the
	// first lines (else runs of white space); ' ' means runs of white
	// space.
	Delimiter rune
	// Decimal is the decimal mark of the numbers in delimited text: '.',
	// ',' (what spreadsheets in much of Europe write, with ';' between
	// the columns), or 0 to detect: a decimal comma when the delimiter
	// is not ',' and the first data rows hold a number written with one
	// ("14,03"). A comma-separated file's decimal commas (quoted fields)
	// are read only when Decimal is ','.
	Decimal rune
	// LabelColumn is the label's column. Zero: the one column named label,
	// class, target or y (any case), else the last column that is neither
	// ignored nor a time column.
	LabelColumn Column
	// TimeColumns are the time-stamp columns, in any order; nil detects
	// them (by header name or by value). They order the rows and are not
	// features.
	TimeColumns []Column
	// NoTime: no time columns, neither given nor detected.
	NoTime bool
	// TimeFeatures makes time columns that hold numbers (seconds) features
	// as well.
	TimeFeatures bool
	// Ignore lists columns to skip.
	Ignore []Column
	// Features, if non-nil, are the feature columns to read, by header
	// name and in this order (a model's features): other columns are
	// skipped, a missing one is an error. In a file without a header the
	// feature columns are taken by position and must be len(Features).
	Features []string
	// Ordered says the rows are in time order even without a time column
	// (the caller knows it); it sets Dataset.Ordered.
	Ordered bool
	// Shuffled says the rows are independent samples in no particular
	// order (not a recording); it sets Dataset.Shuffled. Not with Ordered.
	Shuffled bool
	// RefuseMissing makes a missing feature value (an empty CSV or ARFF
	// field, "?", "NA", "N/A", "NaN", "nan" or "null") an error wrapping
	// ErrMissing; by default it is read as NaN and counted
	// (Dataset.Missing). A missing label is always an error.
	RefuseMissing bool
	// KeepRowNumbers keeps a feature column that holds just the row
	// number (integers, each one more than the one before, over at least
	// 10 rows: an index column R or pandas wrote) as a feature. By default
	// such a column is left out and listed in ReadSpec.RowNumbers. Only
	// when the reader chooses the features (Features nil, NumFeatures 0).
	KeepRowNumbers bool
	// GroupColumn is the column that names each row's group: the person,
	// device, room or site it was recorded for (Dataset.Groups). It is
	// not a feature: a model must carry to groups it has not seen, so
	// training validates by leaving groups out. Zero: a free column whose
	// header name says it is a group (user, subject, person, participant,
	// patient, device, phone, room, site, station, location, each
	// optionally followed by "id", any case) is used, unless NoGroup.
	GroupColumn Column
	// NoGroup: no group column, neither given nor detected.
	NoGroup bool
	// SkipUnlabelled drops rows whose label is missing (empty, "?", "NA",
	// "NaN", "null" …) and counts them (Dataset.Unlabelled); by default
	// such a row is an error, since a missing-value mark read as a label
	// would become a class of its own.
	SkipUnlabelled bool

	Labels  string // IDX: path of the labels file that goes with an images file (derived by IDXLabelsPath if empty)
	MaxRows int    // 0 = all; stop after this many rows (for quick runs / subsets)
}

func (o *Options) check() error {
	switch {
	case o.Format < FormatAuto || o.Format > FormatARFF:
		return fmt.Errorf("%w: unknown format %v", ErrOptions, o.Format)
	case o.NumFeatures < 0:
		return fmt.Errorf("%w: NumFeatures %d < 0", ErrOptions, o.NumFeatures)
	case o.NumFeatures > maxValues:
		return fmt.Errorf("%w: NumFeatures %d", ErrTooLarge, o.NumFeatures)
	case o.Header < HeaderAuto || o.Header > HeaderNo:
		return fmt.Errorf("%w: unknown header mode %v", ErrOptions, o.Header)
	case o.MaxRows < 0:
		return fmt.Errorf("%w: MaxRows %d < 0", ErrOptions, o.MaxRows)
	case o.NoTime && len(o.TimeColumns) > 0:
		return fmt.Errorf("%w: NoTime with %d time columns", ErrOptions, len(o.TimeColumns))
	case o.Ordered && o.Shuffled:
		return fmt.Errorf("%w: rows both in time order and shuffled", ErrOptions)
	case o.NoGroup && !o.GroupColumn.IsZero():
		return fmt.Errorf("%w: NoGroup with a group column", ErrOptions)
	}
	if err := checkDelimiter(o.Delimiter); err != nil {
		return err
	}
	if o.Decimal != 0 && o.Decimal != '.' && o.Decimal != ',' {
		return fmt.Errorf("%w: decimal mark %q: want '.' or ','", ErrOptions, o.Decimal)
	}
	for _, c := range append(append([]Column{o.LabelColumn, o.GroupColumn}, o.TimeColumns...), o.Ignore...) {
		if err := c.check(); err != nil {
			return err
		}
	}
	for i, c := range o.TimeColumns {
		if c.IsZero() {
			return fmt.Errorf("%w: time column %d of %d is empty", ErrOptions, i+1, len(o.TimeColumns))
		}
	}
	for i, c := range o.Ignore {
		if c.IsZero() {
			return fmt.Errorf("%w: ignored column %d of %d is empty", ErrOptions, i+1, len(o.Ignore))
		}
	}
	seen := make(map[string]bool, len(o.Features))
	for i, f := range o.Features {
		if f == "" || seen[f] {
			return fmt.Errorf("%w: feature %d of %d: empty or repeated name %q", ErrOptions, i+1, len(o.Features), f)
		}
		seen[f] = true
	}
	return nil
}

func options(opt *Options) (*Options, error) {
	o := Options{}
	if opt != nil {
		o = *opt
	}
	return &o, o.check()
}

// Load reads the dataset in the file at path, decompressing it if it is
// gzip, bzip2 or xz. An IDX images file is read together with its labels
// file (opt.Labels, or IDXLabelsPath(path)). The dataset is named after the
// file's base name.
func Load(path string, opt *Options) (*Dataset, error) {
	o, err := options(opt)
	if err != nil {
		return nil, err
	}
	src, err := open(path)
	if err != nil {
		return nil, err
	}
	defer src.close()
	format := o.Format
	if format == FormatAuto {
		format = sniff(src.name, src.r, o.Delimiter)
	}
	if format != FormatIDX {
		return read(src.r, src.name, format, o)
	}
	lpath := o.Labels
	if lpath == "" {
		lpath = IDXLabelsPath(path)
	}
	lsrc, err := open(lpath)
	if err != nil {
		return nil, err
	}
	defer lsrc.close()
	ds, err := readIDX(src, lsrc, o)
	if err == nil {
		ds.Ordered, ds.Shuffled = ds.Ordered || o.Ordered, o.Shuffled
	}
	return ds, err
}

// source is an opened, possibly compressed input.
type source struct {
	r      *bufio.Reader // decompressed bytes
	name   string        // base name, for messages
	size   int64         // number of bytes r yields if known (not compressed), else -1
	stored int64         // bytes on disk, or -1 if unknown
	close  func()
}

// open opens a possibly compressed file.
func open(path string) (*source, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	src := &source{name: filepath.Base(path), size: -1, stored: fi.Size()}
	raw := bufio.NewReaderSize(f, bufSize)
	r, stop, err := decompress(raw, src.name)
	if err != nil {
		f.Close()
		return nil, err
	}
	src.r = r
	src.close = func() {
		stop()
		f.Close()
	}
	if r == raw {
		src.size = fi.Size()
	}
	return src, nil
}

// Read reads a LIBSVM or dense text dataset from r, decompressing it if it
// is gzip, bzip2 or xz. name is used in error messages and as the dataset's
// name. IDX is not supported here because it needs a second (labels) file;
// use Load. Read does not use r after it returns.
func Read(r io.Reader, name string, opt *Options) (*Dataset, error) {
	o, err := options(opt)
	if err != nil {
		return nil, err
	}
	br, stop, err := decompress(bufio.NewReaderSize(r, bufSize), name)
	if err != nil {
		return nil, err
	}
	defer stop()
	format := o.Format
	if format == FormatAuto {
		format = sniff(name, br, o.Delimiter)
	}
	if format == FormatIDX {
		return nil, fmt.Errorf("%w: %s: IDX needs its labels file; use Load", ErrOptions, name)
	}
	return read(br, name, format, o)
}

func read(r *bufio.Reader, name string, format Format, o *Options) (*Dataset, error) {
	var ds *Dataset
	var err error
	switch format {
	case FormatLIBSVM:
		ds, err = readLIBSVM(r, name, o)
	case FormatARFF:
		skipBOM(r)
		ds, err = readARFF(r, name, o)
	default:
		skipBOM(r)
		ds, err = readCSV(r, name, o)
	}
	if err != nil {
		return nil, err
	}
	if o.Ordered {
		ds.Ordered = true
	}
	if o.Shuffled {
		if ds.Times != nil {
			return nil, fmt.Errorf("%w: %s has a time column, so its rows are in time order, not shuffled", ErrOptions, name)
		}
		ds.Shuffled = true
	}
	return ds, nil
}

// readCSV reads delimited text (see table.go).
func readCSV(r *bufio.Reader, name string, o *Options) (*Dataset, error) {
	delim := o.Delimiter
	if delim == 0 {
		head, more, r2, err := sniffHead(r, name)
		if err != nil {
			return nil, err
		}
		delim, r = sniffDelimiter(head, more), r2
	}
	var rs records
	if delim == ' ' {
		rs = &wsRecords{lr: &lineReader{r: r, name: name}}
	} else {
		rs = newCSVRecords(r, name, delim, '#', 0)
	}
	return readTable(rs, name, delim, o)
}

// SniffDelimiter returns the delimiter Load detects in the delimited text
// at path (decompressed if need be): ',', ';', tab, or ' ' for white
// space. A file read with another file's ReadSpec (a test file, the next
// week's log) may have a delimiter of its own.
func SniffDelimiter(path string) (rune, error) {
	src, err := open(path)
	if err != nil {
		return 0, err
	}
	defer src.close()
	skipBOM(src.r)
	head, more, _, err := sniffHead(src.r, src.name)
	if err != nil {
		return 0, err
	}
	return sniffDelimiter(head, more), nil
}

// sniffHead returns the start of delimited text for sniffDelimiter, and a
// reader of the whole text again. The start is the first sniffSize bytes,
// or, when they do not hold two whole data lines (a wide file), the first
// two data lines however long (up to maxLine each): a line cut by the
// window says nothing reliable about the delimiter. more reports whether
// the text goes on after head.
func sniffHead(r *bufio.Reader, name string) (head []byte, more bool, _ *bufio.Reader, _ error) {
	head, err := r.Peek(sniffSize)
	if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
		return head, false, r, nil // the whole text
	}
	if err == nil && dataLines(head) >= 2 {
		return head, true, r, nil
	}
	// Read whole lines, then serve them again ahead of the rest. Blank and
	// comment lines count towards the bound on what is held.
	var buf []byte
	lines, data, start, ended := 0, 0, 0, false
	for data < 2 && len(buf) <= 2*maxLine && !ended {
		b, err := r.ReadSlice('\n')
		buf = append(buf, b...)
		if len(buf)-start > maxLine+1 {
			return nil, false, nil, errLongLine(name, lines+1)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil && err != io.EOF {
			return nil, false, nil, &ParseError{File: name, Line: lines + 1, Err: fmt.Errorf("read: %w", err)}
		}
		ended = err == io.EOF
		lines++
		if t := trimSpace(bytes.TrimSuffix(buf[start:], []byte{'\n'})); len(t) > 0 && t[0] != '#' {
			data++
		}
		start = len(buf)
	}
	return buf, !ended, bufio.NewReaderSize(io.MultiReader(bytes.NewReader(buf), r), bufSize), nil
}

// dataLines counts the whole (newline-terminated) lines of head that are
// neither blank nor '#' comments.
func dataLines(head []byte) int {
	n := 0
	for {
		i := bytes.IndexByte(head, '\n')
		if i < 0 {
			return n
		}
		if t := trimSpace(head[:i]); len(t) > 0 && t[0] != '#' {
			n++
		}
		head = head[i+1:]
	}
}

// IDXLabelsPath derives the labels file of an MNIST IDX images file:
// "images-idx3" becomes "labels-idx1" and an ".approx" marker is dropped,
// so train-images-idx3-ubyte.approx.gz pairs with train-labels-idx1-ubyte.gz.
func IDXLabelsPath(images string) string {
	dir, base := filepath.Split(images)
	base = strings.Replace(base, "images-idx3", "labels-idx1", 1)
	base = strings.Replace(base, ".approx", "", 1)
	return dir + base
}

// sniffSize is how much decompressed input sniff looks at (fuzz tests
// lower it).
var sniffSize = 64 << 10

// sniff guesses the format of the (decompressed) stream r: IDX by file name
// or magic number; ARFF if the first line that is not blank or a '%'
// comment starts with @relation; LIBSVM if a data line has a ':' but no ','
// or ';' (or sep) and no time of day (two colons in a token); CSV if a
// data line has several fields (separated by white space, ',', ';', or sep
// if non-zero). Lines holding only a label (LIBSVM rows without features)
// decide nothing; if nothing decides, LIBSVM.
func sniff(name string, r *bufio.Reader, sep rune) Format {
	if strings.Contains(name, "-idx3-ubyte") {
		return FormatIDX
	}
	head, _ := r.Peek(sniffSize)
	if len(head) >= 4 {
		if m := binary.BigEndian.Uint32(head); m == idxImagesMagic || m == idxLabelsMagic {
			return FormatIDX
		}
	}
	head = bytes.TrimPrefix(head, []byte("\xef\xbb\xbf"))
	var toks [][]byte
	for first := true; len(head) > 0; {
		line := head
		if i := bytes.IndexByte(head, '\n'); i >= 0 {
			line, head = head[:i], head[i+1:]
		} else {
			head = nil
		}
		if t := trimSpace(line); first && len(t) > 0 {
			if t[0] == '%' {
				continue // an ARFF comment, or a CSV row starting with '%'
			}
			first = false
			if len(t) >= 9 && strings.EqualFold(string(t[:9]), "@relation") {
				return FormatARFF
			}
		}
		if i := bytes.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		toks = fields(toks[:0], line)
		delimited := bytes.ContainsAny(line, ",;") || sep > 0 && sep != ' ' && bytes.ContainsRune(line, sep)
		switch {
		case bytes.IndexByte(line, ':') >= 0 && !delimited && !hasTimeOfDay(toks) && indexValue(toks):
			return FormatLIBSVM
		case len(toks) >= 2 || delimited:
			return FormatCSV
		}
	}
	return FormatLIBSVM
}

// indexValue reports whether at least half of a line's tokens after the
// first (the label) are LIBSVM index:value pairs — tokens with a colon —
// so that text that merely has a colon ("at 12:3 said hello") is not taken
// for LIBSVM, while a LIBSVM line with a typo still is (and its error
// names the token).
func indexValue(toks [][]byte) bool {
	pairs := 0
	for _, t := range toks[min(1, len(toks)):] {
		if bytes.IndexByte(t, ':') >= 0 {
			pairs++
		}
	}
	return pairs > 0 && 2*pairs >= len(toks)-1
}

// hasTimeOfDay reports whether a token has two colons (10:49:41), which no
// LIBSVM index:value token has.
func hasTimeOfDay(toks [][]byte) bool {
	for _, t := range toks {
		if bytes.Count(t, []byte{':'}) >= 2 {
			return true
		}
	}
	return false
}
