//go:build unix

package agent

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/trit-iot/trit/inference"
	"github.com/trit-iot/trit/store"
	"github.com/trit-iot/trit/wire"
)

// lockedBuffer is a log sink safe for concurrent writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) count(sub string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.b.String(), sub)
}

// inChild runs the calling test in a child process when called from the
// test binary's own process, and reports whether the caller is that child
// (and should run the test's body). RLIMIT_FSIZE (see limitFileSize)
// holds for a whole process: set in the test binary it would also make
// the binary's own log and cache files, and any test running alongside,
// fail to grow. The child is this test binary running just this test,
// with no log file.
func inChild(t *testing.T) bool {
	t.Helper()
	const env = "TRIT_TEST_CHILD"
	if os.Getenv(env) == t.Name() {
		return true
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), env+"="+t.Name())
	out, err := cmd.CombinedOutput()
	t.Logf("child process:\n%s", out)
	if err != nil {
		t.Fatalf("%s in a child process: %v", t.Name(), err)
	}
	if !strings.Contains(string(out), "--- PASS: "+t.Name()) {
		t.Fatalf("%s did not run in the child process", t.Name())
	}
	return false
}

// limitFileSize makes files this process writes unable to grow past n
// bytes (RLIMIT_FSIZE; writes and truncations beyond fail as on a full
// disk) until restore or the test's end. It needs no privilege.
func limitFileSize(t *testing.T, n int64) (restore func()) {
	t.Helper()
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: uint64(n), Max: old.Max}); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	restore = func() {
		once.Do(func() {
			if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
				t.Error(err)
			}
		})
	}
	t.Cleanup(restore)
	return restore
}

// TestDiskFull: on a gateway whose disk is full the agent still starts and
// connects; while the broker is away its telemetry fills what room is left;
// an install then fails cleanly (FAILED store, the old model keeps running)
// and its job events are still queued — from the store's reserve — so the
// fleet receives the FAILED event instead of seeing the job hang until it
// times out; the telemetry that cannot be queued is logged once, not every
// interval; and reports flow again once there is space. The disk is
// simulated with RLIMIT_FSIZE, which needs no privilege;
// TestDiskFullRealFS fills a real filesystem.
func TestDiskFull(t *testing.T) {
	if !inChild(t) {
		return
	}
	k := newKeys(t)
	b := newFakeBroker()
	cfg := testConfig(t, k, "tcp://fake:1883")
	cfg.Install.MaxBundleBytes = MaxBundleBytesLimit // v2 below is larger than the reserve
	cfg.Telemetry.Interval = Duration{Duration: 100 * time.Millisecond}
	d := newDeployer(t, b, k)
	deploy, terminal := d.deploy, d.terminal

	stop := startAgent(t, cfg, &Options{Dialer: b})
	v1 := makeBundle(t, bundleOpts{release: 1, signer: k.release})
	if ev := terminal(deploy(v1)); ev.State != wire.JobSucceeded {
		t.Fatalf("install v1: %+v", ev)
	}
	stop()

	// Fill the disk: the database file cannot grow, and what room it had
	// inside is taken, down to small values. (bbolt still commits small
	// writes on the pages each commit frees; what fails is what needs room,
	// such as a new bundle.)
	fi, err := os.Stat(cfg.DBPath())
	if err != nil {
		t.Fatal(err)
	}
	restore := limitFileSize(t, fi.Size())
	db, err := store.Open(cfg.DBPath(), nil)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, size := range []int{8000, 2000, 500, 100} {
		for ; ; n++ {
			if err := db.PutStat(fmt.Sprintf("filler-%d", n), bytes.Repeat([]byte{1}, size)); err != nil {
				break
			}
			if n > 100000 {
				t.Fatal("the database never filled up")
			}
		}
	}
	db.Close()

	logs := &lockedBuffer{}
	states := len(b.published(wire.KindState))
	startAgent(t, cfg, &Options{Dialer: b, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	for deadline := time.Now().Add(10 * time.Second); len(b.published(wire.KindState)) == states; {
		if time.Now().After(deadline) {
			t.Fatal("the agent did not connect on a full disk")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The broker stops taking the agent's messages: telemetry piles up in
	// the outbox until the database cannot hold more.
	b.mu.Lock()
	b.down = true
	b.mu.Unlock()
	for deadline := time.Now().Add(20 * time.Second); logs.count("telemetry not queued") == 0; {
		if time.Now().After(deadline) {
			t.Fatalf("telemetry never failed to be queued:\n%s", logs.b.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Larger than the reserve: the pages the job events' writes free and
	// take (store/reserve.go) leave fragments that a bundle of a few
	// pages could fit (it did, 1 run in 10), but never the reserve's size.
	v2 := makeBundle(t, bundleOpts{release: 2, signer: k.release, seed: 7, p: inference.MaxP, trees: 4000})
	if len(v2) <= store.DefaultReserve {
		t.Fatalf("bundle of %d bytes; the test needs one larger than the %d-byte reserve", len(v2), store.DefaultReserve)
	}
	c2 := deploy(v2)
	for deadline := time.Now().Add(20 * time.Second); logs.count("id=r/2/FAILED") == 0; {
		if time.Now().After(deadline) {
			t.Fatalf("the install did not end:\n%s", logs.b.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Many telemetry intervals on a full disk: no more than one error
	// line. (The install's job events free and take pages as they are
	// written; a report may fit in what they leave, once, and the next
	// failure is then a new episode with its own line.)
	logged := logs.count("telemetry not queued")
	time.Sleep(20 * cfg.Telemetry.Interval.Duration)
	if n := logs.count("telemetry not queued") - logged; n > 1 {
		t.Fatalf("%d telemetry errors logged in 20 intervals on a full disk, want at most 1:\n%s", n, logs.b.String())
	}
	if n := logs.count("job event not queued"); n != 0 {
		t.Fatalf("%d job events could not be queued:\n%s", n, logs.b.String())
	}

	// The broker is back: the FAILED event reaches the fleet.
	b.mu.Lock()
	b.down = false
	b.mu.Unlock()
	ev := terminal(c2)
	if ev.State != wire.JobFailed || ev.Code != wire.CodeStore {
		t.Fatalf("install on a full disk: %s %s %s, want FAILED store", ev.State, ev.Code, ev.Reason)
	}

	// Space again: telemetry is queued and sent, the log says so, and the
	// old model is the one running.
	restore()
	// Every report names the old model; one with predictions must come (a
	// loaded machine can leave an interval without a prediction).
	before := len(b.published(wire.KindTelemetry))
	for deadline := time.Now().Add(10 * time.Second); ; {
		ms := b.published(wire.KindTelemetry)
		predicted := false
		for _, m := range ms[before:] {
			tm, err := wire.DecodeTelemetry(m.Payload)
			if err != nil || tm.Model == nil || tm.Model.Bundle != hashOf(v1) {
				t.Fatalf("telemetry after the failed install: %+v %v", tm, err)
			}
			predicted = predicted || tm.Predictions > 0
		}
		if predicted {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no telemetry with predictions after space came back (%d reports)", len(ms)-before)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Each episode of failures is one "not queued" line and ends with one
	// "queued again" line: the one after space came back, and one for
	// each report that fitted between the install's job events (above).
	if again, failed := logs.count("telemetry queued again"), logs.count("telemetry not queued"); again == 0 || again != failed {
		t.Fatalf("recovery not logged: %d episodes of failures, %d recoveries logged:\n%s", failed, again, logs.b.String())
	}
}

// deployer plays the fleet for an agent on a fake broker: it publishes a
// bundle and a signed deployment command for it, and waits for the job's
// terminal event.
type deployer struct {
	t   *testing.T
	b   *fakeBroker
	k   *keys
	tp  wire.Topics
	seq uint64
}

func newDeployer(t *testing.T, b *fakeBroker, k *keys) *deployer {
	tp, _ := wire.NewTopics(testFleet)
	return &deployer{t: t, b: b, k: k, tp: tp}
}

// deploy publishes data and a command to install it.
func (d *deployer) deploy(data []byte) *wire.Command {
	d.t.Helper()
	h := hashOf(data)
	d.b.publish(Message{Topic: d.tp.Bundle(h), Payload: data, Retained: true})
	d.seq++
	c := &wire.Command{Fleet: testFleet, Device: testDevice, Bundle: h, Rollout: "r", Seq: d.seq,
		IssuedAt: time.Now().Unix() - 1, ExpiresAt: time.Now().Unix() + 600}
	if err := c.Sign(d.k.command); err != nil {
		d.t.Fatal(err)
	}
	p, _ := c.Marshal()
	d.b.publish(Message{Topic: d.tp.Desired(testDevice), Payload: p, Retained: true})
	return c
}

// terminal waits up to 20 s for c's terminal event to reach the fleet.
func (d *deployer) terminal(c *wire.Command) *wire.Event {
	d.t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		for _, m := range d.b.published(wire.KindEvents) {
			if ev, err := wire.DecodeEvent(m.Payload); err == nil && ev.Seq == c.Seq && ev.State.Terminal() {
				return ev
			}
		}
	}
	d.t.Fatalf("no terminal event for seq %d reached the fleet", c.Seq)
	return nil
}
