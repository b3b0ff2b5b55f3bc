package tritctl

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --cpuprofile writes a profile pprof reads (gzipped protobuf) whether or
// not the training succeeds, and a file that cannot be created is a clear
// error before any work.
func TestTrainCPUProfile(t *testing.T) {
	if f := flag.Lookup("test.cpuprofile"); f != nil && f.Value.String() != "" {
		t.Skip("go test -cpuprofile profiles this process already; a process has one CPU profile")
	}
	dir := t.TempDir()
	train, model, prof := filepath.Join(dir, "train.csv"), filepath.Join(dir, "m.trit"), filepath.Join(dir, "cpu.pprof")
	writeCSV(t, train, 600, 1)
	if _, stderr, code := runCtl(t, "train", train, "-o", model, "--p", "256", "--sigma", "0.5", "--c", "1", "--cpuprofile", prof); code != 0 {
		t.Fatalf("train --cpuprofile exited %d: %s", code, stderr)
	}
	b, err := os.ReadFile(prof)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte{0x1f, 0x8b}) {
		t.Fatalf("the profile is not gzipped protobuf: % x…", b[:min(len(b), 8)])
	}
	if _, err := os.Stat(model); err != nil {
		t.Fatalf("no model beside the profile: %v", err)
	}

	bad := filepath.Join(dir, "no-such-dir", "cpu.pprof")
	_, stderr, code := runCtl(t, "train", train, "-o", filepath.Join(dir, "m2.trit"), "--cpuprofile", bad)
	if code == 0 || !strings.Contains(stderr, "--cpuprofile") || !strings.Contains(stderr, "no-such-dir") {
		t.Fatalf("an uncreatable profile: exit %d, %q", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "m2.trit")); err == nil {
		t.Fatalf("a model was trained although the profile could not be written")
	}
}
