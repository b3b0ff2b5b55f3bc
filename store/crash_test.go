package store

import (
	"bufio"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// crashChildEnv, when set, turns TestCrashConsistency into the child: it
// holds the database path and the child loops over installs until killed.
const (
	crashChildEnv = "STORE_CRASH_CHILD"
	crashSeedEnv  = "STORE_CRASH_SEED"
)

// TestCrashConsistency runs this test binary as a child that loops
// Activate/Commit/Rollback (plus outbox and bundle churn), SIGKILLs it at
// random moments, and after each kill reopens the file and checks the slot
// invariant: an active model whose bundle bytes are stored and hash-correct,
// and a previous model that is absent or equally intact.
//
// SIGKILL tests process crashes; the page cache survives, so this does not
// prove behaviour on power loss (that rests on bbolt's fsync discipline).
func TestCrashConsistency(t *testing.T) {
	if path := os.Getenv(crashChildEnv); path != "" {
		seed, _ := strconv.ParseUint(os.Getenv(crashSeedEnv), 10, 64)
		crashChild(path, seed) // never returns
	}

	kills := 20
	if testing.Short() {
		kills = 5
	}
	path := filepath.Join(t.TempDir(), "crash.db")
	db, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	h, err := db.PutBundle([]byte("factory model"))
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Activate(h, SlotMeta{ModelID: "m"}); err != nil {
		t.Fatal(err)
	}
	if err := db.Commit(); err != nil {
		t.Fatal(err)
	}
	db.Close()

	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	var lastSession uint64
	lastState := stateOf(&Slot{Hash: h, SlotMeta: SlotMeta{State: InstallCommitted}}, nil)
	total := 0
	for i := range kills {
		seed := rng.Uint64()
		cmd := selfCommand("-test.run=^TestCrashConsistency$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashChildEnv+"="+path, crashSeedEnv+"="+strconv.FormatUint(seed, 10))
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr limitedBuffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Wait until the child has the file open, then let it work for a
		// random while before killing it. Its later lines log slot changes.
		ready := make(chan error, 1)
		logged := make(chan []string, 1)
		go func() {
			sc := bufio.NewScanner(stdout)
			if !sc.Scan() || sc.Text() != "ready" {
				ready <- fmt.Errorf("child said %q (%v)", sc.Text(), sc.Err())
				logged <- nil
				return
			}
			ready <- nil
			var lines []string
			for sc.Scan() {
				lines = append(lines, sc.Text())
			}
			logged <- lines
		}()
		select {
		case err := <-ready:
			if err != nil {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("kill %d: child did not start: %v\n%s", i, err, stderr.String())
			}
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("kill %d: child not ready after 20s\n%s", i, stderr.String())
		}
		time.Sleep(time.Duration(5+rng.IntN(250)) * time.Millisecond)
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		err = cmd.Wait()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("kill %d: child ended with %v, not by SIGKILL\n%s", i, err, stderr.String())
		}

		lines := <-logged
		state, session := checkAfterCrash(t, i, path, lastSession)
		if err := checkOldOrNew(lastState, lines, state); err != nil {
			t.Fatalf("kill %d: %v", i, err)
		}
		lastState, lastSession = state, session
		total += len(lines)
	}
	// Guard against a vacuous pass: the children must have changed slots.
	if total < kills {
		t.Fatalf("children logged only %d slot operations over %d runs", total, kills)
	}
}

// slotState is the slots as "activeHash activeState previousHash".
type slotState string

func stateOf(active, previous *Slot) slotState {
	p := "-"
	if previous != nil {
		p = previous.Hash
	}
	if active == nil {
		return slotState("- - " + p)
	}
	return slotState(active.Hash + " " + string(active.State) + " " + p)
}

// checkOldOrNew checks that the state found after a kill is the last state
// the child logged, or the state its in-flight operation leads to: old or
// new, never neither. The child logs "B op [hash]" before each slot
// operation and "A state" after it.
func checkOldOrNew(start slotState, lines []string, got slotState) error {
	old := start
	var inflight []string
	for _, l := range lines {
		f := strings.Fields(l)
		switch f[0] {
		case "B":
			inflight = f[1:]
		case "A":
			old, inflight = slotState(strings.Join(f[1:], " ")), nil
		}
	}
	if got == old {
		return nil
	}
	if inflight == nil {
		return fmt.Errorf("state %q, but the last logged state was %q and nothing was in flight", got, old)
	}
	o := strings.Fields(string(old)) // active, state, previous
	var next slotState
	switch inflight[0] {
	case "activate":
		h, prev := inflight[1], o[2]
		if o[1] == string(InstallCommitted) {
			prev = o[0]
		}
		if prev == h {
			prev = "-"
		}
		next = slotState(h + " " + string(InstallPending) + " " + prev)
	case "commit":
		next = slotState(o[0] + " " + string(InstallCommitted) + " " + o[2])
	case "rollback":
		next = slotState(o[2] + " " + string(InstallCommitted) + " -")
	}
	if got != next {
		return fmt.Errorf("state %q is neither the old %q nor the new %q (in flight: %v)", got, old, next, inflight)
	}
	return nil
}

// checkAfterCrash reopens the file, checks the invariants and returns the
// slot state and the session counter (bumped by the child every iteration).
func checkAfterCrash(t *testing.T, kill int, path string, lastSession uint64) (slotState, uint64) {
	t.Helper()
	db, err := Open(path, &Options{OutboxMaxBytes: crashOutboxMax})
	if err != nil {
		t.Fatalf("kill %d: reopen: %v", kill, err)
	}
	defer db.Close()
	if err := db.Check(); err != nil {
		t.Fatalf("kill %d: %v", kill, err)
	}
	active, previous, err := db.Slots()
	if err != nil {
		t.Fatalf("kill %d: %v", kill, err)
	}
	if active == nil {
		t.Fatalf("kill %d: no active model", kill)
	}
	if _, err := db.Bundle(active.Hash); err != nil {
		t.Fatalf("kill %d: active bundle: %v", kill, err)
	}
	if previous != nil {
		if _, err := db.Bundle(previous.Hash); err != nil {
			t.Fatalf("kill %d: previous bundle: %v", kill, err)
		}
	}
	s, err := db.Session()
	if err != nil {
		t.Fatalf("kill %d: %v", kill, err)
	}
	if s < lastSession {
		t.Fatalf("kill %d: session counter went back from %d to %d", kill, lastSession, s)
	}
	t.Logf("kill %d: session %d, active %s (%s), previous %s", kill, s, hashOf(active), active.State, hashOf(previous))
	return stateOf(active, previous), s
}

const crashOutboxMax = 64 << 10

// crashChild is the child process: it churns the database until killed.
func crashChild(path string, seed uint64) {
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "crash child:", err)
		os.Exit(3)
	}
	db, err := Open(path, &Options{Timeout: 10 * time.Second, OutboxMaxBytes: crashOutboxMax})
	if err != nil {
		fail(err)
	}
	fmt.Println("ready")
	// slotOp logs an operation before it runs and the slots after it, one
	// unbuffered write each, so the parent sees what was in flight.
	slotOp := func(op string, fn func() error) {
		fmt.Println("B " + op)
		if err := fn(); err != nil {
			fail(err)
		}
		a, p, err := db.Slots()
		if err != nil {
			fail(err)
		}
		fmt.Println("A " + string(stateOf(a, p)))
	}
	rng := rand.New(rand.NewPCG(seed, 1))
	deadline := time.Now().Add(30 * time.Second) // in case the parent dies
	for time.Now().Before(deadline) {
		session, err := db.NextSession()
		if err != nil {
			fail(err)
		}
		// A fresh bundle of random size, so pages are allocated and freed.
		data := make([]byte, 1024+rng.IntN(64<<10))
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		hash, err := db.PutBundle(data)
		if err != nil {
			fail(err)
		}
		meta := SlotMeta{ModelID: "m", Release: session, RolloutID: "r", Seq: session}
		slotOp("activate "+hash, func() error { return db.Activate(hash, meta) })
		if rng.IntN(3) == 0 {
			slotOp("rollback", db.Rollback)
		} else {
			slotOp("commit", db.Commit)
		}
		if err := db.Enqueue(OutboxMsg{Topic: "t/events", Payload: data[:rng.IntN(1000)], QoS: 1}); err != nil {
			fail(err)
		}
		if session%4 == 0 {
			got, err := db.Peek(3)
			if err != nil {
				fail(err)
			}
			for _, e := range got {
				if err := db.Ack(e.Seq); err != nil {
					fail(err)
				}
			}
		}
		// Garbage-collect bundles outside the slots.
		hashes, err := db.BundleHashes()
		if err != nil {
			fail(err)
		}
		for _, h := range hashes {
			if err := db.DeleteBundle(h); err != nil && !errors.Is(err, ErrBundleInUse) {
				fail(err)
			}
		}
	}
	os.Exit(0)
}

// limitedBuffer keeps the first 64 KiB written to it.
type limitedBuffer struct{ b []byte }

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := 64<<10 - len(l.b); room > 0 {
		l.b = append(l.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (l *limitedBuffer) String() string { return string(l.b) }

// TestCheckOldOrNew makes sure the crash checker itself rejects states that
// are neither old nor new.
func TestCheckOldOrNew(t *testing.T) {
	const (
		a, b, c = "aaaa", "bbbb", "cccc"
		com     = string(InstallCommitted)
		pend    = string(InstallPending)
	)
	start := slotState(a + " " + com + " -")
	log := []string{"B activate " + b, "A " + b + " " + pend + " " + a, "B commit", "A " + b + " " + com + " " + a}
	for _, tc := range []struct {
		lines []string
		got   string
		ok    bool
	}{
		{nil, a + " " + com + " -", true},
		{nil, b + " " + pend + " " + a, false},
		{log, b + " " + com + " " + a, true},
		{log, b + " " + pend + " " + a, false}, // older than the last logged state
		{slices.Concat(log, []string{"B activate " + c}), c + " " + pend + " " + b, true},
		{slices.Concat(log, []string{"B activate " + c}), c + " " + pend + " " + a, false},
		{slices.Concat(log, []string{"B rollback"}), a + " " + com + " -", true},
		{slices.Concat(log, []string{"B rollback"}), a + " " + com + " " + a, false}, // half a rollback
		{slices.Concat(log, []string{"B rollback"}), "- - -", false},
		{slices.Concat(log[:2], []string{"B commit"}), b + " " + com + " " + a, true},
		{slices.Concat(log[:2], []string{"B activate " + c}), c + " " + pend + " " + a, true}, // pending b discarded
	} {
		err := checkOldOrNew(start, tc.lines, slotState(tc.got))
		if (err == nil) != tc.ok {
			t.Errorf("lines %v, got %q: err %v, want ok=%v", tc.lines, tc.got, err, tc.ok)
		}
	}
}
