//go:build unix

package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trit-iot/trit/wire"
)

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
	cmd := selfCommand("-test.run=^"+t.Name()+"$", "-test.v", "-test.count=1")
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

// limitFileSize makes every file this process writes unable to grow past n
// bytes (RLIMIT_FSIZE: writes and truncations beyond fail with EFBIG, which
// bbolt sees as a disk that is full), until the returned function or the
// test's cleanup restores the limit. It needs no privilege.
func limitFileSize(t testing.TB, n int64) (restore func()) {
	t.Helper()
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: uint64(n), Max: old.Max}); err != nil {
		t.Fatal(err)
	}
	done := false
	restore = func() {
		if !done {
			done = true
			if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Cleanup(restore)
	return restore
}

// fullDisk opens a new database (closed at the test's end) whose file
// cannot grow past its size at Open (limitFileSize, lifted by restore):
// a disk that fillDisk fills.
func fullDisk(t *testing.T) (db *DB, size int64, restore func()) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "agent.db")
	db, err := Open(path, &Options{OutboxMaxBytes: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return db, fi.Size(), limitFileSize(t, fi.Size())
}

// fillDisk enqueues ordinary messages until the file cannot grow, and
// returns how many it enqueued.
func fillDisk(t *testing.T, db *DB) int {
	t.Helper()
	for i := range 100000 {
		err := db.Enqueue(OutboxMsg{Topic: "t/telemetry", Payload: []byte(strings.Repeat("x", 3000)), QoS: 1})
		if err != nil {
			if errors.Is(err, ErrInvalid) || errors.Is(err, ErrCorrupt) {
				t.Fatalf("enqueue %d: %v", i, err)
			}
			return i
		}
	}
	t.Fatal("the file never stopped growing")
	return 0
}

// On a full disk, telemetry (ordinary messages) cannot be queued, but a job
// event (a priority message) still is, from the reserve; telemetry never
// gets the reserve; once space is back the reserve is re-armed.
func TestReserveKeepsRoomForJobEvents(t *testing.T) {
	if !inChild(t) {
		return
	}
	db, size, restore := fullDisk(t)
	n := fillDisk(t, db)
	if err := db.Enqueue(OutboxMsg{Topic: "t/telemetry", Payload: []byte("more"), QoS: 1}); err == nil {
		t.Fatal("telemetry queued on a full disk")
	}
	t.Logf("disk full after %d messages (file %d bytes)", n, size)

	for i := range 5 {
		ev := OutboxMsg{Topic: "t/events", Payload: []byte(fmt.Sprintf(`{"id":"r/%d/FAILED"}`, i)), QoS: 1, Priority: true}
		if err := db.Enqueue(ev); err != nil {
			t.Fatalf("job event %d on a full disk: %v", i, err)
		}
		if err := db.PutJob(Job{RolloutID: "r", Seq: uint64(i + 1), State: wire.JobFailed, Reason: "store: no space"}); err != nil {
			t.Fatalf("job record %d on a full disk: %v", i, err)
		}
	}
	if _, err := db.NextSession(); err != nil {
		t.Fatalf("session counter on a full disk: %v", err)
	}
	// Telemetry and bundles never write into the reserve: either it could
	// be put back first, or they fail (ErrNoSpace when it could not).
	for i := range 3 {
		err := db.Enqueue(OutboxMsg{Topic: "t/telemetry", Payload: []byte(strings.Repeat("t", 3000)), QoS: 1})
		if err == nil && db.ReserveInUse() {
			t.Fatalf("telemetry %d was written into the reserve", i)
		}
		_, err = db.PutBundle([]byte(strings.Repeat(fmt.Sprint(i), 20000)))
		if err == nil && db.ReserveInUse() {
			t.Fatalf("bundle %d was written into the reserve", i)
		}
		if err != nil && db.ReserveInUse() && !errors.Is(err, ErrNoSpace) {
			t.Fatalf("bundle %d: %v, want ErrNoSpace while the reserve is in use", i, err)
		}
		ev := OutboxMsg{Topic: "t/events", Payload: []byte(fmt.Sprintf(`{"id":"r2/%d/FAILED"}`, i)), QoS: 1, Priority: true}
		if err := db.Enqueue(ev); err != nil {
			t.Fatalf("job event after telemetry tried on a full disk: %v", err)
		}
	}

	// Space comes back (the outbox drains): ordinary writes work again and
	// re-arm the reserve first.
	restore()
	if err := db.Enqueue(OutboxMsg{Topic: "t/telemetry", Payload: []byte("back"), QoS: 1}); err != nil {
		t.Fatal(err)
	}
	if db.ReserveInUse() {
		t.Fatal("the reserve was not re-armed")
	}
	entries, err := db.Peek(n + 10)
	if err != nil {
		t.Fatal(err)
	}
	events := 0
	for _, e := range entries {
		if e.Priority {
			events++
		}
	}
	if events != 8 {
		t.Fatalf("%d job events queued, want 8", events)
	}
	if err := db.Check(); err != nil {
		t.Fatal(err)
	}
}

// An ordinary write that comes while an essential write has released the
// reserve and not yet retried waits for the retry: else it would put the
// ballast back on the freed pages (or fill them) and the job event would
// fail on a full disk after all (TestDiskFull, once, on a starved CPU).
func TestReserveKeptForTheRetry(t *testing.T) {
	if !inChild(t) {
		return
	}
	db, _, _ := fullDisk(t)
	fillDisk(t, db)
	telemetry := make(chan error, 1)
	reserveReleased = func() {
		reserveReleased = nil
		go func() {
			telemetry <- db.Enqueue(OutboxMsg{Topic: "t/telemetry", Payload: []byte(strings.Repeat("t", 3000)), QoS: 1})
		}()
		// Time for the telemetry to run now if it could; it must not.
		select {
		case err := <-telemetry:
			t.Errorf("telemetry written (%v) between the reserve's release and the job event's retry", err)
		case <-time.After(200 * time.Millisecond):
		}
	}
	defer func() { reserveReleased = nil }()
	ev := OutboxMsg{Topic: "t/events", Payload: []byte(`{"id":"r/1/FAILED"}`), QoS: 1, Priority: true}
	if err := db.Enqueue(ev); err != nil {
		t.Fatalf("job event on a full disk: %v", err)
	}
	if reserveReleased != nil {
		t.Fatal("the job event did not use the reserve: the disk was not full")
	}
	if err := <-telemetry; err == nil && db.ReserveInUse() {
		t.Fatal("telemetry was written into the reserve")
	}
}

// The outbox bound drops ordinary messages before priority ones: telemetry
// piling up never pushes a job event out.
func TestOutboxBoundKeepsPriorityMessages(t *testing.T) {
	db := openTest(t, &Options{OutboxMaxBytes: 4096})
	if err := db.Enqueue(OutboxMsg{Topic: "t/events", Payload: []byte("first event"), QoS: 1, Priority: true}); err != nil {
		t.Fatal(err)
	}
	for range 100 {
		if err := db.Enqueue(OutboxMsg{Topic: "t/telemetry", Payload: []byte(strings.Repeat("x", 500)), QoS: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Enqueue(OutboxMsg{Topic: "t/events", Payload: []byte("second event"), QoS: 1, Priority: true}); err != nil {
		t.Fatal(err)
	}
	entries, err := db.Peek(1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) < 2 || string(entries[0].Payload) != "first event" || !entries[0].Priority {
		t.Fatalf("the oldest event was dropped for telemetry: %d entries, first %q", len(entries), entries[0].Payload)
	}
	if last := entries[len(entries)-1]; string(last.Payload) != "second event" {
		t.Fatalf("newest entry %q", last.Payload)
	}
	st, _ := db.OutboxStats()
	if st.Bytes > st.MaxBytes || st.Dropped == 0 {
		t.Fatalf("stats %+v", st)
	}
	// With only events left, events give way oldest first.
	for i := range 20 {
		if err := db.Enqueue(OutboxMsg{Topic: "t/events", Payload: []byte(fmt.Sprintf("event %03d %s", i, strings.Repeat("e", 300))), QoS: 1, Priority: true}); err != nil {
			t.Fatal(err)
		}
	}
	entries, _ = db.Peek(1000)
	for _, e := range entries {
		if !e.Priority {
			t.Fatalf("telemetry %q kept while events were dropped", e.Payload)
		}
	}
	if !strings.HasPrefix(string(entries[len(entries)-1].Payload), "event 019") {
		t.Fatalf("newest event dropped: %q", entries[len(entries)-1].Payload)
	}
	if err := db.Check(); err != nil {
		t.Fatal(err)
	}
}
