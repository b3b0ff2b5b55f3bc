// Package proc runs the real servers that tests start for themselves
// (mosquitto, nats-server, PostgreSQL, trit-fleet): a process that is
// waited for exactly once, stopped with a signal and a grace period, and
// killed when the grace runs out. It also finds free loopback ports and
// cuts a log to its end for a failure message.
package proc

import (
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Proc is a started process. Its zero value is not usable: use Start.
type Proc struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error // Wait's result, once done is closed
}

// Start starts cmd and waits for it in the background; closers (the log
// files cmd writes to) are closed when it exits.
func Start(cmd *exec.Cmd, closers ...io.Closer) (*Proc, error) {
	if err := cmd.Start(); err != nil {
		for _, c := range closers {
			c.Close()
		}
		return nil, err
	}
	p := &Proc{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		for _, c := range closers {
			c.Close()
		}
		close(p.done)
	}()
	return p, nil
}

// Done is closed when the process has exited.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Err is the process's exit error (nil for a zero exit status); it is
// valid only after Done is closed.
func (p *Proc) Err() error { return p.err }

// Pid is the process ID.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Signal sends sig to the process (a no-op once it has exited).
func (p *Proc) Signal(sig os.Signal) { p.cmd.Process.Signal(sig) }

// Stop sends sig (the server's own clean shutdown: SIGTERM, or SIGINT for
// PostgreSQL's fast shutdown), kills the process if it has not exited
// within grace, and returns once it has exited.
func (p *Proc) Stop(sig os.Signal, grace time.Duration) {
	p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
	case <-time.After(grace):
		p.Kill()
	}
}

// Kill stops the process at once (SIGKILL), as a crash would, and returns
// once it has exited.
func (p *Proc) Kill() {
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// FreePorts returns n distinct loopback TCP ports that were free a moment
// ago: all are held open until the last is found, so none repeats.
func FreePorts(t testing.TB, n int) []int {
	t.Helper()
	var out []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	return out
}

// Tail returns the last n lines of s, for a failure message.
func Tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
