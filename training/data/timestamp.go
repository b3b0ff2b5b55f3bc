package data

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"time"
)

// Time columns (docs/DATA.md, "Time stamps"): a column is a time column when
// the caller names it, when its header is time, timestamp, date or
// datetime (any case), or when its value in the first data row is not a
// number but parses as one of timeLayouts. The row's instant is the first
// time column's value; a date-only column followed by a time-of-day column
// (loggers' "Date,Time") are combined into one instant.

// timeKind is what a time column holds.
type timeKind int

const (
	timeInstant timeKind = iota + 1 // a date and a time of day
	timeDate                        // a date only (midnight)
	timeOfDay                       // a time of day only
	timeSeconds                     // a number: seconds (since 1970, or since any fixed start)
)

func (k timeKind) String() string {
	switch k {
	case timeInstant:
		return "date and time"
	case timeDate:
		return "date"
	case timeOfDay:
		return "time of day"
	case timeSeconds:
		return "seconds"
	}
	return "not a time"
}

// timeLayouts are the accepted spellings. A time of day may carry a
// fraction of a second after the seconds (time.Parse accepts one even when
// the layout has none). Times without a zone are read as UTC: only their
// order matters. Months, days and hours may have one digit ("2018/1/11").
var timeLayouts = []struct {
	layout string
	kind   timeKind
}{
	{"2006-1-2T15:04:05Z07:00", timeInstant},
	{"2006-1-2T15:04:05Z0700", timeInstant},
	{"2006-1-2T15:04:05", timeInstant},
	{"2006-1-2 15:04:05Z07:00", timeInstant},
	{"2006-1-2 15:04:05Z0700", timeInstant},
	{"2006-1-2 15:04:05", timeInstant},
	{"2006-1-2T15:04Z07:00", timeInstant},
	{"2006-1-2T15:04", timeInstant},
	{"2006-1-2 15:04", timeInstant},
	{"2006/1/2 15:04:05", timeInstant},
	{"2006/1/2T15:04:05", timeInstant},
	{"2006/1/2 15:04", timeInstant},
	{"2006-1-2", timeDate},
	{"2006/1/2", timeDate},
	{"15:04:05", timeOfDay},
	{"15:04", timeOfDay},
}

// timeFormats lists the accepted spellings for messages.
const timeFormats = "ISO 8601 (2017-12-22T10:49:41, optionally with a zone or a space for the T), " +
	"2017/12/22 10:49:41, 2017-12-22, 2017/12/22, 10:49:41"

// timeNames are the header names that make a column a time column.
var timeNames = []string{"time", "timestamp", "date", "datetime"}

func isTimeName(name string) bool {
	for _, n := range timeNames {
		if strings.EqualFold(strings.TrimSpace(name), n) {
			return true
		}
	}
	return false
}

var (
	errNotTime   = errors.New("not a time")
	errTimeRange = errors.New("time out of range (years 1678 to 2261)")
)

// timeParser parses one time column, remembering the layout that worked
// last (a file uses one layout throughout, so that is one attempt a row).
type timeParser struct {
	kind timeKind // of the first value; every value must be of this kind
	last int      // index into timeLayouts of the last success
}

// sniffTime returns the kind of a time value, or 0 if s is not a time.
// Numbers are timeSeconds.
func sniffTime(s string) timeKind {
	s = strings.TrimSpace(s)
	if _, err := parseValue(s); err == nil {
		return timeSeconds
	}
	for _, l := range timeLayouts {
		if _, err := time.Parse(l.layout, s); err == nil {
			return l.kind
		}
	}
	return 0
}

// parse returns the value of s in nanoseconds: since 1970-01-01 UTC for
// instants, dates and seconds; since midnight for a time of day.
func (p *timeParser) parse(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if p.kind == timeSeconds {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return 0, errNotTime
		}
		if math.Abs(v) >= math.MaxInt64/1e9 {
			return 0, errTimeRange
		}
		return int64(math.Round(v * 1e9)), nil
	}
	try := func(i int) (int64, bool, error) {
		l := timeLayouts[i]
		if l.kind != p.kind {
			return 0, false, nil
		}
		t, err := time.Parse(l.layout, s)
		if err != nil {
			return 0, false, nil
		}
		p.last = i
		if l.kind == timeOfDay {
			return int64(t.Hour())*int64(time.Hour) + int64(t.Minute())*int64(time.Minute) +
				int64(t.Second())*int64(time.Second) + int64(t.Nanosecond()), true, nil
		}
		if y := t.UTC().Year(); y < 1678 || y > 2261 {
			return 0, true, errTimeRange
		}
		return t.UnixNano(), true, nil
	}
	if v, ok, err := try(p.last); ok {
		return v, err
	}
	for i := range timeLayouts {
		if v, ok, err := try(i); ok {
			return v, err
		}
	}
	return 0, errNotTime
}
