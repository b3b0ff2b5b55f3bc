// Package replay plays recorded data back as a sensors.Source: CSV files
// (a header row of channel names, optionally a time column) and LIBSVM
// files (one labelled feature vector per line), paced at a configured rate.
// Files may be compressed with gzip (.gz), bzip2 (.bz2) or xz (.xz). It
// registers the kind "replay".
package replay

import (
	"bufio"
	"compress/bzip2"
	"compress/gzip"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ulikunitz/xz"

	"github.com/trit-iot/trit/internal/linelimit"
	"github.com/trit-iot/trit/sensors"
)

// Formats.
const (
	CSV    = "csv"
	LIBSVM = "libsvm"
)

// MaxDims bounds the number of LIBSVM features.
const MaxDims = 1 << 16

// maxLine bounds one line of input, in bytes: far more than a real header
// or row (65,536 LIBSVM features are about 1 MB), and a bound on what one
// malformed line can make the reader hold. Tests lower it.
var maxLine = 16 << 20

// errLongLine reports line n (1-based), longer than maxLine.
func errLongLine(n int) error {
	size := fmt.Sprintf("%d KiB", maxLine>>10)
	if maxLine%(1<<20) == 0 {
		size = fmt.Sprintf("%d MiB", maxLine>>20)
	}
	return fmt.Errorf("line %d is longer than %s, the longest line replay reads", n, size)
}

// Options configures a Source. Zero fields mean defaults; a nil *Options
// means all defaults.
type Options struct {
	// Name is the sensor name; LIBSVM channels are <name>.label and
	// <name>.1 .. <name>.<dims> (default "replay"). CSV channels are the
	// header's names as they are, so a recording replays under the channel
	// names it was recorded with.
	Name string
	// Format is CSV or LIBSVM; "" guesses from the file extension
	// (.csv, .libsvm, .svm, before any compression suffix).
	Format string
	// Rate is samples per second; 0 replays as fast as Read is called.
	Rate float64
	// Loop restarts from the top at the end instead of returning io.EOF.
	Loop bool
	// Dims is the LIBSVM feature count; 0 scans the file for the largest
	// index.
	Dims int
	// TimeColumn names the CSV column holding sample times (RFC 3339 or
	// Unix seconds); "" uses a column named "time" or "timestamp" if there
	// is one. Without a time column, samples are stamped by Clock.
	TimeColumn string
	// Clock paces the replay and stamps samples (default SystemClock).
	Clock sensors.Clock
}

// Source replays a file.
type Source struct {
	o        Options
	name     string // for errors: the file name
	open     func() (io.ReadCloser, error)
	channels []string
	pacer    *sensors.Pacer

	rc   io.ReadCloser
	rows rowReader
	n    int // rows read in this pass
	done bool
}

// rowReader reads one data row into dst (len = channels) and returns its
// time, if the data carries one.
type rowReader interface {
	next(dst []float64) (time.Time, error)
}

// Open opens the file at path.
func Open(path string, o *Options) (*Source, error) {
	var c Options
	if o != nil {
		c = *o
	}
	if c.Format == "" {
		base := strings.ToLower(path)
		for _, z := range []string{".gz", ".bz2", ".xz"} {
			base = strings.TrimSuffix(base, z)
		}
		switch filepath.Ext(base) {
		case ".csv":
			c.Format = CSV
		case ".libsvm", ".svm":
			c.Format = LIBSVM
		default:
			return nil, fmt.Errorf("replay: cannot tell the format of %s from its name; set format to %q or %q", path, CSV, LIBSVM)
		}
	}
	return newSource(filepath.Base(path), func() (io.ReadCloser, error) { return openFile(path) }, &c)
}

// New replays what open returns, which is called again for every loop.
// name identifies the data in errors.
func New(name string, open func() (io.ReadCloser, error), o *Options) (*Source, error) {
	return newSource(name, open, o)
}

func newSource(name string, open func() (io.ReadCloser, error), o *Options) (*Source, error) {
	var c Options
	if o != nil {
		c = *o
	}
	if c.Name == "" {
		c.Name = "replay"
	}
	if c.Clock == nil {
		c.Clock = sensors.SystemClock
	}
	if c.Dims < 0 || c.Dims > MaxDims {
		return nil, fmt.Errorf("replay: %s: dims %d must be in 0..%d", name, c.Dims, MaxDims)
	}
	s := &Source{o: c, name: name, open: open}
	switch c.Format {
	case CSV:
	case LIBSVM:
		if s.o.Dims == 0 {
			d, err := s.scanDims()
			if err != nil {
				return nil, err
			}
			s.o.Dims = d
		}
		s.channels = []string{c.Name + ".label"}
		for i := 1; i <= s.o.Dims; i++ {
			s.channels = append(s.channels, c.Name+"."+strconv.Itoa(i))
		}
	default:
		return nil, fmt.Errorf("replay: %s: unknown format %q (want %q or %q)", name, c.Format, CSV, LIBSVM)
	}
	if err := s.rewind(); err != nil {
		return nil, err
	}
	if c.Rate > 0 {
		s.pacer = sensors.NewPacer(c.Rate, c.Clock)
	}
	return s, nil
}

// scanDims finds the largest LIBSVM feature index in the data.
func (s *Source) scanDims() (int, error) {
	rc, err := s.open()
	if err != nil {
		return 0, fmt.Errorf("replay: %w", err)
	}
	defer rc.Close()
	sc := bufio.NewScanner(rc)
	sc.Buffer(nil, maxLine+1) // the line and its newline
	dims, line := 0, 1
	for ; sc.Scan(); line++ {
		dims = max(dims, maxIndexLIBSVM(sc.Text()))
		if dims > MaxDims {
			return 0, fmt.Errorf("replay: %s line %d: feature index %d is above %d", s.name, line, dims, MaxDims)
		}
	}
	if err := sc.Err(); errors.Is(err, bufio.ErrTooLong) {
		return 0, fmt.Errorf("replay: %s: %w", s.name, errLongLine(line))
	} else if err != nil {
		return 0, fmt.Errorf("replay: %s: %w", s.name, err)
	}
	if dims == 0 {
		return 0, fmt.Errorf("replay: %s: no LIBSVM features found", s.name)
	}
	return dims, nil
}

// rewind (re)opens the data and reads a CSV header.
func (s *Source) rewind() error {
	if s.rc != nil {
		s.rc.Close()
		s.rc = nil
	}
	rc, err := s.open()
	if err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	s.n = 0
	if s.o.Format == LIBSVM {
		sc := bufio.NewScanner(rc)
		sc.Buffer(nil, maxLine+1) // the line and its newline
		s.rc, s.rows = rc, &libsvmRows{name: s.name, sc: sc}
		return nil
	}
	r := csv.NewReader(&linelimit.Reader{R: rc, Max: maxLine, TooLong: errLongLine})
	r.Comment = '#'
	r.TrimLeadingSpace = true
	r.ReuseRecord = true
	header, err := r.Read()
	if err != nil {
		rc.Close()
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("replay: %s: empty file, want a header row", s.name)
		}
		return fmt.Errorf("replay: %s: header: %w", s.name, err)
	}
	header = slices.Clone(header) // ReuseRecord: later reads overwrite it
	timeCol, err := checkHeader(header, s.o.TimeColumn)
	if err != nil {
		rc.Close()
		return fmt.Errorf("replay: %s: header: %w", s.name, err)
	}
	var channels []string
	for i, h := range header {
		if i != timeCol {
			channels = append(channels, strings.TrimSpace(h))
		}
	}
	if s.channels != nil && strings.Join(s.channels, ",") != strings.Join(channels, ",") {
		rc.Close()
		return fmt.Errorf("replay: %s: the header changed between loops", s.name)
	}
	s.channels = channels
	s.rc, s.rows = rc, &csvRows{name: s.name, r: r, timeCol: timeCol, header: header}
	return nil
}

// Channels implements sensors.Source.
func (s *Source) Channels() []string { return s.channels }

// Read implements sensors.Source. At the end of the data it returns io.EOF,
// or starts over if Loop is set.
func (s *Source) Read(ctx context.Context) (sensors.Reading, error) {
	if s.done {
		return sensors.Reading{}, sensors.ErrClosed
	}
	if s.pacer != nil {
		if err := s.pacer.Wait(ctx); err != nil {
			return sensors.Reading{}, err
		}
	} else if err := ctx.Err(); err != nil {
		return sensors.Reading{}, err
	}
	v := make([]float64, len(s.channels))
	t, err := s.rows.next(v)
	if errors.Is(err, io.EOF) && s.o.Loop {
		if s.n == 0 {
			return sensors.Reading{}, fmt.Errorf("replay: %s: no data rows to loop over", s.name)
		}
		if err := s.rewind(); err != nil {
			return sensors.Reading{}, err
		}
		t, err = s.rows.next(v)
	}
	if err != nil {
		return sensors.Reading{}, err
	}
	s.n++
	if t.IsZero() {
		t = s.o.Clock.Now()
	}
	return sensors.Reading{Time: t, Values: v}, nil
}

// Close implements sensors.Source.
func (s *Source) Close() error {
	s.done = true
	if s.rc == nil {
		return nil
	}
	err := s.rc.Close()
	s.rc = nil
	return err
}

type csvRows struct {
	name    string
	r       *csv.Reader
	timeCol int
	header  []string
}

func (c *csvRows) next(dst []float64) (time.Time, error) {
	rec, err := c.r.Read()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return time.Time{}, io.EOF
		}
		return time.Time{}, fmt.Errorf("replay: %s: %w", c.name, err)
	}
	line, _ := c.r.FieldPos(0)
	var t time.Time
	j := 0
	for i, f := range rec {
		if i == c.timeCol {
			if t, err = parseTime(f); err != nil {
				return time.Time{}, fmt.Errorf("replay: %s line %d: %w", c.name, line, err)
			}
			continue
		}
		if dst[j], err = parseValue(f); err != nil {
			return time.Time{}, fmt.Errorf("replay: %s line %d, column %q: %w", c.name, line, strings.TrimSpace(c.header[i]), err)
		}
		j++
	}
	return t, nil
}

type libsvmRows struct {
	name string
	sc   *bufio.Scanner
	line int
}

func (l *libsvmRows) next(dst []float64) (time.Time, error) {
	for l.sc.Scan() {
		l.line++
		ok, err := parseLIBSVM(l.sc.Text(), dst)
		if err != nil {
			return time.Time{}, fmt.Errorf("replay: %s line %d: %w", l.name, l.line, err)
		}
		if ok {
			return time.Time{}, nil
		}
	}
	if err := l.sc.Err(); errors.Is(err, bufio.ErrTooLong) {
		return time.Time{}, fmt.Errorf("replay: %s: %w", l.name, errLongLine(l.line+1))
	} else if err != nil {
		return time.Time{}, fmt.Errorf("replay: %s line %d: %w", l.name, l.line+1, err)
	}
	return time.Time{}, io.EOF
}

// openFile opens path, decompressing by suffix.
func openFile(path string) (io.ReadCloser, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	var r io.Reader
	switch {
	case strings.HasSuffix(path, ".gz"):
		r, err = gzip.NewReader(f)
	case strings.HasSuffix(path, ".bz2"):
		r = bzip2.NewReader(f)
	case strings.HasSuffix(path, ".xz"):
		r, err = xz.NewReader(f)
	default:
		return f, nil
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return struct {
		io.Reader
		io.Closer
	}{r, f}, nil
}
