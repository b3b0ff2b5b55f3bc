package tritctl

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTrainForce: train replaces an unsigned bundle (retraining into the
// same file, as scripts do), but nothing else without --force — not a
// signed release, not the data it reads — and says so before it trains.
func TestTrainForce(t *testing.T) {
	dir := t.TempDir()
	model, _ := trainBundle(t, dir) // circles.trit, unsigned
	data := filepath.Join(dir, "train.csv")
	train := func(out string, extra ...string) (string, int) {
		args := append([]string{"train", data, "-o", out, "--p", "64", "--sigma", "0.5", "--c", "1", "--json"}, extra...)
		// With --json an error comes as JSON on stdout.
		stdout, stderr, code := runCtl(t, args...)
		return stdout + stderr, code
	}
	if stderr, code := train(model); code != 0 {
		t.Fatalf("retraining into an unsigned bundle: %d %q", code, stderr)
	}
	key := filepath.Join(dir, "release")
	if _, stderr, code := runCtl(t, "keys", "gen", "-o", key); code != 0 {
		t.Fatal(stderr)
	}
	signed := filepath.Join(dir, "circles-2.trit")
	if _, stderr, code := runCtl(t, "bundle", "sign", "--key", key+".key", model, "-o", signed); code != 0 {
		t.Fatal(stderr)
	}
	before, _ := os.ReadFile(signed)
	for _, out := range []string{signed, data} {
		stderr, code := train(out)
		if code != 1 || !strings.Contains(stderr, "use --force to replace it") {
			t.Errorf("train -o %s: %d %q, want a refusal naming --force", filepath.Base(out), code, stderr)
		}
	}
	if after, _ := os.ReadFile(signed); string(after) != string(before) {
		t.Fatal("train replaced a signed bundle without --force")
	}
	if stderr, code := train(signed, "--force"); code != 0 {
		t.Fatalf("--force: %d %q", code, stderr)
	}
}
