package proc

import (
	"os/exec"
	"syscall"
	"testing"
	"time"
)

func TestStopEndsAProcessThatIgnoresTheSignal(t *testing.T) {
	// sh ignores SIGTERM when told to trap it: Stop must kill it after grace.
	p, err := Start(exec.Command("sh", "-c", "trap '' TERM; sleep 30"))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // let the trap be set
	p.Stop(syscall.SIGTERM, 200*time.Millisecond)
	select {
	case <-p.Done():
	default:
		t.Fatal("Stop returned before the process exited")
	}
	if p.Err() == nil {
		t.Fatal("a killed process reported a clean exit")
	}
}

func TestStopCleanExit(t *testing.T) {
	p, err := Start(exec.Command("sleep", "30"))
	if err != nil {
		t.Fatal(err)
	}
	p.Stop(syscall.SIGTERM, 10*time.Second)
	if ee, ok := p.Err().(*exec.ExitError); !ok || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGTERM {
		t.Fatalf("exit = %v, want ended by SIGTERM", p.Err())
	}
}

func TestFreePortsDistinct(t *testing.T) {
	seen := map[int]bool{}
	for _, p := range FreePorts(t, 20) {
		if seen[p] || p == 0 {
			t.Fatalf("port %d repeated or zero", p)
		}
		seen[p] = true
	}
}

func TestTail(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"a\nb\nc\n", 2, "b\nc"},
		{"a\nb\n", 5, "a\nb"},
		{"", 3, ""},
	} {
		if got := Tail(c.in, c.n); got != c.want {
			t.Errorf("Tail(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
}
