// Package ratelog bounds a program's log: an slog.Handler that passes at
// most Burst records of each message per Every, and counts the rest. When a
// message's interval ends with records held back, one record says how many
// ("repeated" more "in" the interval), carrying the last one's attributes.
// Whatever arrives — a device sending a malformed message a thousand times
// a second, a client trying tokens from many addresses — the log grows by at
// most Burst+1 lines per message per interval, and nothing is silently
// lost: every event is in a count.
//
// A message is the record's level and text (not its attributes, which vary
// from event to event). trit-fleet and trit-agent wrap their stderr
// handler with it; tests and library callers get their logger unchanged.
package ratelog

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Defaults: 20 records of one message a minute, at most 4,096 messages
// tracked at once (beyond, new messages share one allowance).
const (
	DefaultBurst = 20
	DefaultEvery = time.Minute
	maxKeys      = 4096
)

// Handler is the rate-limiting slog.Handler.
type Handler struct {
	next slog.Handler
	st   *state
}

// state is shared by a Handler and every handler derived from it
// (WithAttrs, WithGroup): the allowance is per message, whoever logs it.
type state struct {
	burst int
	every time.Duration
	now   func() time.Time
	after func(time.Duration, func()) // time.AfterFunc; tests replace it

	mu   sync.Mutex
	msgs map[key]*window
}

type key struct {
	level slog.Level
	msg   string
}

// window is one message's current interval.
type window struct {
	start  time.Time
	passed int
	held   int
	last   slog.Record  // the latest record held back
	via    slog.Handler // the handler it came through (its attributes)
	timer  bool         // a flush is due at the interval's end
}

// New wraps next: at most burst records of each message per every (0:
// DefaultBurst, DefaultEvery).
func New(next slog.Handler, burst int, every time.Duration) *Handler {
	if burst <= 0 {
		burst = DefaultBurst
	}
	if every <= 0 {
		every = DefaultEvery
	}
	return &Handler{next: next, st: &state{burst: burst, every: every, now: time.Now, msgs: map[key]*window{},
		after: func(d time.Duration, f func()) { time.AfterFunc(d, f) }}}
}

// Enabled implements slog.Handler.
func (h *Handler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

// WithAttrs implements slog.Handler.
func (h *Handler) WithAttrs(as []slog.Attr) slog.Handler {
	return &Handler{next: h.next.WithAttrs(as), st: h.st}
}

// WithGroup implements slog.Handler.
func (h *Handler) WithGroup(name string) slog.Handler {
	return &Handler{next: h.next.WithGroup(name), st: h.st}
}

// Handle implements slog.Handler: r goes on if its message is within its
// allowance, else it is counted.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	if h.st.admit(h.next, r) {
		return h.next.Handle(ctx, r)
	}
	return nil
}

// admit reports whether r may pass now, holding it back otherwise.
func (s *state) admit(via slog.Handler, r slog.Record) bool {
	k := key{r.Level, r.Message}
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.msgs[k]
	if w == nil && len(s.msgs) >= maxKeys {
		k = key{r.Level, ""} // a flood of distinct messages shares one allowance
		w = s.msgs[k]
	}
	if w == nil {
		w = &window{start: now}
		s.msgs[k] = w
	}
	if w.held == 0 && now.Sub(w.start) >= s.every {
		w.start, w.passed = now, 0 // a new interval
	}
	if w.passed < s.burst {
		w.passed++
		return true
	}
	w.held++
	w.last, w.via = r.Clone(), via
	if !w.timer {
		w.timer = true
		s.after(w.start.Add(s.every).Sub(now), func() { s.flush(k) })
	}
	return false
}

// flush ends k's interval: one record with the count held back, if any.
func (s *state) flush(k key) {
	s.mu.Lock()
	w := s.msgs[k]
	if w == nil {
		s.mu.Unlock()
		return
	}
	delete(s.msgs, k)
	held, last, via, since := w.held, w.last, w.via, w.start
	s.mu.Unlock()
	if held == 0 {
		return
	}
	out := slog.NewRecord(s.now(), last.Level, last.Message, last.PC)
	last.Attrs(func(a slog.Attr) bool { out.AddAttrs(a); return true })
	out.AddAttrs(slog.Int("repeated", held), slog.String("in", s.now().Sub(since).Round(time.Second).String()))
	via.Handle(context.Background(), out)
}
