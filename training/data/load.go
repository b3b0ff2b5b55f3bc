package data

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// Format selects the parser for an input file.
type Format int

// Supported formats.
const (
	FormatAuto   Format = iota // detect: IDX by name or magic, LIBSVM by index:value tokens, else dense
	FormatLIBSVM               // LIBSVM/svmlight sparse text
	FormatIDX                  // MNIST IDX images (uint8) plus a labels file
	FormatDense                // dense text, one row per line
)

// String returns the format's name.
func (f Format) String() string {
	switch f {
	case FormatAuto:
		return "auto"
	case FormatLIBSVM:
		return "libsvm"
	case FormatIDX:
		return "idx"
	case FormatDense:
		return "dense"
	}
	return fmt.Sprintf("Format(%d)", int(f))
}

// Options controls loading. A nil *Options means the zero value, which
// means defaults throughout.
type Options struct {
	Format      Format
	NumFeatures int    // LIBSVM: force D (test file must match train); 0 = max index seen. Dense: must match if > 0.
	LabelColumn int    // Dense text: 0-based column of the label; -1 means last column. Default 0.
	Separator   rune   // Dense text: 0 = auto (comma if the first line has a comma, else whitespace); ' ' = whitespace
	Labels      string // IDX: path of the labels file that goes with an images file (derived by IDXLabelsPath if empty)
	MaxRows     int    // 0 = all; stop after this many rows (for quick runs / subsets)
}

func (o *Options) check() error {
	switch {
	case o.Format < FormatAuto || o.Format > FormatDense:
		return fmt.Errorf("%w: unknown format %v", ErrOptions, o.Format)
	case o.NumFeatures < 0:
		return fmt.Errorf("%w: NumFeatures %d < 0", ErrOptions, o.NumFeatures)
	case o.NumFeatures > maxValues:
		return fmt.Errorf("%w: NumFeatures %d", ErrTooLarge, o.NumFeatures)
	case o.LabelColumn < -1:
		return fmt.Errorf("%w: LabelColumn %d < -1", ErrOptions, o.LabelColumn)
	case o.Separator != 0 && !utf8.ValidRune(o.Separator) || o.Separator == '\n' || o.Separator == '\r':
		return fmt.Errorf("%w: Separator %q", ErrOptions, o.Separator)
	case o.MaxRows < 0:
		return fmt.Errorf("%w: MaxRows %d < 0", ErrOptions, o.MaxRows)
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
		format = sniff(src.name, src.r, o.Separator)
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
	return readIDX(src, lsrc, o)
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
		format = sniff(name, br, o.Separator)
	}
	if format == FormatIDX {
		return nil, fmt.Errorf("%w: %s: IDX needs its labels file; use Load", ErrOptions, name)
	}
	return read(br, name, format, o)
}

func read(r *bufio.Reader, name string, format Format, o *Options) (*Dataset, error) {
	if format == FormatLIBSVM {
		return readLIBSVM(r, name, o)
	}
	return readDense(r, name, o)
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

// sniffSize is how much decompressed input sniff looks at.
const sniffSize = 64 << 10

// sniff guesses the format of the (decompressed) stream r: IDX by file name
// or magic number; LIBSVM if a data line has an index:value token; dense if
// a data line has several fields without one (fields separated by white
// space, a comma, or sep if non-zero). Lines holding only a label (LIBSVM
// rows without features) decide nothing; if nothing decides, LIBSVM.
func sniff(name string, r *bufio.Reader, sep rune) Format {
	if sep == 0 {
		sep = ','
	}
	if strings.Contains(name, "-idx3-ubyte") {
		return FormatIDX
	}
	head, _ := r.Peek(sniffSize)
	if len(head) >= 4 {
		if m := binary.BigEndian.Uint32(head); m == idxImagesMagic || m == idxLabelsMagic {
			return FormatIDX
		}
	}
	var toks [][]byte
	for len(head) > 0 {
		line := head
		if i := bytes.IndexByte(head, '\n'); i >= 0 {
			line, head = head[:i], head[i+1:]
		} else {
			head = nil
		}
		if i := bytes.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		toks = fields(toks[:0], line)
		switch {
		case bytes.IndexByte(line, ':') >= 0:
			return FormatLIBSVM
		case len(toks) >= 2 || bytes.ContainsRune(line, sep):
			return FormatDense
		}
	}
	return FormatLIBSVM
}
