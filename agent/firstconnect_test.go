package agent

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// notYet refuses the first n dials as a broker that is not listening yet
// does, then dials b.
type notYet struct {
	b *fakeBroker
	n int
}

func (d *notYet) Dial(ctx context.Context, o DialOptions) (Conn, error) {
	if d.n > 0 {
		d.n--
		return nil, errors.New("mqtt: connect to tcp://127.0.0.1:1884: network Error : dial tcp 127.0.0.1:1884: connect: connection refused")
	}
	return d.b.Dial(ctx, o)
}

// TestFirstConnectRefusedIsNotAWarning: an agent started with (or just
// before) the fleet finds its broker not listening yet; that is logged as
// information, not as a warning. Once it has been connected, a failed
// connection is a warning again.
func TestFirstConnectRefusedIsNotAWarning(t *testing.T) {
	k := newKeys(t)
	cfg := testConfig(t, k, "tcp://127.0.0.1:1884")
	var logs lockedBuffer
	b := newFakeBroker()
	stop := startAgent(t, cfg, &Options{Dialer: &notYet{b: b, n: 2}, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	defer stop()
	waitLog(t, &logs, `msg="mqtt connected"`)
	before := logs.String()
	if strings.Contains(before, "level=WARN") || !strings.Contains(before, "level=INFO msg=\"mqtt broker not accepting connections yet") {
		t.Errorf("start-up before the broker listens:\n%s", before)
	}
	// Connected once, a broker that goes away is worth a warning.
	b.mu.Lock()
	b.down = true
	conns := b.conns
	b.mu.Unlock()
	for _, c := range conns {
		c.Close()
		c.opt.OnLost(errors.New("EOF"))
	}
	waitLog(t, &logs, `level=WARN msg="mqtt connect failed"`)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func waitLog(t *testing.T, l *lockedBuffer, want string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(l.String(), want); {
		if time.Now().After(deadline) {
			t.Fatalf("no %s in the log:\n%s", want, l.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
