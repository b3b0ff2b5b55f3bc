package server

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/net/netutil"

	"github.com/trit-iot/trit/fleet"
	"github.com/trit-iot/trit/fleet/fault"
)

// Listeners that do not die of a passing error. mochi's TCP listener
// returns for good on the first error Accept gives, and so would the
// broker's device port after one EMFILE (too many open files: anyone who
// can open connections can cause it): the socket stays in LISTEN and every
// gateway that connects afterwards waits forever. guardedListener sits
// under it and under the API's http.Server:
//
//   - A temporary error (EMFILE, ENFILE, ECONNABORTED, …: net.Error's
//     Temporary, as net/http decides) is retried after a pause that
//     doubles from 5 ms to 1 s, as net/http's Server does; the caller never
//     sees it. It is counted (trit_fleet_listener_accept_errors_total) and
//     logged at most once per acceptLogEvery with the count since.
//   - Any other error but the listener's own Close stops the listener: it
//     is logged as an error, trit_fleet_listener_up drops to 0 and an
//     alarm is raised (fleet.Alarm: the console's overview, trit_fleet_alarms)
//     until trit-fleet restarts.
//   - With perAddr > 0, a connection from an address that already holds
//     perAddr open connections is closed at once and counted
//     (trit_fleet_listener_refused_total), so that no one address can take
//     the process's file descriptors.
//   - With deadline > 0, each accepted connection gets that deadline (the
//     embedded broker's connectTimeout: mochi sets none until CONNECT).
type guardedListener struct {
	net.Listener
	stats    *listenerStats
	log      *slog.Logger
	deadline time.Duration
	perAddr  int
	closed   atomic.Bool

	mu   sync.Mutex
	open map[string]int // open connections per remote address (perAddr > 0)
}

// Accept retry pauses (net/http's) and how often a failing listener logs.
const (
	acceptMinPause = 5 * time.Millisecond
	acceptMaxPause = time.Second
	acceptLogEvery = time.Minute
)

// listenerStats are one listener's counters, read by its metrics and
// alarm.
type listenerStats struct {
	name     string // "mqtt-devices", "api", …
	addr     string
	errors   atomic.Uint64 // temporary accept errors
	refused  atomic.Uint64 // connections closed by the per-address bound
	stopped  atomic.Pointer[error]
	lastLog  time.Time // guarded by logMu
	unlogged uint64    // errors since the last line, guarded by logMu
	logMu    sync.Mutex
}

// guard wraps ln.
func guard(ln net.Listener, stats *listenerStats, log *slog.Logger, deadline time.Duration, perAddr int) *guardedListener {
	stats.addr = ln.Addr().String()
	return &guardedListener{Listener: ln, stats: stats, log: log, deadline: deadline, perAddr: perAddr, open: map[string]int{}}
}

// temporary reports whether err is worth retrying (net/http's rule).
func temporary(err error) bool {
	var t interface{ Temporary() bool }
	return errors.As(err, &t) && t.Temporary()
}

// Accept waits for the next connection, riding out temporary errors.
func (l *guardedListener) Accept() (net.Conn, error) {
	var pause time.Duration
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			if l.closed.Load() || errors.Is(err, net.ErrClosed) {
				return nil, err
			}
			if !temporary(err) {
				l.stats.stopped.Store(&err)
				l.log.Error("listener stopped: no more connections are accepted on it until trit-fleet restarts",
					"listener", l.stats.name, "address", l.stats.addr, "err", err)
				return nil, err
			}
			pause = min(max(2*pause, acceptMinPause), acceptMaxPause)
			l.stats.failed(l.log, err, pause)
			time.Sleep(pause)
			continue
		}
		if pause > 0 {
			l.stats.recovered(l.log)
			pause = 0
		}
		if l.perAddr > 0 {
			if c = l.admit(c); c == nil {
				continue
			}
		}
		if l.deadline > 0 {
			c.SetDeadline(time.Now().Add(l.deadline))
		}
		return c, nil
	}
}

// Close stops the listener; Accept then returns net.ErrClosed.
func (l *guardedListener) Close() error {
	l.closed.Store(true)
	return l.Listener.Close()
}

// failed counts a temporary error and logs it if due.
func (s *listenerStats) failed(log *slog.Logger, err error, pause time.Duration) {
	s.errors.Add(1)
	s.logMu.Lock()
	defer s.logMu.Unlock()
	s.unlogged++
	if now := time.Now(); now.Sub(s.lastLog) >= acceptLogEvery {
		log.Warn("accepting a connection failed; retrying (repeats are counted, not logged, for a minute)",
			"listener", s.name, "address", s.addr, "err", err, "errors", s.unlogged, "retry_in", pause.String())
		s.lastLog, s.unlogged = now, 0
	}
}

// recovered logs that the listener accepts again after errors.
func (s *listenerStats) recovered(log *slog.Logger) {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	log.Info("accepting connections again", "listener", s.name, "address", s.addr, "errors_since_last_line", s.unlogged)
	s.unlogged = 0
}

// admit returns c counted against its address's bound, or closes it and
// returns nil if the address holds perAddr connections already.
func (l *guardedListener) admit(c net.Conn) net.Conn {
	host := remoteHost(c)
	l.mu.Lock()
	n := l.open[host]
	if n >= l.perAddr {
		l.mu.Unlock()
		n := l.stats.refused.Add(1)
		c.Close()
		if n%1000 == 1 {
			l.log.Warn("connection refused: its address holds the most connections allowed (counted in trit_fleet_listener_refused_total; logged once per 1,000)",
				"listener", l.stats.name, "remote", fault.Clip(host, 64), "refused_total", n)
		}
		return nil
	}
	l.open[host] = n + 1
	l.mu.Unlock()
	return &countedConn{Conn: c, release: func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.open[host]--; l.open[host] <= 0 {
			delete(l.open, host)
		}
	}}
}

// remoteHost is a connection's remote address without its port.
func remoteHost(c net.Conn) string {
	a := c.RemoteAddr().String()
	if h, _, err := net.SplitHostPort(a); err == nil {
		return h
	}
	return a
}

// countedConn releases its place in the per-address count once, when it
// is closed.
type countedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *countedConn) Close() error {
	c.once.Do(c.release)
	return c.Conn.Close()
}

// listenerSet is the listeners of one process, for metrics and alarms.
type listenerSet struct {
	mu  sync.Mutex
	all []*listenerStats
}

// add registers a listener's stats under name and returns them.
func (s *listenerSet) add(name string) *listenerStats {
	st := &listenerStats{name: name}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.all = append(s.all, st)
	return st
}

func (s *listenerSet) list() []*listenerStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*listenerStats(nil), s.all...)
}

// Alarms returns an alarm per stopped listener.
func (s *listenerSet) Alarms() []fleet.Alarm {
	var out []fleet.Alarm
	for _, st := range s.list() {
		if p := st.stopped.Load(); p != nil {
			out = append(out, fleet.Alarm{Name: "listener-" + st.name,
				Text: fmt.Sprintf("The %s listener on %s stopped accepting connections (%v); restart trit-fleet.", st.name, st.addr, *p)})
		}
	}
	return out
}

var (
	descListenerUp      = prometheus.NewDesc("trit_fleet_listener_up", "1 while the listener accepts connections, 0 once it stopped (see the log and the console's alarms).", []string{"listener"}, nil)
	descListenerErrors  = prometheus.NewDesc("trit_fleet_listener_accept_errors_total", "Temporary accept errors (too many open files, …) the listener retried.", []string{"listener"}, nil)
	descListenerRefused = prometheus.NewDesc("trit_fleet_listener_refused_total", "Connections closed at once because their address held the most connections allowed.", []string{"listener"}, nil)
)

// Describe implements prometheus.Collector.
func (s *listenerSet) Describe(ch chan<- *prometheus.Desc) {
	ch <- descListenerUp
	ch <- descListenerErrors
	ch <- descListenerRefused
}

// Collect implements prometheus.Collector.
func (s *listenerSet) Collect(ch chan<- prometheus.Metric) {
	for _, st := range s.list() {
		up := 1.0
		if st.stopped.Load() != nil {
			up = 0
		}
		ch <- prometheus.MustNewConstMetric(descListenerUp, prometheus.GaugeValue, up, st.name)
		ch <- prometheus.MustNewConstMetric(descListenerErrors, prometheus.CounterValue, float64(st.errors.Load()), st.name)
		ch <- prometheus.MustNewConstMetric(descListenerRefused, prometheus.CounterValue, float64(st.refused.Load()), st.name)
	}
}

// The API server's bounds. A request's header must arrive within
// apiReadHeaderTimeout and the whole request (a bundle of up to 1 MiB)
// within apiReadTimeout; a response must be written within
// apiWriteTimeout (the few long routes lift both: longRoutes); a kept-alive
// connection closes after apiIdleTimeout without a request. One address
// holds at most apiMaxPerAddress connections (the rest are closed at
// once), and the listener at most apiMaxConnections (the rest wait in the
// kernel's backlog): a local client that opens connections without a token
// cannot take the process's file descriptors. Variables for tests.
var (
	apiReadHeaderTimeout = 10 * time.Second
	apiReadTimeout       = time.Minute
	apiWriteTimeout      = time.Minute
	apiIdleTimeout       = time.Minute
	apiMaxPerAddress     = 256
	apiMaxConnections    = 1024
)

// newAPIServer returns the API's http.Server around h, with the bounds
// above and net/http's own messages (TLS handshake errors, panics) in the
// service's log.
func newAPIServer(h http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: apiReadHeaderTimeout, ReadTimeout: apiReadTimeout,
		WriteTimeout: apiWriteTimeout, IdleTimeout: apiIdleTimeout, MaxHeaderBytes: 64 << 10,
		ErrorLog: slog.NewLogLogger(log.With("component", "api").Handler(), slog.LevelWarn)}
}

// apiListener bounds ln as the API's listener (guardedListener, then
// apiMaxConnections at once), counted in set as "api".
func apiListener(ln net.Listener, set *listenerSet, log *slog.Logger) net.Listener {
	return netutil.LimitListener(guard(ln, set.add("api"), log, 0, apiMaxPerAddress), apiMaxConnections)
}

// longRequest lifts the server's read and write timeouts of one request
// to d from now (0: none), for the routes that wait on purpose or stream a
// large answer (longRoutes). The read deadline matters too: net/http
// cancels a request's context when the connection's read deadline passes
// while its handler runs.
func longRequest(w http.ResponseWriter, d time.Duration) {
	var deadline time.Time
	if d > 0 {
		deadline = time.Now().Add(d)
	}
	rc := http.NewResponseController(w)
	rc.SetReadDeadline(deadline)
	rc.SetWriteDeadline(deadline)
}
