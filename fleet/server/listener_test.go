package server

import (
	"bufio"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/trit-iot/trit/fleet/fleettest"
)

// scriptedListener gives the errors of script, one per Accept, then
// accepts from the real listener under it.
type scriptedListener struct {
	net.Listener
	mu     sync.Mutex
	script []error
}

func (l *scriptedListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	if len(l.script) > 0 {
		err := l.script[0]
		l.script = l.script[1:]
		l.mu.Unlock()
		return nil, err
	}
	l.mu.Unlock()
	return l.Listener.Accept()
}

func acceptErr(errno syscall.Errno) error {
	return &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", errno)}
}

func tcpListener(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// TestListenerRidesOutTemporaryErrors: EMFILE and ENFILE
// from accept are retried, counted and logged once; the next connection is
// accepted and the listener stays up. (mochi's own listener returns on the
// first, and the embedded broker then accepted no gateway again.)
func TestListenerRidesOutTemporaryErrors(t *testing.T) {
	ln := tcpListener(t)
	set := &listenerSet{}
	logs := &fleettest.LockedBuffer{}
	sl := &scriptedListener{Listener: ln, script: []error{acceptErr(syscall.EMFILE), acceptErr(syscall.EMFILE), acceptErr(syscall.ENFILE), acceptErr(syscall.EMFILE)}}
	gl := guard(sl, set.add("mqtt-devices"), slog.New(slog.NewTextHandler(logs, nil)), 0, 0)
	go func() {
		if c, err := net.Dial("tcp", ln.Addr().String()); err == nil {
			defer c.Close()
			io.Copy(io.Discard, c)
		}
	}()
	c, err := gl.Accept()
	if err != nil {
		t.Fatalf("Accept: %v; want the errors retried and the connection accepted", err)
	}
	c.Close()
	st := set.list()[0]
	if n := st.errors.Load(); n != 4 {
		t.Errorf("%d errors counted, want 4", n)
	}
	if a := set.Alarms(); len(a) != 0 {
		t.Errorf("alarms %v after temporary errors, want none", a)
	}
	out := logs.String()
	if n := strings.Count(out, "accepting a connection failed; retrying"); n != 1 {
		t.Errorf("%d lines about the failures, want 1 (then counted):\n%s", n, out)
	}
	if !strings.Contains(out, "too many open files") || !strings.Contains(out, "accepting connections again") {
		t.Errorf("the log does not name the error and the recovery:\n%s", out)
	}
}

// TestListenerStopIsAlarmed: an error that is not temporary stops the
// listener, and that is logged as an error, raised as an alarm (the
// console, trit_fleet_alarms) and shown by trit_fleet_listener_up 0. Its
// own Close is no alarm.
func TestListenerStopIsAlarmed(t *testing.T) {
	f := newFixture(t)
	set := &listenerSet{}
	f.svc.AddAlarms(set.Alarms)
	f.svc.AddMetrics(set)
	logs := &fleettest.LockedBuffer{}
	log := slog.New(slog.NewTextHandler(logs, nil))

	closed := guard(tcpListener(t), set.add("api"), log, 0, 0)
	closed.Close()
	if _, err := closed.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Accept after Close: %v", err)
	}
	broken := guard(&scriptedListener{Listener: tcpListener(t), script: []error{acceptErr(syscall.EINVAL)}}, set.add("mqtt-devices"), log, 0, 0)
	if _, err := broken.Accept(); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("Accept: %v, want EINVAL passed on", err)
	}
	alarms := f.svc.Alarms()
	if len(alarms) != 1 || alarms[0].Name != "listener-mqtt-devices" || !strings.Contains(alarms[0].Text, "restart trit-fleet") {
		t.Fatalf("alarms %+v, want one for the device listener", alarms)
	}
	if !strings.Contains(logs.String(), "level=ERROR msg=\"listener stopped") {
		t.Errorf("no error logged:\n%s", logs.String())
	}
	metrics := scrape(t, f)
	for _, want := range []string{`trit_fleet_alarms{alarm="listener-mqtt-devices"} 1`, `trit_fleet_listener_up{listener="mqtt-devices"} 0`, `trit_fleet_listener_up{listener="api"} 1`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s:\n%s", want, metrics)
		}
	}
}

func scrape(t *testing.T, f *fixture) string {
	t.Helper()
	srv := apiServer(t, f)
	code, body := call(t, srv, "GET", "/metrics", testToken, nil)
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d %s", code, body)
	}
	return string(body)
}

// startAPI serves f's API as Serve does (newAPIServer over apiListener) and
// returns its address and listeners.
func startAPI(t *testing.T, f *fixture) (string, *listenerSet) {
	t.Helper()
	h, err := Handler(f.svc, testToken)
	if err != nil {
		t.Fatal(err)
	}
	ln := tcpListener(t)
	set := &listenerSet{}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv := newAPIServer(h, log)
	go srv.Serve(apiListener(ln, set, log))
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String(), set
}

// setVar sets *p to v for the test.
func setVar[T any](t *testing.T, p *T, v T) {
	old := *p
	*p = v
	t.Cleanup(func() { *p = old })
}

// closedByServer reports whether the server closes c within a generous
// bound (the timeouts under test are far shorter).
func closedByServer(c net.Conn, r *bufio.Reader) bool {
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	_, err := r.ReadByte()
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)
}

// TestAPIClosesIdleAndSlowConnections: a kept-alive connection whose one
// request was refused (401) is closed after the idle timeout, and one that
// never finishes its request after the read timeout; without them 2,000 of
// 2,000 such connections were still open after 75 s.
func TestAPIClosesIdleAndSlowConnections(t *testing.T) {
	setVar(t, &apiIdleTimeout, 200*time.Millisecond)
	setVar(t, &apiReadHeaderTimeout, 200*time.Millisecond)
	addr, _ := startAPI(t, newFixture(t))

	idle, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	if _, err := io.WriteString(idle, "GET /v1/devices HTTP/1.1\r\nHost: fleet\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(idle)
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || resp.Close {
		t.Fatalf("%d (close %v), want a kept-alive 401", resp.StatusCode, resp.Close)
	}
	if !closedByServer(idle, r) {
		t.Error("the idle kept-alive connection was not closed")
	}

	slow, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	io.WriteString(slow, "GET /v1/devices HTTP/1.1\r\nHost: fle") // and nothing more
	if !closedByServer(slow, bufio.NewReader(slow)) {
		t.Error("the connection that never finished its request was not closed")
	}
}

// TestAPIBoundsConnectionsPerAddress: an address that holds the most
// connections allowed has the next closed at once (counted); once one of
// its connections closes it may open another.
func TestAPIBoundsConnectionsPerAddress(t *testing.T) {
	setVar(t, &apiMaxPerAddress, 3)
	addr, set := startAPI(t, newFixture(t))
	var held []net.Conn
	for range 3 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		held = append(held, c)
	}
	extra, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer extra.Close()
	if !closedByServer(extra, bufio.NewReader(extra)) {
		t.Fatal("a fourth connection from the address was not closed")
	}
	if n := set.list()[0].refused.Load(); n != 1 {
		t.Errorf("%d refusals counted, want 1", n)
	}
	held[0].Close()
	waitFor(t, "a connection accepted again", func() bool {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return false
		}
		defer c.Close()
		io.WriteString(c, "GET /v1/devices HTTP/1.1\r\nHost: fleet\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		return err == nil && resp.StatusCode == http.StatusUnauthorized
	})
}

// TestAPILongRoutesOutliveTimeouts: a samples request that waits longer
// than the server's read and write timeouts still gets its answer (504:
// the device did not answer), not a cancelled request or a cut connection.
func TestAPILongRoutesOutliveTimeouts(t *testing.T) {
	setVar(t, &apiReadTimeout, 300*time.Millisecond)
	setVar(t, &apiWriteTimeout, 300*time.Millisecond)
	f := newFixture(t)
	f.online(t, "gw-1", nil)
	addr, _ := startAPI(t, f)
	req, _ := http.NewRequest("GET", "http://"+addr+"/v1/devices/gw-1/samples?wait=1500ms", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("samples request: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusGatewayTimeout || !strings.Contains(string(body), "did not answer within 1.5s") {
		t.Fatalf("%d %s, want 504: the device did not answer within 1.5s", resp.StatusCode, body)
	}
}
