//go:build linux

package agent

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trit-iot/trit/inference"
	"github.com/trit-iot/trit/store"
	"github.com/trit-iot/trit/wire"
)

// inSmallFS runs the calling test in a child process that has a tmpfs of
// size bytes mounted, in a mount namespace of its own (so that nothing is
// left mounted whatever happens), and reports whether the caller is that
// child; dir is the mount point. As root the child only needs a mount
// namespace; otherwise it gets a user namespace too, where unprivileged
// user namespaces are allowed. Where neither works the test is skipped —
// TestDiskFull covers the same path under RLIMIT_FSIZE — except under CI
// (CI set, as scripts/test-dist.sh), which runs as root: there it fails.
func inSmallFS(t *testing.T, size int) (dir string, child bool) {
	t.Helper()
	const env, noMount = "TRIT_TEST_SMALLFS", "small filesystem unavailable: "
	if os.Getenv(env) == t.Name() {
		dir = t.TempDir()
		if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d", size)); err != nil {
			t.Skipf("%smount tmpfs: %v", noMount, err)
		}
		t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
		return dir, true
	}
	unavailable := func(why string) {
		t.Helper()
		if os.Getenv("CI") != "" {
			t.Fatalf("%s (CI runs as root: a tmpfs must be possible; the full-disk install is not tested)", why)
		}
		t.Skipf("%s; TestDiskFull covers the full-disk install under RLIMIT_FSIZE", why)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), env+"="+t.Name())
	if os.Geteuid() == 0 {
		// Go makes / private in the new namespace: the mount does not propagate.
		cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	} else {
		cmd.SysProcAttr = &syscall.SysProcAttr{
			Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS,
			UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
			GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
		}
	}
	out, err := cmd.CombinedOutput()
	t.Logf("child process:\n%s", out)
	var ee *exec.ExitError
	switch {
	case err != nil && !errors.As(err, &ee):
		unavailable(fmt.Sprintf("%snew mount namespace: %v", noMount, err)) // e.g. EPERM, user namespaces disabled
	case bytes.Contains(out, []byte(noMount)):
		unavailable(noMount + "the child could not mount a tmpfs")
	case err != nil:
		t.Fatalf("%s in a child process: %v", t.Name(), err)
	case !bytes.Contains(out, []byte("--- PASS: "+t.Name())):
		t.Fatalf("%s did not run in the child process", t.Name())
	}
	return "", false
}

// fillFS writes a new file in dir until the filesystem has no byte left,
// and returns its path: "filler", then "filler-2", ...
func fillFS(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	for i := 2; ; i++ {
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			break
		}
		path = filepath.Join(dir, fmt.Sprintf("filler-%d", i))
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, n := range []int{64 << 10, 4 << 10, 512, 1} {
		buf := make([]byte, n)
		for {
			if _, err := f.Write(buf); err != nil {
				if !errors.Is(err, syscall.ENOSPC) {
					t.Fatalf("filling %s: %v", dir, err)
				}
				break
			}
		}
	}
	if free := freeBytes(t, dir); free != 0 {
		t.Fatalf("%s still has %d bytes free", dir, free)
	}
	return path
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

func freeBytes(t *testing.T, dir string) uint64 {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	return st.Bavail * uint64(st.Bsize)
}

// fillDB fills the free pages of the database at path (the filesystem
// being full): values of decreasing sizes, over and over until none fits.
// It returns how many it stored.
func fillDB(t *testing.T, path string) int {
	t.Helper()
	db, err := store.Open(path, nil)
	if err != nil {
		t.Fatalf("open the database on a full filesystem: %v", err)
	}
	defer db.Close()
	n := 0
	for more := true; more; {
		more = false
		for _, size := range []int{8000, 2000, 500, 100} {
			for ; ; n++ {
				err := db.PutStat(fmt.Sprintf("filler-%d", n), bytes.Repeat([]byte{1}, size))
				if err != nil {
					if !errors.Is(err, syscall.ENOSPC) && !errors.Is(err, store.ErrNoSpace) {
						t.Fatalf("filling the database: %v, want no space", err)
					}
					break
				}
				more = true
				if n > 100000 {
					t.Fatal("the database never filled up")
				}
			}
		}
	}
	return n
}

// TestDiskFullRealFS: the agent's state is on a real 1 MiB filesystem
// (tmpfs), whose free space and the database's free pages have been
// filled. A bundle arrives that is larger than the room left: the install
// fills the filesystem and fails. The gateway restarts with not a byte
// left, and another bundle arrives: that install fails too. Each ends
// FAILED store at the fleet, the device's state still names the old model,
// and once space is back the old model is the one that runs and the
// database holds nothing of the new bundles. Unlike TestDiskFull
// (RLIMIT_FSIZE), the writes fail as on a gateway's disk: ENOSPC from the
// filesystem, for every file.
func TestDiskFullRealFS(t *testing.T) {
	fs, child := inSmallFS(t, 1<<20)
	if !child {
		return
	}
	k := newKeys(t)
	b := newFakeBroker()
	cfg := testConfig(t, k, "tcp://fake:1883")
	cfg.Install.MaxBundleBytes = MaxBundleBytesLimit // v3 below is larger than the reserve
	cfg.StateDir = filepath.Join(fs, "state")
	d := newDeployer(t, b, k)
	deploy, terminal := d.deploy, d.terminal

	stop := startAgent(t, cfg, &Options{Dialer: b})
	v1 := makeBundle(t, bundleOpts{release: 1, signer: k.release})
	if ev := terminal(deploy(v1)); ev.State != wire.JobSucceeded {
		t.Fatalf("install v1: %+v", ev)
	}
	stop()

	logs := &lockedBuffer{}
	// start starts the agent and waits until it is connected.
	start := func() (stop func()) {
		t.Helper()
		states := len(b.published(wire.KindState))
		stop = startAgent(t, cfg, &Options{Dialer: b, Logger: slog.New(slog.NewTextHandler(logs, nil))})
		for deadline := time.Now().Add(10 * time.Second); len(b.published(wire.KindState)) == states; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the agent did not connect on a full filesystem:\n%s", logs.b.String())
			}
		}
		return stop
	}
	// failed deploys v and waits for FAILED store at the fleet, then for
	// the device's state naming v1.
	failed := func(what string, v []byte) {
		t.Helper()
		ev := terminal(deploy(v))
		t.Logf("%s: %s %s %q", what, ev.State, ev.Code, ev.Reason)
		if ev.State != wire.JobFailed || ev.Code != wire.CodeStore || !strings.Contains(ev.Reason, "no space left") {
			t.Fatalf("%s: %s %s %q, want FAILED store, no space left\n%s", what, ev.State, ev.Code, ev.Reason, logs.b.String())
		}
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			ms := b.published(wire.KindState)
			st, err := wire.DecodeState(ms[len(ms)-1].Payload)
			if err == nil && st.Model != nil && st.Model.Bundle == hashOf(v1) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: state after the failed install: %+v %v, want model %.12s", what, st, err, hashOf(v1))
			}
		}
	}

	// Less room on the filesystem than the next bundle needs, and none
	// inside the database: the install must make the file grow.
	const room = 20 << 10
	filler := fillFS(t, fs)
	n := fillDB(t, cfg.DBPath())
	if err := os.Truncate(filler, fileSize(t, filler)-room); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d bytes free on the filesystem; %d values filled the database's free pages", freeBytes(t, fs), n)
	v2 := makeBundle(t, bundleOpts{release: 2, signer: k.release, seed: 7, p: 1 << 17})
	if len(v2) < room+4<<10 {
		t.Fatalf("bundle of %d bytes; the test needs one that cannot fit in %d", len(v2), room)
	}
	stop = start()
	failed("install larger than the room left", v2)
	stop()

	// The gateway restarts with not a byte left.
	filler2 := fillFS(t, fs)
	n = fillDB(t, cfg.DBPath())
	t.Logf("%d bytes free on the filesystem; %d more values filled the database's free pages", freeBytes(t, fs), n)
	stop = start()
	// Larger than the reserve, as in TestDiskFull: no fragment the job
	// events' writes leave can hold it.
	v3 := makeBundle(t, bundleOpts{release: 3, signer: k.release, seed: 8, p: inference.MaxP, trees: 4000})
	failed("install with no byte left", v3)
	if n := logs.count("job event not queued"); n != 0 {
		t.Fatalf("%d job events could not be queued:\n%s", n, logs.b.String())
	}

	// Space again: the old model runs and reports.
	for _, f := range []string{filler, filler2} {
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
	before := len(b.published(wire.KindTelemetry))
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		predicted := false
		for _, m := range b.published(wire.KindTelemetry)[before:] {
			tm, err := wire.DecodeTelemetry(m.Payload)
			if err != nil || tm.Model == nil || tm.Model.Bundle != hashOf(v1) {
				t.Fatalf("telemetry after the failed installs: %+v %v", tm, err)
			}
			predicted = predicted || tm.Predictions > 0
		}
		if predicted {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no telemetry with predictions after space came back:\n%s", logs.b.String())
		}
	}
	stop()
	db, err := store.Open(cfg.DBPath(), &store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	active, _, err := db.Slots()
	if err != nil || active == nil || active.Hash != hashOf(v1) {
		t.Fatalf("active slot %+v %v, want %.12s", active, err, hashOf(v1))
	}
	for _, v := range [][]byte{v2, v3} {
		if _, err := db.Bundle(hashOf(v)); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("a failed bundle in the database: %v", err)
		}
	}
}
