package ratelog

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is a bytes.Buffer for a handler and a test at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Split(strings.TrimSpace(l.b.String()), "\n")
}

// fakeTime makes h's clock and timers the test's: advance moves the clock
// and runs the timers that came due.
type fakeTime struct {
	now    time.Time
	timers []fakeTimer
}

type fakeTimer struct {
	at time.Time
	f  func()
}

func (ft *fakeTime) install(h *Handler) {
	ft.now = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	h.st.now = func() time.Time { return ft.now }
	h.st.after = func(d time.Duration, f func()) { ft.timers = append(ft.timers, fakeTimer{ft.now.Add(d), f}) }
}

func (ft *fakeTime) advance(d time.Duration) {
	ft.now = ft.now.Add(d)
	var left []fakeTimer
	for _, tm := range ft.timers {
		if tm.at.After(ft.now) {
			left = append(left, tm)
		} else {
			tm.f()
		}
	}
	ft.timers = left
}

// TestFloodBecomesACount: 10,000 records of one message give the first
// Burst lines and, when the interval ends, one line with the count of the
// rest and the latest one's attributes; another message has its own
// allowance, and a derived logger (With) shares the message's.
func TestFloodBecomesACount(t *testing.T) {
	out := &lockedBuffer{}
	h := New(slog.NewTextHandler(out, nil), 5, time.Minute)
	var ft fakeTime
	ft.install(h)
	log := slog.New(h)
	dev := log.With("component", "broker")
	for i := range 10000 {
		l := log
		if i%2 == 1 {
			l = dev
		}
		l.Warn("invalid device message dropped", "n", i)
	}
	log.Info("rollout created", "rollout", "r1")
	got := out.lines()
	if len(got) != 6 {
		t.Fatalf("%d lines during the flood, want 5 of it and 1 other:\n%s", len(got), strings.Join(got, "\n"))
	}
	ft.advance(59 * time.Second)
	if n := len(out.lines()); n != 6 {
		t.Fatalf("%d lines before the interval's end, want 6", n)
	}
	ft.advance(time.Second)
	lines := out.lines()
	if len(lines) != 7 {
		t.Fatalf("%d lines, want the count at the interval's end:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	last := lines[6]
	for _, want := range []string{`msg="invalid device message dropped"`, "component=broker", "n=9999", "repeated=9995", "in=1m0s", "level=WARN"} {
		if !strings.Contains(last, want) {
			t.Errorf("the count's line %q lacks %s", last, want)
		}
	}
	// A new interval: the message passes again, and an interval with
	// nothing held back ends without a line.
	log.Warn("invalid device message dropped", "n", 10000)
	if l := out.lines(); len(l) != 8 || !strings.Contains(l[7], "n=10000") {
		t.Fatalf("after the interval: %v", l)
	}
	ft.advance(2 * time.Minute)
	log.Warn("invalid device message dropped", "n", 10001)
	if l := out.lines(); len(l) != 9 || !strings.Contains(l[8], "n=10001") {
		t.Errorf("an interval later: %v", l[8:])
	}
}

// TestDistinctMessagesBounded: a flood of distinct messages beyond the
// tracked bound shares one allowance, so even those cannot grow the log
// (or the handler's memory) without bound.
func TestDistinctMessagesBounded(t *testing.T) {
	out := &lockedBuffer{}
	h := New(slog.NewTextHandler(out, nil), 1, time.Hour)
	log := slog.New(h)
	for i := range maxKeys + 1000 {
		log.Warn("message " + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + string(rune(i)))
	}
	if n := len(out.lines()); n > maxKeys+1 {
		t.Errorf("%d lines for %d distinct messages at 1 each, want at most %d", n, maxKeys+1000, maxKeys+1)
	}
	h.st.mu.Lock()
	defer h.st.mu.Unlock()
	if n := len(h.st.msgs); n > maxKeys+1 {
		t.Errorf("%d messages tracked, want at most %d", n, maxKeys+1)
	}
}
